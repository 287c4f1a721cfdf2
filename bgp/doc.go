// Package bgp is the BGP speaker: GoBGP embedded behind the small Speaker
// interface of this package, with per-zone route targets and
// RT-constraint, reflector/client setup (cluster-id, graceful restart,
// TCP-MD5, GTSM, BFD through sub-package bfd) and bounded watches of the
// records it holds. FakeFabric is an in-memory stand-in for GoBGP, for
// race-checked tests of the code above the speaker.
//
// The layers: bgp/record (the record codec, no GoBGP) ← bgp (this
// package) ← bgp/table (publishers and tables of records over a speaker).
package bgp
