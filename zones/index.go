package zones

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
)

// ErrDevice reports a device the index cannot hold.
var ErrDevice = errors.New("invalid device")

// Index answers visibility questions for one configuration and a changing
// set of devices without scanning every zone × device.
//
// The index keys on the address: one device per address, and visibility is
// a relation between addresses (a notification names a target address and a
// host address). A dual-homed device (one NQN, two NICs) is two devices;
// an NQN member matches both. When two switches report the same address,
// the caller puts one device for it (Put replaces) and removes it only when
// no switch reports it any more.
//
// Devices are kept per class: per custom zone, the unzoned ones and the
// zoned ones, each split into hosts and targets (RoleBoth in both). A query
// walks only the classes a device may see, so its cost is proportional to
// the answer. WithConfig derives the index of another configuration,
// sharing every class that did not change (copy on write).
//
// An Index is not safe for concurrent use; an index and the indexes derived
// from it may be used by one goroutine together.
type Index struct {
	cfg   *Config
	ids   map[string]zoneID // live custom zones
	names []string          // zoneID → name; "" for a retired id
	mt    *matcher          // all live zones; nil until Put needs it

	tok     *int // identifies the maps this index may write in place
	devices *cowMap[*entry]
	zones   []group // zoneID → members
	unzoned group   // devices in no custom zone
	zoned   group   // devices in at least one custom zone
}

type entry struct {
	dev   inof.Device
	zones []zoneID // sorted
}

// cowMap is a map that indexes derived from one another share until one of
// them writes: the writer copies it first unless it owns it.
type cowMap[V any] struct {
	owner *int
	m     map[netip.Addr]V
}

// writable returns the map *p for writing by ix, copying it first if ix
// does not own it.
func writable[V any](ix *Index, p **cowMap[V]) map[netip.Addr]V {
	if (*p).owner != ix.tok {
		*p = &cowMap[V]{owner: ix.tok, m: maps.Clone((*p).m)}
	}
	return (*p).m
}

// group is a class of devices, split by role. Only the device of each
// entry counts here: a derived index may hold a newer entry (other zones)
// for the same device.
type group struct {
	hosts, targets *cowMap[*entry]
}

// newGroup makes an empty group.
func newGroup(tok *int) group { return classSize{}.group(tok) }

func (g *group) add(ix *Index, e *entry) {
	if e.dev.Role.IsHost() {
		writable(ix, &g.hosts)[e.dev.Addr] = e
	}
	if e.dev.Role.IsTarget() {
		writable(ix, &g.targets)[e.dev.Addr] = e
	}
}

func (g *group) remove(ix *Index, d inof.Device) {
	if d.Role.IsHost() {
		delete(writable(ix, &g.hosts), d.Addr)
	}
	if d.Role.IsTarget() {
		delete(writable(ix, &g.targets), d.Addr)
	}
}

func hostsOf(g *group) map[netip.Addr]*entry   { return g.hosts.m }
func targetsOf(g *group) map[netip.Addr]*entry { return g.targets.m }

// NewIndex indexes devs under c. c must not change while the index (or one
// derived from it) is used. It fails on the first device Put refuses.
func NewIndex(c *Config, devs []inof.Device) (*Index, error) {
	tok := new(int)
	ix := &Index{cfg: c, ids: make(map[string]zoneID, len(c.Zones)), tok: tok,
		devices: &cowMap[*entry]{tok, make(map[netip.Addr]*entry, len(devs))}}
	for i, name := range c.ZoneNames() {
		ix.ids[name] = zoneID(i)
		ix.names = append(ix.names, name)
	}
	// Every device's zones first, so that each class is made at its size:
	// growing a map step by step costs more than filling it.
	es := make([]*entry, len(devs))
	size := newClassSizes(len(ix.names))
	for i, d := range devs {
		if err := putable(d); err != nil {
			return nil, err
		}
		es[i] = &entry{dev: d, zones: ix.matcher().zonesOf(d)}
		size.count(es[i])
	}
	ix.unzoned, ix.zoned = size.unzoned.group(tok), size.zoned.group(tok)
	ix.zones = make([]group, len(ix.names))
	for i := range ix.zones {
		ix.zones[i] = size.zones[i].group(tok)
	}
	for _, e := range es {
		ix.Remove(e.dev.Addr) // a later device of the same address replaces it, as Put does
		ix.devices.m[e.dev.Addr] = e
		ix.classAdd(e)
	}
	return ix, nil
}

// classSize counts the hosts and targets of one class (RoleBoth in both).
type classSize struct{ hosts, targets int }

