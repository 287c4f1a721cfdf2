// Package record is the codec of the NoF records iNOF carries in BGP
// (docs/records.md): device, device set, switch, discovery and
// configuration records, their keys and values, and the route targets
// they are tagged with (per zone, configuration, discovery). It imports no
// GoBGP and nothing of the speaker: bgp and bgp/table build on it.
package record
