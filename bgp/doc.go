// Package bgp carries NoF records over BGP: GoBGP embedded behind the small
// Speaker interface of this package, the record codec, per-zone route targets
// with RT-constraint, and reflector/client setup (cluster-id, graceful
// restart, TCP-MD5, GTSM). DevicePublisher and DeviceTable move device
// records between zones without ghosts; ConfigReplicator and ConfigView
// replicate configuration between reflectors. FakeFabric is an in-memory
// stand-in for GoBGP, for race-checked tests of the code above the
// speaker. Sub-package bfd is our BFD implementation.
package bgp
