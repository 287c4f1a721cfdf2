// Package integration is a test suite: its own tests (layout_test.go) guard
// the dependency direction of docs/design.md §2 and keep the
// binaries that run on hosts and at an admin's prompt lean.
//
// Below it live the whole-topology tests: one Linux network namespace per
// switch and per host, veth links between them, and the real daemons
// started inside. Its sub-packages are harness libraries (topo, netns,
// selfexec, vm, clab, bench/result), among them the test helpers the whole
// module shares: netns builds namespaces and veth links for privileged
// tests, and selfexec runs the test binary again as a child process that a
// test can kill; or test suites (fabric, cdc, lossless, demo, bench/e2e,
// bench/scale). docs/testing.md, "Where things live", has the table.
package integration
