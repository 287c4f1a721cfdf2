package zones

import (
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

func TestPropertyVisibility(t *testing.T) {
	visible, crossing := 0, 0
	for seed := range uint64(400) {
		g := gen{rand.New(rand.NewPCG(seed, 1))}
		c, ds := g.config(), g.devices()
		ix := NewIndex(c, ds)
		for _, a := range ds {
			var peers []netip.Addr
			for _, p := range ix.Peers(a.Addr) {
				peers = append(peers, p.Addr)
			}
			za := memberships(c, a)
			if got := ix.Zones(a.Addr); !slices.Equal(got, za) && !(len(got) == 0 && len(za) == 0) {
				t.Fatalf("seed %d: zones of %s: index %v, scan %v", seed, a.Addr, got, za)
			}
			for _, b := range ds {
				v := Visible(c, a, b)
				if v != Visible(c, b, a) {
					t.Fatalf("seed %d: not symmetric for %s, %s", seed, a, b)
				}
				if v != ix.CanSee(a.Addr, b.Addr) || v != slices.Contains(peers, b.Addr) {
					t.Fatalf("seed %d: %s/%s: Visible %v, CanSee %v, in Peers %v", seed, a, b, v, ix.CanSee(a.Addr, b.Addr), slices.Contains(peers, b.Addr))
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
					t.Fatalf("seed %d: %s sees %s across zones %v/%v without the default zone", seed, a, b, za, zb)
				case c.Settings.HardZoning && (len(za) > 0 || len(zb) > 0):
					t.Fatalf("seed %d: hard zoning crossed: %s %v sees %s %v", seed, a, za, b, zb)
				case len(za) > 0 && len(zb) > 0:
					t.Fatalf("seed %d: %s %v sees %s %v: custom zones crossed", seed, a, za, b, zb)
				}
				if !a.Role.Complements(b.Role) {
					t.Fatalf("seed %d: roles %s and %s see each other", seed, a.Role, b.Role)
				}
			}
			for _, tg := range ix.TargetsFor(a.Addr) {
				if !a.Role.IsHost() || !tg.Role.IsTarget() || !Visible(c, a, tg) {
					t.Fatalf("seed %d: TargetsFor(%s) returned %s", seed, a, tg)
				}
			}
			for _, h := range ix.HostsFor(a.Addr) {
				if !a.Role.IsTarget() || !h.Role.IsHost() || !Visible(c, a, h) {
					t.Fatalf("seed %d: HostsFor(%s) returned %s", seed, a, h)
				}
			}
		}
	}
	// Guard the generator: the cases must include visible pairs through
	// shared zones and through the default zone.
	if visible == 0 || crossing == 0 || crossing == visible {
		t.Fatalf("degenerate generator: %d visible pairs, %d through the default zone", visible, crossing)
	}
	t.Logf("%d visible ordered pairs checked, %d through the default zone", visible, crossing)
}

// TestPropertyDiff: applying Diff(old, new) to the old visible pairs gives
// exactly the new ones, and no change is reported twice or for nothing.
func TestPropertyDiff(t *testing.T) {
	total := 0
	for seed := range uint64(400) {
		g := gen{rand.New(rand.NewPCG(seed, 2))}
		old, ds := g.config(), g.devices()
		var next *Config
		if seed%4 == 0 {
			next = g.config() // an unrelated configuration
		} else {
			next = g.mutate(old)
		}
		changes := Diff(NewIndex(old, ds), NewIndex(next, ds))
		total += len(changes)
		have := visiblePairs(old, ds)
		want := visiblePairs(next, ds)
		for _, ch := range changes {
			k := hostTarget{ch.Host.Addr, ch.Target.Addr}
			if have[k] == ch.Visible {
				t.Fatalf("seed %d: change %+v is no change", seed, ch)
			}
			if ch.Visible {
				have[k] = true
			} else {
				delete(have, k)
			}
		}
		if len(have) != len(want) {
			t.Fatalf("seed %d: after diff %d pairs, want %d", seed, len(have), len(want))
		}
		for k := range want {
			if !have[k] {
				t.Fatalf("seed %d: pair %v missing after diff", seed, k)
			}
		}
	}
	if total == 0 {
		t.Fatal("degenerate generator: no visibility changes at all")
	}
	t.Logf("%d changes checked", total)
}

func TestIndexPutRemove(t *testing.T) {
	c := NewConfig(Settings{DefaultZoneEnabled: true, HardZoning: true})
	c.Zones["z"] = &Zone{Name: "z", Members: []Member{MustParseMember("10.0.0.0/30")}}
	h := inof.Device{Addr: netip.MustParseAddr("10.0.0.1"), Role: inof.RoleHost}
	tg := inof.Device{Addr: netip.MustParseAddr("10.0.0.2"), Role: inof.RoleTarget}
	free := inof.Device{Addr: netip.MustParseAddr("10.0.0.9"), Role: inof.RoleTarget}
	ix := NewIndex(c, []inof.Device{h, free})
	if len(ix.TargetsFor(h.Addr)) != 0 {
		t.Fatal("zoned host sees an unzoned target under hard zoning")
	}
	ix.Put(tg)
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
}
