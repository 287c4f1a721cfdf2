// Package demo is a test suite: it holds `make demo` (issue #12): a whole
// iNOF fabric in network namespaces, brought up by integration/topo with the
// real binaries, that tells in plain words what happens in it —
// registrations, zoning with inofctl, the reflector's event feed, the
// notifications hosts receive and the nvme commands they run — through
// discovery, a target link cut and its repair.
//
// The demo is the test TestDemo, compiled with the build tag "privileged"
// and run only when INOF_DEMO=1 (the Makefile's demo target sets it), so
// `make test` never runs it: its name does not match '^TestPriv' either.
package demo
