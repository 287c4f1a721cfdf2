// Package inof is the shared vocabulary of the iNOF fabric control plane:
// device roles, transport protocols, device states, status-change reasons and
// the device identity every other package speaks about.
//
// It imports nothing of this module. Wire formats (l2proto, bgp) and the zone
// model (zones) map their encodings onto these types in one place each, so a
// concept is defined once. The daemons' logic lives in its sub-packages.
package inof
