// Package selfexec is a harness library: the one helper for tests that must
// kill a real process, used by integration/bench/scale and by unit tests of
// bgp and zones (docs/testing.md, "Where things live").
package selfexec