func (n *classSize) add(r inof.Role) {
	if r.IsHost() {
		n.hosts++
	}
	if r.IsTarget() {
		n.targets++
	}
}

// group makes an empty group with room for the counted devices.
func (n classSize) group(tok *int) group {
	return group{hosts: &cowMap[*entry]{tok, make(map[netip.Addr]*entry, n.hosts)},
		targets: &cowMap[*entry]{tok, make(map[netip.Addr]*entry, n.targets)}}
}

// classSizes counts the devices of every class of an index being built.
type classSizes struct {
	zones          []classSize // by zoneID
	unzoned, zoned classSize
}

func newClassSizes(zones int) *classSizes { return &classSizes{zones: make([]classSize, zones)} }

func (s *classSizes) count(e *entry) {
	if len(e.zones) == 0 {
		s.unzoned.add(e.dev.Role)
		return
	}
	s.zoned.add(e.dev.Role)
	for _, z := range e.zones {
		s.zones[z].add(e.dev.Role)
	}
}

// Config returns the configuration the index was built for.
func (ix *Index) Config() *Config { return ix.cfg }

func (ix *Index) matcher() *matcher {
	if ix.mt == nil {
		ix.mt = newMatcher(ix.cfg, ix.ids)
	}
	return ix.mt
}

// Put adds or replaces the device with d's address. The address must be a
// plain unicast address (no IPv6 zone, not IPv4-mapped) and the role one of
// host, target or both.
func (ix *Index) Put(d inof.Device) error {
	if err := putable(d); err != nil {
		return err
	}
	ix.Remove(d.Addr)
	e := &entry{dev: d, zones: ix.matcher().zonesOf(d)}
	writable(ix, &ix.devices)[d.Addr] = e
	ix.classAdd(e)
	return nil
}

// putable checks what Put asks of a device.
func putable(d inof.Device) error {
	if !usableAddr(d.Addr) {
		return fmt.Errorf("zones: %w: address %s (need a unicast address without zone, not IPv4-mapped)", ErrDevice, d.Addr)
	}
	if !d.Role.Valid() {
		return fmt.Errorf("zones: %w: %s has role %d", ErrDevice, d.Addr, d.Role)
	}
	return nil
}

// Remove drops the device with that address, if present.
func (ix *Index) Remove(addr netip.Addr) {
	e := ix.devices.m[addr]
	if e == nil {
		return
	}
	delete(writable(ix, &ix.devices), addr)
	ix.classRemove(e)
}

func (ix *Index) classAdd(e *entry) {
	if len(e.zones) == 0 {
		ix.unzoned.add(ix, e)
		return
	}
	ix.zoned.add(ix, e)
	for _, z := range e.zones {
		ix.zones[z].add(ix, e)
	}
}

func (ix *Index) classRemove(e *entry) {
	if len(e.zones) == 0 {
		ix.unzoned.remove(ix, e.dev)
		return
	}
	ix.zoned.remove(ix, e.dev)
	for _, z := range e.zones {
		ix.zones[z].remove(ix, e.dev)
	}
}

// Device returns the indexed device with that address.
func (ix *Index) Device(addr netip.Addr) (inof.Device, bool) {
	e := ix.devices.m[addr]
	if e == nil {
		return inof.Device{}, false
	}
	return e.dev, true
}

// Len returns the number of indexed devices.
func (ix *Index) Len() int { return len(ix.devices.m) }

// Zones returns the custom zones of the device, sorted (empty: default
// zone).
func (ix *Index) Zones(addr netip.Addr) []string {
	e := ix.devices.m[addr]
	if e == nil {
		return nil
	}
	out := make([]string, len(e.zones))
	for i, z := range e.zones {
		out[i] = ix.names[z]
	}
	slices.Sort(out)
	return out
}

// ZonesOf returns the custom zones d is in under the index's
// configuration, sorted (empty: default zone), whether or not d is indexed.
func (ix *Index) ZonesOf(d inof.Device) []string {
	ids := ix.matcher().zonesOf(d)
	out := make([]string, len(ids))
	for i, z := range ids {
		out[i] = ix.names[z]
	}
	slices.Sort(out)
	return out
}

// CanSee reports whether the devices at a and b may see each other.
func (ix *Index) CanSee(a, b netip.Addr) bool {
	ea, eb := ix.devices.m[a], ix.devices.m[b]
	return ea != nil && eb != nil && ea.dev.Role.Complements(eb.dev.Role) && ix.sees(ea, eb)
}

