// Package bgp carries NoF records over BGP: GoBGP embedded behind the small
// Speaker interface of this package, the record codec, per-zone route targets
// with RT-constraint, and reflector/client setup (cluster-id, graceful
// restart, TCP-MD5, GTSM). Sub-package bfd is our BFD implementation.
package bgp
