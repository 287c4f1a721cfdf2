package zones

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/openinof/inof/inof"
)

// gen builds random configurations and device sets in a small address space
// (10.0.0.0/25 and a few NQNs) so that members overlap often.
type gen struct{ r *rand.Rand }

func (g gen) addr() netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + g.r.IntN(126))}) }

func (g gen) nqn() string { return fmt.Sprintf("nqn.2014-08.org.example:d%d", g.r.IntN(6)) }

func (g gen) member(aliases []string) Member {
	switch k := g.r.IntN(6); {
	case k == 0:
		lo := g.addr()
		hi := lo
		for range g.r.IntN(12) {
			if n := hi.Next(); n.As4()[3] < 127 {
				hi = n
			}
		}
		return Member{Kind: MemberRange, Addr: lo, Hi: hi}
	case k == 1:
		p, _ := g.addr().Prefix(26 + g.r.IntN(6))
		return Member{Kind: MemberPrefix, Prefix: p}
	case k == 2:
		return Member{Kind: MemberNQN, Name: g.nqn()}
	case k == 3 && len(aliases) > 0:
		return Member{Kind: MemberAlias, Name: aliases[g.r.IntN(len(aliases))]}
	default:
		return Member{Kind: MemberAddr, Addr: g.addr()}
	}
}