// sees applies the zone part of the rule to two indexed devices (roles are
// the caller's business).
func (ix *Index) sees(a, b *entry) bool {
	if a.dev.Addr == b.dev.Addr {
		return false
	}
	if shareZone(a.zones, b.zones) {
		return true
	}
	return defaultRule(ix.cfg.Settings, len(a.zones) == 0, len(b.zones) == 0)
}

// shareZone reports whether two sorted zone lists intersect.
func shareZone(a, b []zoneID) bool {
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] == b[0]:
			return true
		case a[0] < b[0]:
			a = a[1:]
		default:
			b = b[1:]
		}
	}
	return false
}

// Targets yields the targets the host at addr may see, in no particular
// order. Each target is yielded once; the cost is proportional to the
// number yielded (plus, for a host in several zones, a zone-list check per
// target). Nothing is yielded for an unknown address or a device that is
// no host. The index must not change during the iteration.
func (ix *Index) Targets(host netip.Addr) iter.Seq[inof.Device] {
	return ix.directed(host, inof.Role.IsHost, targetsOf)
}

// Hosts yields the hosts that may see the target at addr, like Targets.
func (ix *Index) Hosts(target netip.Addr) iter.Seq[inof.Device] {
	return ix.directed(target, inof.Role.IsTarget, hostsOf)
}

// HostsBound is an upper bound of how many hosts Hosts(target) yields, at
// a cost of O(the target's zones): a caller choosing between that
// iteration and a scan of its own hosts asks it first.
func (ix *Index) HostsBound(target netip.Addr) int {
	e := ix.devices.m[target]
	if e == nil || !e.dev.Role.IsTarget() {
		return 0
	}
	return ix.bound(e, hostsOf)
}

// TargetsFor returns Targets as a slice sorted by address; it costs
// O(k log k) for k targets.
func (ix *Index) TargetsFor(host netip.Addr) []inof.Device {
	return sortedDevices(ix.Targets(host))
}

// HostsFor returns Hosts as a slice sorted by address.
func (ix *Index) HostsFor(target netip.Addr) []inof.Device {
	return sortedDevices(ix.Hosts(target))
}

func sortedDevices(seq iter.Seq[inof.Device]) []inof.Device {
	return slices.SortedFunc(seq, func(a, b inof.Device) int { return a.Addr.Compare(b.Addr) })
}

// directed yields the peers of the device at addr on one side: it must
// satisfy self, and pick selects the peers' side of each class.
func (ix *Index) directed(addr netip.Addr, self func(inof.Role) bool, pick func(*group) map[netip.Addr]*entry) iter.Seq[inof.Device] {
	return func(yield func(inof.Device) bool) {
		e := ix.devices.m[addr]
		if e == nil || !self(e.dev.Role) {
			return
		}
		for _, g := range ix.classes(e) {
			for a, o := range pick(g.g) {
				if a == addr || (g.before > 0 && shareZone(ix.devices.m[a].zones, e.zones[:g.before])) {
					continue
				}
				if !yield(o.dev) {
					return
				}
			}
		}
	}
}

// seenClass is a class a device sees; a peer found in zone class number
// before > 0 that is also in one of the device's first before zones was
// already yielded.
type seenClass struct {
	g      *group
	before int
}

// classes lists the classes whose members e sees (roles aside). They are
// disjoint except for zones that share members.
func (ix *Index) classes(e *entry) []seenClass {
	out := make([]seenClass, 0, len(e.zones)+2)
	for i, z := range e.zones {
		out = append(out, seenClass{&ix.zones[z], i})
	}
	s := ix.cfg.Settings
	if !s.DefaultZoneEnabled {
		return out
	}
	if len(e.zones) == 0 {
		out = append(out, seenClass{g: &ix.unzoned})
		if !s.HardZoning {
			out = append(out, seenClass{g: &ix.zoned})
		}
	} else if !s.HardZoning {
		out = append(out, seenClass{g: &ix.unzoned})
	}
	return out
}

// bound is an upper bound of how many peers directed(e) yields.
func (ix *Index) bound(e *entry, pick func(*group) map[netip.Addr]*entry) int {
	n := 0
	for _, g := range ix.classes(e) {
		n += len(pick(g.g))
	}
	return n
}

