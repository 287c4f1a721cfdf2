package zones

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/openinof/inof/inof"
)

// Visible is the zoning rule itself, without an index: may devices a and b
// see each other under c? They must be different devices with complementary
// roles (host ↔ target; RoleBoth counts as both), and either share a custom
// zone, or — with the default zone enabled — both be in no custom zone, or
// (without hard zoning) at least one of them be in no custom zone.
func Visible(c *Config, a, b inof.Device) bool {
	if a.Addr == b.Addr || !a.Role.Complements(b.Role) {
		return false
	}
	za, zb := memberships(c, a), memberships(c, b)
	for _, z := range za {
		if slices.Contains(zb, z) {
			return true
		}
	}
	return defaultRule(c.Settings, len(za) == 0, len(zb) == 0)
}

// defaultRule: may two devices that share no custom zone see each other,
// given whether each is unzoned (in the default zone when it is enabled)?
func defaultRule(s Settings, aUnzoned, bUnzoned bool) bool {
	if !s.DefaultZoneEnabled {
		return false
	}
	if s.HardZoning {
		return aUnzoned && bUnzoned
	}
	return aUnzoned || bUnzoned
}

// memberships lists the custom zones d belongs to, by scanning c (reference
// implementation; Index does the same with lookups).
func memberships(c *Config, d inof.Device) []string {
	var out []string
	for name, z := range c.Zones {
		if slices.ContainsFunc(z.Members, func(m Member) bool { return matches(c, m, d) }) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func matches(c *Config, m Member, d inof.Device) bool {
	switch m.Kind {
	case MemberAddr:
		return d.Addr == m.Addr
	case MemberRange:
		return d.Addr.Is4() == m.Addr.Is4() && !d.Addr.Less(m.Addr) && !m.Hi.Less(d.Addr)
	case MemberPrefix:
		return m.Prefix.Contains(d.Addr)
	case MemberNQN:
		return d.NQN != "" && d.NQN == m.Name
	case MemberAlias:
		a := c.Aliases[m.Name]
		return a != nil && slices.ContainsFunc(a.Members, func(am Member) bool { return am.Kind != MemberAlias && matches(c, am, d) })
	}
	return false
}

// zoneID numbers the custom zones of one Index.
type zoneID int32

type span struct {
	lo, hi netip.Addr
	zone   zoneID
}

// matcher finds the zones a device belongs to with lookups instead of
// scanning every member: exact addresses and NQNs by map, prefixes by one
// map lookup per prefix length, ranges by binary search.
type matcher struct {
	exact    map[netip.Addr][]zoneID
	nqn      map[string][]zoneID
	prefixes map[int]map[netip.Prefix][]zoneID // by bits; IPv4 and IPv6 keys differ
	// ranges are sorted by lo (IPv4 before IPv6); reach[i] is the highest
	// hi among ranges[:i+1] of ranges[i]'s family, so a lookup walks back
	// from the last range starting at or below the address only while an
	// earlier range can still reach it.
	ranges []span
	reach  []netip.Addr
}

// newMatcher indexes the members of the zones in ids (names of zones of c,
// with the ids to report for them).
func newMatcher(c *Config, ids map[string]zoneID) *matcher {
	mt := &matcher{exact: map[netip.Addr][]zoneID{}, nqn: map[string][]zoneID{}, prefixes: map[int]map[netip.Prefix][]zoneID{}}
	add := func(m Member, id zoneID) {
		switch m.Kind {
		case MemberAddr:
			mt.exact[m.Addr] = appendZone(mt.exact[m.Addr], id)
		case MemberRange:
			mt.ranges = append(mt.ranges, span{m.Addr, m.Hi, id})
		case MemberPrefix:
			p := m.Prefix.Masked()
			if mt.prefixes[p.Bits()] == nil {
				mt.prefixes[p.Bits()] = map[netip.Prefix][]zoneID{}
			}
			mt.prefixes[p.Bits()][p] = appendZone(mt.prefixes[p.Bits()][p], id)
		case MemberNQN:
			mt.nqn[m.Name] = appendZone(mt.nqn[m.Name], id)
		}
	}
	for name, id := range ids {
		for _, m := range c.Zones[name].Members {
			if m.Kind != MemberAlias {
				add(m, id)
				continue
			}
			if a := c.Aliases[m.Name]; a != nil {
				for _, am := range a.Members {
					if am.Kind != MemberAlias {
						add(am, id)
					}
				}
			}
		}
	}
	slices.SortFunc(mt.ranges, func(a, b span) int { return a.lo.Compare(b.lo) })
	mt.reach = make([]netip.Addr, len(mt.ranges))
	for i, r := range mt.ranges {
		mt.reach[i] = r.hi
		if i > 0 && mt.ranges[i-1].lo.Is4() == r.lo.Is4() && r.hi.Less(mt.reach[i-1]) {
			mt.reach[i] = mt.reach[i-1]
		}
	}
	return mt
}

// rangeZones appends the zones of the ranges holding a.
func (mt *matcher) rangeZones(out []zoneID, a netip.Addr) []zoneID {
	i, _ := slices.BinarySearchFunc(mt.ranges, a, func(r span, a netip.Addr) int {
		if a.Less(r.lo) {
			return 1
		}
		return -1 // lo ≤ a: the search lands after every such range
	})
	for i--; i >= 0 && mt.ranges[i].lo.Is4() == a.Is4() && !mt.reach[i].Less(a); i-- {
		if !mt.ranges[i].hi.Less(a) {
			out = append(out, mt.ranges[i].zone)
		}
	}
	return out
}

func appendZone(ids []zoneID, id zoneID) []zoneID {
	if len(ids) > 0 && ids[len(ids)-1] == id {
		return ids
	}
	return append(ids, id)
}

// zonesOf returns the sorted, distinct zones d belongs to.
func (mt *matcher) zonesOf(d inof.Device) []zoneID {
	var out []zoneID
	out = append(out, mt.exact[d.Addr]...)
	if d.NQN != "" {
		out = append(out, mt.nqn[d.NQN]...)
	}
	for bits, set := range mt.prefixes {
		if p, err := d.Addr.Prefix(bits); err == nil {
			out = append(out, set[p]...)
		}
	}
	out = mt.rangeZones(out, d.Addr)
	slices.Sort(out)
	return slices.Compact(out)
}
