package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
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
	for _, zs := range local {
		t.add(zs, 1)
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
		delete(t.zonesOf, addr)
		t.add(old, -1)
	}
	if active {
		t.zonesOf[addr] = zs
		t.add(zs, 1)
	}
}

// add counts one more (d 1) or one fewer (d -1) active device in the
// custom zones zs; a count that leaves or reaches zero marks the set stale.
func (t *tally) add(zs []string, d int) {
	edge := func(n int) bool { return (d > 0 && n == 1) || (d < 0 && n == 0) }
	if len(zs) == 0 {
		t.unzoned += d
		t.stale = t.stale || edge(t.unzoned)
		return
	}
	t.zoned += d
	t.stale = t.stale || edge(t.zoned)
	for _, z := range zs {
		t.count[z] += d
		t.stale = t.stale || edge(t.count[z])
		if t.count[z] == 0 {
			delete(t.count, z)
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

// zoneSubs is the Engine's side of the subscriptions: the tally of its
// local devices' zones and the set it last asked the daemon for.
type zoneSubs struct {
	tally *tally // zones of the local devices that hold theirs (holdsZones)
	set   []string
}

func newZoneSubs() *zoneSubs { return &zoneSubs{tally: newTally(), set: []string{}} }

// tallyOf counts the zones (zonesOf under cfg, none for a claim cfg's pins
// refuse) of the active local devices, published as they are.
func tallyOf(published []inof.Report, cfg *zones.Config, zonesOf func(inof.Device) []string) *tally {
	t := newTally()
	for _, r := range published {
		var zs []string
		if !cfg.Refuses(r) {
			zs = zonesOf(r.Device)
		}
		t.set(r.Device.Addr, zs, holdsZones(r))
	}
	return t
}

// resubscribe returns the zones to subscribe to under cfg (Subscriptions'
// rules) if they changed, nil otherwise.
func (s *zoneSubs) resubscribe(cfg *zones.Config) []string {
	subs, maybe := s.tally.subscriptions(cfg.Settings, cfg.ZoneNames)
	if !maybe || slices.Equal(subs, s.set) {
		return nil
	}
	s.set = subs
	return subs
}