func (g gen) members(n int, aliases []string) []Member {
	var ms []Member
	for range n {
		if m := g.member(aliases); !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

func (g gen) config() *Config {
	c := NewConfig(Settings{DefaultZoneEnabled: g.r.IntN(2) == 0, HardZoning: g.r.IntN(2) == 0})
	var aliases []string
	for i := range g.r.IntN(3) {
		name := fmt.Sprintf("a%d", i)
		aliases = append(aliases, name)
		c.Aliases[name] = &Alias{Name: name, Members: g.members(1+g.r.IntN(3), nil)}
	}
	for i := range g.r.IntN(6) {
		name := fmt.Sprintf("z%d", i)
		c.Zones[name] = &Zone{Name: name, Members: g.members(1+g.r.IntN(5), aliases)}
	}
	return c
}

func (g gen) devices() []inof.Device {
	seen := map[netip.Addr]bool{}
	var ds []inof.Device
	for range 5 + g.r.IntN(40) {
		a := g.addr()
		if seen[a] {
			continue
		}
		seen[a] = true
		d := inof.Device{Addr: a, Role: inof.Role(1 + g.r.IntN(3)), Protocol: inof.ProtocolTCP}
		if g.r.IntN(3) == 0 {
			d.NQN = g.nqn()
		}
		ds = append(ds, d)
	}
	return ds
}

// mutate returns a copy of c with one or two random edits.
func (g gen) mutate(c *Config) *Config {
	n := c.Clone()
	for range 1 + g.r.IntN(2) {
		names := n.ZoneNames()
		switch k := g.r.IntN(5); {
		case k == 0:
			n.Settings.HardZoning = !n.Settings.HardZoning
		case k == 1 && len(names) > 0:
			delete(n.Zones, names[g.r.IntN(len(names))])
		case k == 2 && len(names) > 0:
			z := n.Zones[names[g.r.IntN(len(names))]]
			z.Members = append(z.Members, g.member(nil))
		case k == 3 && len(names) > 0:
			z := n.Zones[names[g.r.IntN(len(names))]]
			if len(z.Members) > 0 {
				z.Members = z.Members[1:]
			}
		default:
			name := fmt.Sprintf("n%d", g.r.IntN(1000))
			n.Zones[name] = &Zone{Name: name, Members: g.members(1+g.r.IntN(3), nil)}
		}
	}
	return n
}

// mutateDevices returns a changed copy of ds: devices disappear, appear
// (some dual-homed: a second address with an existing NQN), change role,
// or change NQN (and so, maybe, zones).
func (g gen) mutateDevices(ds []inof.Device) []inof.Device {
	out := make([]inof.Device, 0, len(ds)+4)
	have := map[netip.Addr]bool{}
	for _, d := range ds {
		switch g.r.IntN(8) {
		case 0:
			continue // gone
		case 1:
			d.Role = inof.Role(1 + g.r.IntN(3))
		case 2:
			d.NQN = g.nqn()
		}
		out = append(out, d)
		have[d.Addr] = true
	}
	for range g.r.IntN(6) {
		d := inof.Device{Addr: g.addr(), Role: inof.Role(1 + g.r.IntN(3)), Protocol: inof.ProtocolTCP, NQN: g.nqn()}
		if len(ds) > 0 && g.r.IntN(2) == 0 {
			twin := ds[g.r.IntN(len(ds))] // a second NIC of an existing device
			d.Role, d.NQN = twin.Role, twin.NQN
		}
		if !have[d.Addr] {
			out = append(out, d)
			have[d.Addr] = true
		}
	}
	return out
}

type hostTarget struct{ host, target netip.Addr }

// visiblePairs is the reference: every (host, target) pair by Visible.
func visiblePairs(c *Config, ds []inof.Device) map[hostTarget]bool {
	out := map[hostTarget]bool{}
	for _, h := range ds {
		for _, t := range ds {
			if h.Role.IsHost() && t.Role.IsTarget() && Visible(c, h, t) {
				out[hostTarget{h.Addr, t.Addr}] = true
			}
		}
	}
	return out
}

func mustIndex(t testing.TB, c *Config, ds []inof.Device) *Index {
	t.Helper()
	ix, err := NewIndex(c, ds)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func addrs(ds []inof.Device) []netip.Addr {
	out := make([]netip.Addr, len(ds))
	for i, d := range ds {
		out[i] = d.Addr
	}
	return out
}

// checkIndex compares every query of ix with the reference rule over ds.
func checkIndex(t *testing.T, what string, ix *Index, c *Config, ds []inof.Device) (visible, crossing int) {
	t.Helper()
	if ix.Len() != len(ds) {
		t.Fatalf("%s: index holds %d devices, want %d", what, ix.Len(), len(ds))
	}
	for _, a := range ds {
		za := memberships(c, a)
		if got := ix.Zones(a.Addr); !slices.Equal(got, za) && !(len(got) == 0 && len(za) == 0) {
			t.Fatalf("%s: zones of %s: index %v, scan %v", what, a.Addr, got, za)
		}
		var targets, hosts []netip.Addr
		for _, b := range ds {
			v := Visible(c, a, b)
			if v != Visible(c, b, a) {
				t.Fatalf("%s: not symmetric for %s, %s", what, a, b)
			}
			if v != ix.CanSee(a.Addr, b.Addr) {
				t.Fatalf("%s: %s/%s: Visible %v, CanSee %v", what, a, b, v, !v)
			}
			if v && a.Role.IsHost() && b.Role.IsTarget() {
				targets = append(targets, b.Addr)
			}
			if v && a.Role.IsTarget() && b.Role.IsHost() {
				hosts = append(hosts, b.Addr)
			}
			if !v {
				continue
			}
			zb := memberships(c, b)
			shared := slices.ContainsFunc(za, func(z string) bool { return slices.Contains(zb, z) })
			visible++
			if !shared {
				crossing++
			}
			switch {
			case shared:
			case !c.Settings.DefaultZoneEnabled:
				t.Fatalf("%s: %s sees %s across zones %v/%v without the default zone", what, a, b, za, zb)
			case c.Settings.HardZoning && (len(za) > 0 || len(zb) > 0):
				t.Fatalf("%s: hard zoning crossed: %s %v sees %s %v", what, a, za, b, zb)
			case len(za) > 0 && len(zb) > 0:
				t.Fatalf("%s: %s %v sees %s %v: custom zones crossed", what, a, za, b, zb)
			}
			if !a.Role.Complements(b.Role) {
				t.Fatalf("%s: roles %s and %s see each other", what, a.Role, b.Role)
			}
		}
		slices.SortFunc(targets, netip.Addr.Compare)
		slices.SortFunc(hosts, netip.Addr.Compare)
		if got := addrs(ix.TargetsFor(a.Addr)); !slices.Equal(got, targets) {
			t.Fatalf("%s: TargetsFor(%s) = %v, want %v", what, a, got, targets)
		}
		if got := addrs(ix.HostsFor(a.Addr)); !slices.Equal(got, hosts) {
			t.Fatalf("%s: HostsFor(%s) = %v, want %v", what, a, got, hosts)
		}
	}
	return visible, crossing
}

func TestPropertyVisibility(t *testing.T) {
	visible, crossing := 0, 0
	for seed := range uint64(400) {
		g := gen{rand.New(rand.NewPCG(seed, 1))}
		c, ds := g.config(), g.devices()
		v, x := checkIndex(t, fmt.Sprintf("seed %d", seed), mustIndex(t, c, ds), c, ds)
		visible, crossing = visible+v, crossing+x
	}
	// Guard the generator: the cases must include visible pairs through
	// shared zones and through the default zone.
	if visible == 0 || crossing == 0 || crossing == visible {
		t.Fatalf("degenerate generator: %d visible pairs, %d through the default zone", visible, crossing)
	}
	t.Logf("%d visible ordered pairs checked, %d through the default zone", visible, crossing)
}

// reach brings ix from the devices of from to those of to with Put and
// Remove.
func reach(t *testing.T, ix *Index, from, to []inof.Device) {
	t.Helper()
	keep := map[netip.Addr]bool{}
	for _, d := range to {
		keep[d.Addr] = true
		if err := ix.Put(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range from {
		if !keep[d.Addr] {
			ix.Remove(d.Addr)
		}
	}
}

// TestPropertyDiff: applying the changes Diff reports for every host to the
// old visible pairs gives exactly the new ones, and no change is reported
// twice or for nothing. Configurations and device sets both change: devices
// appear, disappear, change role or NQN, get a second address (dual-homed),
// and the two sides may hold unrelated device sets (a switch holds only the
// devices of the zones it subscribed to). The new index is built afresh or
// derived with WithConfig (then edited with Put and Remove), and deriving
// must leave the two indexes independent.
func TestPropertyDiff(t *testing.T) {
	total, appeared, gone, roles := 0, 0, 0, 0
	for seed := range uint64(600) {
		g := gen{rand.New(rand.NewPCG(seed, 2))}
		old, ds := g.config(), g.devices()
		var next *Config
		switch seed % 4 {
		case 0:
			next = g.config() // an unrelated configuration
		case 1:
			next = old.Clone()
			next.Settings = Settings{DefaultZoneEnabled: g.r.IntN(2) == 0, HardZoning: g.r.IntN(2) == 0}
		default:
			next = g.mutate(old)
		}
		var nds []inof.Device
		switch g.r.IntN(3) {
		case 0:
			nds = ds
		case 1:
			nds = g.mutateDevices(ds)
		default:
			nds = g.devices() // asymmetric: unrelated device sets
		}
		what := fmt.Sprintf("seed %d", seed)
		oix := mustIndex(t, old, ds)
		var nix *Index
		if g.r.IntN(2) == 0 {
			nix = mustIndex(t, next, nds)
		} else {
			nix = derived(g, oix, next)
			from := ds
			if g.r.IntN(2) == 0 { // edit the old index after deriving
				ds = g.mutateDevices(ds)
				reach(t, oix, from, ds)
			}
			checkIndex(t, what+" derived", nix, next, from)
			reach(t, nix, from, nds)
		}
		checkIndex(t, what+" new", nix, next, nds)
		checkIndex(t, what+" old after deriving", oix, old, ds)

		delta := Diff(oix, nix)
		have := visiblePairs(old, ds)
		want := visiblePairs(next, nds)
		hosts := map[netip.Addr]bool{}
		before := map[netip.Addr]inof.Device{}
		for _, d := range ds {
			hosts[d.Addr] = true
			before[d.Addr] = d
		}
		for _, d := range nds {
			hosts[d.Addr] = true
			switch b, ok := before[d.Addr]; {
			case !ok:
				appeared++
			case b.Role != d.Role:
				roles++
			}
			delete(before, d.Addr)
		}
		gone += len(before)
		for h := range hosts {
			changes := delta.For(h)
			total += len(changes)
			for _, ch := range changes {
				k := hostTarget{ch.Host.Addr, ch.Target.Addr}
				if ch.Host.Addr != h {
					t.Fatalf("%s: For(%s) returned %+v, for another host", what, h, ch)
				}
				if have[k] == ch.Visible {
					t.Fatalf("%s: change %+v is no change", what, ch)
				}
				if ch.Visible {
					have[k] = true
				} else {
					delete(have, k)
				}
			}
		}
		if len(have) != len(want) {
			t.Fatalf("%s: after diff %d pairs, want %d", what, len(have), len(want))
		}
		for k := range want {
			if !have[k] {
				t.Fatalf("%s: pair %v missing after diff", what, k)
			}
		}
	}
	if total == 0 || appeared == 0 || gone == 0 || roles == 0 {
		t.Fatalf("degenerate generator: %d changes, %d devices appeared, %d gone, %d changed role", total, appeared, gone, roles)
	}
	t.Logf("%d changes checked; %d devices appeared, %d disappeared, %d changed role", total, appeared, gone, roles)
}

func TestIndexPutRemove(t *testing.T) {
	c := NewConfig(Settings{DefaultZoneEnabled: true, HardZoning: true})
	c.Zones["z"] = &Zone{Name: "z", Members: []Member{MustParseMember("10.0.0.0/30")}}
	h := inof.Device{Addr: netip.MustParseAddr("10.0.0.1"), Role: inof.RoleHost}
	tg := inof.Device{Addr: netip.MustParseAddr("10.0.0.2"), Role: inof.RoleTarget}
	free := inof.Device{Addr: netip.MustParseAddr("10.0.0.9"), Role: inof.RoleTarget}
	ix := mustIndex(t, c, []inof.Device{h, free})
	if len(ix.TargetsFor(h.Addr)) != 0 {
		t.Fatal("zoned host sees an unzoned target under hard zoning")
	}
	if err := ix.Put(tg); err != nil {
		t.Fatal(err)
	}
	if got := ix.TargetsFor(h.Addr); len(got) != 1 || got[0] != tg {
		t.Fatalf("targets %v", got)
	}
	if got := ix.HostsFor(tg.Addr); len(got) != 1 || got[0] != h {
		t.Fatalf("hosts %v", got)
	}
	ix.Remove(tg.Addr)
	if len(ix.TargetsFor(h.Addr)) != 0 || ix.Len() != 2 {
		t.Fatal("removed target still visible")
	}
	for _, bad := range []inof.Device{
		{Addr: netip.MustParseAddr("10.0.0.3")},
		{Addr: netip.MustParseAddr("::ffff:10.0.0.3"), Role: inof.RoleHost},
		{Addr: netip.MustParseAddr("fe80::1%eth0"), Role: inof.RoleHost},
		{Role: inof.RoleHost},
	} {
		if err := ix.Put(bad); !errors.Is(err, ErrDevice) {
			t.Errorf("Put(%+v) = %v, want ErrDevice", bad, err)
		}
	}
	if ix.Len() != 2 {
		t.Fatal("a refused device was indexed")
	}
}

// derived returns ix under c by WithConfig or, as often, by derive
// itself: WithConfig starts afresh for a first zoning (which the generator
// makes often: a config of no zones) and when retired ids pile up, and the
// derived index must be checked as much.
func derived(g gen, ix *Index, c *Config) *Index {
	if g.r.IntN(2) == 0 {
		return ix.derive(c, changedZones(ix.cfg, c))
	}
	return ix.WithConfig(c)
}

// TestNewIndexLaterDeviceReplaces: NewIndex given two devices of one
// address keeps the later, as Put would, in every class.
func TestNewIndexLaterDeviceReplaces(t *testing.T) {
	c := NewConfig(Settings{DefaultZoneEnabled: true, HardZoning: true})
	c.Zones["z"] = &Zone{Name: "z", Members: []Member{MustParseMember("10.0.0.0/30")}}
	h := inof.Device{Addr: netip.MustParseAddr("10.0.0.1"), Role: inof.RoleHost}
	zoned := inof.Device{Addr: netip.MustParseAddr("10.0.0.2"), Role: inof.RoleTarget}
	asHost := inof.Device{Addr: zoned.Addr, Role: inof.RoleHost} // the same address, now a host
	ix := mustIndex(t, c, []inof.Device{h, zoned, asHost})
	if ix.Len() != 2 || len(ix.TargetsFor(h.Addr)) != 0 {
		t.Fatalf("%d devices, host sees %v; want 2 and nothing (the target became a host)", ix.Len(), ix.TargetsFor(h.Addr))
	}
	ix = mustIndex(t, c, []inof.Device{h, asHost, zoned})
	if got := ix.TargetsFor(h.Addr); ix.Len() != 2 || len(got) != 1 || got[0] != zoned {
		t.Fatalf("%d devices, host sees %v; want 2 and the target", ix.Len(), got)
	}
	checkIndex(t, "later replaces", ix, c, []inof.Device{h, zoned})
}

// TestPropertyDeriveChain: an index derived through a long chain of
// configurations (zones come and go, so retired zone ids pile up until the
// index starts afresh) answers like one built for the last configuration,
// and every Diff along the way is exact.
func TestPropertyDeriveChain(t *testing.T) {
	rebuilt := 0
	for seed := range uint64(4) {
		g := gen{rand.New(rand.NewPCG(seed, 4))}
		c, ds := g.config(), g.devices()
		ix := mustIndex(t, c, ds)
		for step := range 150 {
			next := g.mutate(c)
			if names := next.ZoneNames(); len(names) > 0 { // rename one: a retired id
				z := next.Zones[names[g.r.IntN(len(names))]]
				delete(next.Zones, z.Name)
				name := fmt.Sprintf("r%d", step)
				next.Zones[name] = &Zone{Name: name, Members: z.Members}
			}
			nx := derived(g, ix, next)
			what := fmt.Sprintf("seed %d step %d", seed, step)
			checkIndex(t, what, nx, next, ds)
			have, want := visiblePairs(c, ds), visiblePairs(next, ds)
			d := Diff(ix, nx)
			for _, h := range ds {
				for _, ch := range d.For(h.Addr) {
					have[hostTarget{ch.Host.Addr, ch.Target.Addr}] = ch.Visible
				}
			}
			for k, v := range have {
				if v != want[k] {
					t.Fatalf("%s: pair %v visible %v after diff, want %v", what, k, v, want[k])
				}
			}
			for k := range want {
				if !have[k] {
					t.Fatalf("%s: pair %v missing after diff", what, k)
				}
			}
			if len(nx.names) < len(ix.names) {
				rebuilt++
			}
			c, ix = next, nx
		}
	}
	if rebuilt == 0 {
		t.Fatal("degenerate chain: the index never started afresh")
	}
	t.Logf("the index started afresh %d times", rebuilt)
}
