package switchagent

import (
	"slices"

	"github.com/openinof/inof/zones"
)

// Route-target rules (docs/records.md, "Which route targets"): a device
// record carries the route target of every custom zone the device is in,
// or that of the default zone (zones.DefaultZone) when it is in none. A
// switch subscribes to the zones it needs to compute what its local hosts
// may see. Route targets only spare bandwidth: a switch always applies the
// full zoning rules to what it receives.

// Tags returns the zones whose route targets a device record carries, given
// the custom zones the device is in.
func Tags(deviceZones []string) []string {
	if len(deviceZones) == 0 {
		return []string{zones.DefaultZone}
	}
	return slices.Clone(deviceZones)
}

// Subscriptions returns the zones a switch subscribes to, sorted, given the
// custom zones of each local device, the fabric settings and the names of
// all custom zones:
//   - each local device's own tags (its zones, or the default zone), so it
//     sees what shares a zone with it;
//   - without hard zoning and with the default zone enabled, a zoned device
//     also sees unzoned devices (the default zone), and an unzoned device
//     sees every zoned one (every zone).
//
// With the default zone disabled, unzoned devices see nobody, so nothing is
// added for them.
func Subscriptions(local [][]string, s zones.Settings, allZones []string) []string {
	set := map[string]bool{}
	for _, zs := range local {
		unzoned := len(zs) == 0
		if unzoned && !s.DefaultZoneEnabled {
			continue
		}
		for _, z := range Tags(zs) {
			set[z] = true
		}
		if s.DefaultZoneEnabled && !s.HardZoning {
			set[zones.DefaultZone] = true
			if unzoned {
				for _, z := range allZones {
					set[z] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for z := range set {
		out = append(out, z)
	}
	slices.Sort(out)
	return out
}
