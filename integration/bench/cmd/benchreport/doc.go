// Command benchreport is a harness tool: the last step of `make bench`,
// which prints the benchmark suites' rows as one table (docs/testing.md,
// "Where things live").
package main
