// Package result is a harness library: the row format and the table that
// every `make bench` program shares (docs/testing.md, "Where things live").
package result
