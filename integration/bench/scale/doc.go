// Package scale is a test suite: its benchmark measures the fabric at size,
// side by side with stock GoBGP: how long a newly started switch agent takes
// to hold every device record of a large fabric (100k records in 1k zones),
// what the reflector costs per record, and what one reflector costs holding
// 256 client sessions of 8k devices each.
//
// The reflector runs in its own process (the test binary re-executed, or
// Debian's gobgpd) so that its RSS and CPU are its own. The client sessions
// that load it are Feeders: raw BGP sessions that send pre-built UPDATEs of
// real device records, far lighter than a speaker each. The benchmark
// (BenchmarkScale, scale_test.go) writes its rows with the bench result
// package; BENCH_SCALE=small or -short runs a smoke-sized fabric.
package scale
