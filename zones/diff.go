package zones

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
)

// Change is one (host, target) pair whose visibility changed: the switch
// agents turn Visible into an active notification and !Visible into an
// inactive one with reason zone change. Host and Target are the devices as
// the index that holds the pair visible has them (new for Visible, old
// otherwise).
type Change struct {
	Host, Target inof.Device
	Visible      bool
}

// Delta is the difference in visibility between two indexes, kept in
// compact form: the devices whose presence, role or zones differ, and
// whether the default-zone rule changed for unzoned↔unzoned and
// unzoned↔zoned pairs. The pairs that changed are expanded per host by For,
// so a settings change that flips millions of pairs costs nothing until a
// switch asks about its own hosts.
//
// The indexes may hold different device sets (a switch holds only the
// devices of the zones it subscribed to); a device present on one side only
// appears or disappears. Neither index may change while the Delta is used.
type Delta struct {
	old, new *Index
	affected map[netip.Addr]bool
	uu, uz   bool // the default rule changed for these pairs of stable devices
}

// Diff compares old and new. Its cost is one pass over the devices of both
// (none when new was derived from old by WithConfig without zone changes).
func Diff(old, new *Index) *Delta {
	so, sn := old.cfg.Settings, new.cfg.Settings
	d := &Delta{old: old, new: new, affected: map[netip.Addr]bool{},
		uu: defaultRule(so, true, true) != defaultRule(sn, true, true),
		uz: defaultRule(so, true, false) != defaultRule(sn, true, false)}
	if old.devices == new.devices {
		return d
	}
	for a, e := range old.devices.m {
		if n := new.devices.m[a]; n != e && (n == nil || !sameClass(old, e, new, n)) {
			d.affected[a] = true
		}
	}
	for a := range new.devices.m {
		if old.devices.m[a] == nil {
			d.affected[a] = true
		}
	}
	return d
}

// sameClass reports whether a device has the same role and the same zones
// (by name) in two indexes: then it sees the same classes in both.
func sameClass(ia *Index, a *entry, ib *Index, b *entry) bool {
	if a.dev.Role != b.dev.Role || len(a.zones) != len(b.zones) {
		return false
	}
	for _, x := range a.zones { // ids may differ in order between indexes
		if !slices.ContainsFunc(b.zones, func(y zoneID) bool { return ia.names[x] == ib.names[y] }) {
			return false
		}
	}
	return true
}

// For returns the changes for the host at addr, in no particular order
// (sort them if order matters: a settings change can flip thousands of
// targets per host). Its cost is proportional to the host's visible targets
// (before and after) at worst, and to the number of changed devices plus
// the changes returned when the host itself kept its zones and role.
func (d *Delta) For(host netip.Addr) []Change {
	eo, en := d.old.devices.m[host], d.new.devices.m[host]
	wasHost := eo != nil && eo.dev.Role.IsHost()
	isHost := en != nil && en.dev.Role.IsHost()
	switch {
	case !wasHost && !isHost:
		return nil
	case d.affected[host] || len(d.affected) > d.old.bound(eo, targetsOf)+d.new.bound(en, targetsOf):
		return d.full(host, eo, en)
	}
	return d.stable(eo, en)
}

// full compares the host's whole visible sets.
func (d *Delta) full(host netip.Addr, eo, en *entry) []Change {
	was := map[netip.Addr]inof.Device{}
	for t := range d.old.Targets(host) {
		was[t.Addr] = t
	}
	var out []Change
	for t := range d.new.Targets(host) {
		if _, ok := was[t.Addr]; ok {
			delete(was, t.Addr)
			continue
		}
		out = append(out, Change{Host: en.dev, Target: t, Visible: true})
	}
	for _, t := range was {
		out = append(out, Change{Host: eo.dev, Target: t, Visible: false})
	}
	return out
}

// stable lists the changes of a host whose role and zones did not change:
// only changed devices and, after a settings change, whole classes of
// devices can change for it.
func (d *Delta) stable(eo, en *entry) []Change {
	var out []Change
	for a := range d.affected {
		to, tn := d.old.devices.m[a], d.new.devices.m[a]
		was := to != nil && to.dev.Role.IsTarget() && d.old.sees(eo, to)
		is := tn != nil && tn.dev.Role.IsTarget() && d.new.sees(en, tn)
		switch {
		case is && !was:
			out = append(out, Change{Host: en.dev, Target: tn.dev, Visible: true})
		case was && !is:
			out = append(out, Change{Host: eo.dev, Target: to.dev, Visible: false})
		}
	}
	// Stable targets flip only by the default rule: an unzoned device shares
	// no zone with anyone, and two zoned devices that share none never see
	// each other under any settings.
	flip := func(g *group, unzonedTarget bool) {
		visible := defaultRule(d.new.cfg.Settings, len(en.zones) == 0, unzonedTarget)
		out = slices.Grow(out, len(g.targets.m))
		for a, t := range g.targets.m {
			if a == en.dev.Addr || d.affected[a] {
				continue
			}
			target := t.dev
			if !visible {
				target = d.old.devices.m[a].dev
			}
			out = append(out, Change{Host: en.dev, Target: target, Visible: visible})
		}
	}
	if len(en.zones) == 0 {
		if d.uu {
			flip(&d.new.unzoned, true)
		}
		if d.uz {
			flip(&d.new.zoned, false)
		}
	} else if d.uz {
		flip(&d.new.unzoned, true)
	}
	return out
}
