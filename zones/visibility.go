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
// map lookup per prefix length, ranges by a short list.
type matcher struct {
	exact    map[netip.Addr][]zoneID
	nqn      map[string][]zoneID
	prefixes map[int]map[netip.Prefix][]zoneID // by bits; IPv4 and IPv6 keys differ
	ranges   []span
}

func newMatcher(c *Config, names []string) *matcher {
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
	for i, name := range names {
		for _, m := range c.Zones[name].Members {
			if m.Kind != MemberAlias {
				add(m, zoneID(i))
				continue
			}
			if a := c.Aliases[m.Name]; a != nil {
				for _, am := range a.Members {
					if am.Kind != MemberAlias {
						add(am, zoneID(i))
					}
				}
			}
		}
	}
	return mt
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
	for _, r := range mt.ranges {
		if d.Addr.Is4() == r.lo.Is4() && !d.Addr.Less(r.lo) && !r.hi.Less(d.Addr) {
			out = append(out, r.zone)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Index answers visibility questions for one configuration and a changing
// set of devices (one per address) without scanning every zone × device:
// each device's zones are found by lookup when it is added, and each zone
// keeps its devices. Not safe for concurrent use.
type Index struct {
	cfg     *Config
	names   []string // zoneID → name
	mt      *matcher
	devices map[netip.Addr]*indexed
	zones   []map[netip.Addr]*indexed // zoneID → members
	unzoned map[netip.Addr]*indexed
}

type indexed struct {
	dev   inof.Device
	zones []zoneID
}

// NewIndex indexes devs under c. c must not change while the index is used.
func NewIndex(c *Config, devs []inof.Device) *Index {
	names := c.ZoneNames()
	ix := &Index{cfg: c, names: names, mt: newMatcher(c, names), devices: make(map[netip.Addr]*indexed, len(devs)),
		zones: make([]map[netip.Addr]*indexed, len(names)), unzoned: map[netip.Addr]*indexed{}}
	for i := range ix.zones {
		ix.zones[i] = map[netip.Addr]*indexed{}
	}
	for _, d := range devs {
		ix.Put(d)
	}
	return ix
}

// Config returns the configuration the index was built for.
func (ix *Index) Config() *Config { return ix.cfg }

// Put adds or replaces the device with d's address.
func (ix *Index) Put(d inof.Device) {
	ix.Remove(d.Addr)
	e := &indexed{dev: d, zones: ix.mt.zonesOf(d)}
	ix.devices[d.Addr] = e
	if len(e.zones) == 0 {
		ix.unzoned[d.Addr] = e
	}
	for _, z := range e.zones {
		ix.zones[z][d.Addr] = e
	}
}

// Remove drops the device with that address, if present.
func (ix *Index) Remove(addr netip.Addr) {
	e := ix.devices[addr]
	if e == nil {
		return
	}
	delete(ix.devices, addr)
	delete(ix.unzoned, addr)
	for _, z := range e.zones {
		delete(ix.zones[z], addr)
	}
}

// Device returns the indexed device with that address.
func (ix *Index) Device(addr netip.Addr) (inof.Device, bool) {
	e := ix.devices[addr]
	if e == nil {
		return inof.Device{}, false
	}
	return e.dev, true
}

// Len returns the number of indexed devices.
func (ix *Index) Len() int { return len(ix.devices) }

// Zones returns the custom zones of the device (empty: default zone).
func (ix *Index) Zones(addr netip.Addr) []string {
	e := ix.devices[addr]
	if e == nil {
		return nil
	}
	out := make([]string, len(e.zones))
	for i, z := range e.zones {
		out[i] = ix.names[z]
	}
	return out
}

// CanSee reports whether the devices at a and b may see each other.
func (ix *Index) CanSee(a, b netip.Addr) bool {
	ea, eb := ix.devices[a], ix.devices[b]
	if ea == nil || eb == nil || a == b || !ea.dev.Role.Complements(eb.dev.Role) {
		return false
	}
	for _, z := range ea.zones {
		if _, ok := slices.BinarySearch(eb.zones, z); ok {
			return true
		}
	}
	return defaultRule(ix.cfg.Settings, len(ea.zones) == 0, len(eb.zones) == 0)
}

// Peers returns the devices the device at addr may see, sorted by address.
func (ix *Index) Peers(addr netip.Addr) []inof.Device {
	e := ix.devices[addr]
	if e == nil {
		return nil
	}
	seen := map[netip.Addr]bool{}
	var out []inof.Device
	consider := func(o *indexed) {
		if o.dev.Addr == addr || seen[o.dev.Addr] || !e.dev.Role.Complements(o.dev.Role) {
			return
		}
		seen[o.dev.Addr] = true
		out = append(out, o.dev)
	}
	for _, z := range e.zones {
		for _, o := range ix.zones[z] {
			consider(o)
		}
	}
	s := ix.cfg.Settings
	switch {
	case !s.DefaultZoneEnabled:
	case len(e.zones) > 0 && !s.HardZoning:
		for _, o := range ix.unzoned {
			consider(o)
		}
	case len(e.zones) == 0 && s.HardZoning:
		for _, o := range ix.unzoned {
			consider(o)
		}
	case len(e.zones) == 0:
		for _, o := range ix.devices {
			consider(o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// TargetsFor returns the targets the host at addr may see.
func (ix *Index) TargetsFor(host netip.Addr) []inof.Device {
	return ix.directed(host, inof.Role.IsHost, inof.Role.IsTarget)
}

// HostsFor returns the hosts that must hear about the target at addr.
func (ix *Index) HostsFor(target netip.Addr) []inof.Device {
	return ix.directed(target, inof.Role.IsTarget, inof.Role.IsHost)
}

// directed filters Peers for one direction: the device at addr must satisfy
// self, and each peer other (RoleBoth satisfies both).
func (ix *Index) directed(addr netip.Addr, self, other func(inof.Role) bool) []inof.Device {
	e := ix.devices[addr]
	if e == nil || !self(e.dev.Role) {
		return nil
	}
	var out []inof.Device
	for _, p := range ix.Peers(addr) {
		if other(p.Role) {
			out = append(out, p)
		}
	}
	return out
}
