package zones

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/openinof/inof/inof"
)

// Change is one (host, target) pair whose visibility changed: the switch
// agents turn Visible into an active notification and !Visible into an
// inactive one with reason zone change.
type Change struct {
	Host, Target inof.Device
	Visible      bool
}

// Diff returns the exact visibility changes from old to new, sorted by host
// then target. Both indexes normally hold the same devices under two
// configurations. Only devices whose zones, role or presence changed (all
// devices when the settings changed) are examined: a pair of devices that
// kept their zones keeps its visibility.
func Diff(old, new *Index) []Change {
	affected := map[netip.Addr]bool{}
	settingsChanged := old.cfg.Settings != new.cfg.Settings
	for addr, e := range old.devices {
		n := new.devices[addr]
		if settingsChanged || n == nil || n.dev != e.dev || !sameZones(old, e, new, n) {
			affected[addr] = true
		}
	}
	for addr := range new.devices {
		if old.devices[addr] == nil {
			affected[addr] = true
		}
	}

	type pair struct{ host, target netip.Addr }
	changes := map[pair]Change{}
	record := func(a, b inof.Device, visible bool) {
		if a.Role.IsHost() && b.Role.IsTarget() {
			changes[pair{a.Addr, b.Addr}] = Change{Host: a, Target: b, Visible: visible}
		}
		if b.Role.IsHost() && a.Role.IsTarget() {
			changes[pair{b.Addr, a.Addr}] = Change{Host: b, Target: a, Visible: visible}
		}
	}
	for addr := range affected {
		before := peerSet(old, addr)
		after := peerSet(new, addr)
		for p, pd := range before {
			if _, still := after[p]; !still {
				d, _ := old.Device(addr)
				record(d, pd, false)
			}
		}
		for p, pd := range after {
			if _, was := before[p]; !was {
				d, _ := new.Device(addr)
				record(d, pd, true)
			}
		}
	}
	out := make([]Change, 0, len(changes))
	for _, c := range changes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host.Addr != out[j].Host.Addr {
			return out[i].Host.Addr.Less(out[j].Host.Addr)
		}
		return out[i].Target.Addr.Less(out[j].Target.Addr)
	})
	return out
}

func peerSet(ix *Index, addr netip.Addr) map[netip.Addr]inof.Device {
	ps := ix.Peers(addr)
	m := make(map[netip.Addr]inof.Device, len(ps))
	for _, p := range ps {
		m[p.Addr] = p
	}
	return m
}

// sameZones compares the zone names of a device in two indexes without
// allocating.
func sameZones(ia *Index, a *indexed, ib *Index, b *indexed) bool {
	return slices.EqualFunc(a.zones, b.zones, func(x, y zoneID) bool { return ia.names[x] == ib.names[y] })
}
