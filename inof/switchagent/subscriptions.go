package switchagent

import (
	"net/netip"
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
	t := newTally()
	for i, zs := range local {
		// Distinct keys: only the counts matter.
		t.set(netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}), zs, true)
	}
	out, _ := t.subscriptions(s, func() []string { return allZones })
	return out
}

// tally keeps what Subscriptions needs incrementally: the custom zones of
// each active local device and, per zone, how many of them are in it. An
// event then costs O(the device's zones), and the subscription set is
// computed again only when a count crosses zero.
type tally struct {
	zonesOf map[netip.Addr][]string // active local devices → their custom zones
	count   map[string]int          // custom zone → active local devices in it
	unzoned int                     // active local devices in no custom zone
	zoned   int                     // active local devices in some custom zone
	stale   bool                    // the set may have changed since Subscriptions
}

func newTally() *tally {
	return &tally{zonesOf: map[netip.Addr][]string{}, count: map[string]int{}, stale: true}
}

// set records that the local device at addr is active in the custom zones
// zs (active false: it is not active, or gone).
func (t *tally) set(addr netip.Addr, zs []string, active bool) {
	if old, ok := t.zonesOf[addr]; ok {
		if active && slices.Equal(old, zs) {
			return
		}
		t.remove(addr, old)
	}
	if !active {
		return
	}
	t.zonesOf[addr] = zs
	if len(zs) == 0 {
		t.unzoned++
		t.stale = t.stale || t.unzoned == 1
		return
	}
	t.zoned++
	t.stale = t.stale || t.zoned == 1
	for _, z := range zs {
		t.count[z]++
		t.stale = t.stale || t.count[z] == 1
	}
}

func (t *tally) remove(addr netip.Addr, zs []string) {
	delete(t.zonesOf, addr)
	if len(zs) == 0 {
		t.unzoned--
		t.stale = t.stale || t.unzoned == 0
		return
	}
	t.zoned--
	t.stale = t.stale || t.zoned == 0
	for _, z := range zs {
		if t.count[z]--; t.count[z] == 0 {
			delete(t.count, z)
			t.stale = true
		}
	}
}

// subscriptions returns the set Subscriptions gives for the tallied
// devices, and false when it cannot have changed since the last call.
// allZones is consulted only when needed.
func (t *tally) subscriptions(s zones.Settings, allZones func() []string) ([]string, bool) {
	if !t.stale {
		return nil, false
	}
	t.stale = false
	set := map[string]bool{}
	for z := range t.count {
		set[z] = true
	}
	if s.DefaultZoneEnabled {
		if t.unzoned > 0 || (t.zoned > 0 && !s.HardZoning) {
			set[zones.DefaultZone] = true
		}
		if t.unzoned > 0 && !s.HardZoning {
			for _, z := range allZones() {
				set[z] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for z := range set {
		out = append(out, z)
	}
	slices.Sort(out)
	return out, true
}
