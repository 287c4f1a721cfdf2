// Package e2e is a test suite: it holds the end-to-end benchmarks of
// `make bench` (issue #16): real inofd reflectors and switch agents in
// network namespaces (integration/topo), with probe hosts and targets
// driven through raw sockets so every figure is measured from the exact
// moment something happens (a port set down, a registration sent, inofctl
// started, a switch agent killed) to the time a notification frame is read
// at a host.
//
//   - BenchmarkPrivEndToEnd: target link down → inactive at a host on
//     another leaf; target join → active at 10 hosts on 3 leaves.
//   - BenchmarkPrivZoneChange: zone change committed with inofctl →
//     reason-4 frame at the host, also split at the moment the reflector
//     has the commit durable (inofctl's part, the fabric's part).
//   - BenchmarkPrivSwitchLoss: a leaf agent SIGKILLed with BFD 3 × 50 ms →
//     reason 7 at a host on another leaf.
//   - BenchmarkPrivChurn: sustained registration changes per second
//     through the reflector to notifications at hosts, zero lost: the
//     highest rate held for 60 s.
//
// The benchmarks are compiled with the build tag "privileged", need root,
// and run their trials once per invocation (use -benchtime 1x). Each writes
// its rows with integration/bench/result to $BENCH_OUT; `go run
// ./integration/bench/cmd/benchreport` prints the merged table.
// -short (or BENCH_TRIALS=N) is the quick mode. docs/performance.md has the
// method and the figures.
package e2e
