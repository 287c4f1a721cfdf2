// Package bgptest holds what the tests of bgp and bgp/table share: speakers
// under test (the real GoBGP on loopback addresses, or FakeFabric's), wired
// into a reflector and its clients, each with a RecordView of the records
// it has seen, and the waits a test needs on them.
//
// Only tests import it (bgp's external test package and bgp/table's
// tests); it reaches bgp through its exported API only.
package bgptest