// WithConfig returns an index of the same devices under c (which must not
// change while it is used). It shares with ix everything c does not change:
// a change of settings costs O(zones); a change of some zones or aliases
// costs one scan of the devices against the members of the changed zones,
// plus the work for the devices they hold. ix stays valid and unchanged.
func (ix *Index) WithConfig(c *Config) *Index {
	// Start afresh when there are too many retired ids, or for a first
	// zoning (no zones before, some now): every zoned device would move out
	// of the unzoned class one by one, at several times the cost of a new
	// index. An edit of a few zones derives, sharing the rest (and Diff's
	// shortcut for an unchanged device map).
	if retired := len(ix.names) - len(ix.ids); retired > 64 && retired > len(ix.ids) || len(ix.ids) == 0 && len(c.Zones) > 0 {
		return ix.afresh(c)
	}
	return ix.derive(c, changedZones(ix.cfg, c))
}

// afresh indexes ix's devices (valid: ix took them) under c.
func (ix *Index) afresh(c *Config) *Index {
	devs := make([]inof.Device, 0, ix.Len())
	for _, e := range ix.devices.m {
		devs = append(devs, e.dev)
	}
	nx, _ := NewIndex(c, devs)
	return nx
}

// derive is WithConfig sharing what c does not change; changed are the
// zones whose members may differ (changedZones).
func (ix *Index) derive(c *Config, changed []string) *Index {
	tok := new(int)
	nx := &Index{cfg: c, ids: ix.ids, names: ix.names, mt: ix.mt, tok: tok, devices: ix.devices,
		zones: slices.Clone(ix.zones), unzoned: ix.unzoned, zoned: ix.zoned}
	ix.tok = new(int) // ix no longer owns what nx shares
	if len(changed) == 0 {
		return nx
	}
	nx.mt = nil
	nx.ids = maps.Clone(ix.ids)
	nx.names = slices.Clone(ix.names)

	// Every device in a changed zone, before or after, is a candidate.
	cand := map[netip.Addr]*entry{}
	isChanged := map[zoneID]bool{}
	live := map[string]zoneID{} // changed zones of c
	for _, name := range changed {
		if id, ok := ix.ids[name]; ok {
			isChanged[id] = true
			for _, m := range []map[netip.Addr]*entry{ix.zones[id].hosts.m, ix.zones[id].targets.m} {
				for a := range m {
					cand[a] = ix.devices.m[a]
				}
			}
			delete(nx.ids, name)
			nx.names[id] = ""
			nx.zones[id] = newGroup(tok)
		}
		if c.Zones[name] == nil {
			continue
		}
		id, ok := ix.ids[name]
		if !ok {
			id = zoneID(len(nx.names))
			nx.names = append(nx.names, "")
			nx.zones = append(nx.zones, newGroup(tok))
		}
		nx.ids[name], nx.names[id], live[name] = id, name, id
		isChanged[id] = true
	}
	gained := map[netip.Addr][]zoneID{}
	if len(live) > 0 {
		small := newMatcher(c, live)
		for a, e := range ix.devices.m {
			if zs := small.zonesOf(e.dev); len(zs) > 0 {
				cand[a], gained[a] = e, zs
			}
		}
	}
	for a, e := range cand {
		zs := slices.DeleteFunc(slices.Clone(e.zones), func(z zoneID) bool { return isChanged[z] })
		zs = append(zs, gained[a]...)
		slices.Sort(zs)
		zs = slices.Compact(zs)
		ne := e
		if !slices.Equal(zs, e.zones) {
			ne = &entry{dev: e.dev, zones: zs}
			writable(nx, &nx.devices)[a] = ne
		}
		for _, z := range zs {
			if isChanged[z] {
				nx.zones[z].add(nx, ne)
			}
		}
		if (len(zs) == 0) != (len(e.zones) == 0) {
			if len(zs) == 0 {
				nx.zoned.remove(nx, e.dev)
				nx.unzoned.add(nx, ne)
			} else {
				nx.unzoned.remove(nx, e.dev)
				nx.zoned.add(nx, ne)
			}
		}
	}
	return nx
}

// changedZones lists, sorted, the zones of old or new whose membership may
// differ: added, deleted, edited, or using an alias that changed.
func changedZones(old, new *Config) []string {
	aliasChanged := func(name string) bool {
		a, b := old.Aliases[name], new.Aliases[name]
		return (a == nil) != (b == nil) || (a != nil && !slices.Equal(a.Members, b.Members))
	}
	var out []string
	for name, z := range new.Zones {
		o := old.Zones[name]
		if o == nil || !slices.Equal(o.Members, z.Members) ||
			slices.ContainsFunc(z.Members, func(m Member) bool { return m.Kind == MemberAlias && aliasChanged(m.Name) }) {
			out = append(out, name)
		}
	}
	for name := range old.Zones {
		if new.Zones[name] == nil {
			out = append(out, name)
		}
	}
	slices.SortFunc(out, cmp.Compare[string])
	return out
}
