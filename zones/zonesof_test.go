package zones

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/openinof/inof/inof"
)

// TestZonesOfMatchesIndexed checks that ZonesOf gives an unindexed device
// the zones the index gives it once it is put, for addresses, prefixes,
// ranges and NQNs, before and after a configuration change.
func TestZonesOfMatchesIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	members := []string{"10.0.0.1", "10.0.0.0/30", "10.0.0.2-10.0.0.5", "nqn.2014-08.org.example:t1", "10.0.1.0/24"}
	for seed := 0; seed < 100; seed++ {
		cfg := NewConfig(Settings{DefaultZoneEnabled: true})
		for _, z := range []string{"red", "blue", "green"} {
			zone := &Zone{Name: z}
			for _, m := range members {
				if rng.IntN(3) == 0 {
					zone.Members = append(zone.Members, MustParseMember(m))
				}
			}
			if len(zone.Members) > 0 {
				cfg.Zones[z] = zone
			}
		}
		ix, err := NewIndex(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			d := inof.Device{Addr: netip.AddrFrom4([4]byte{10, 0, byte(i / 6), byte(i%6 + 1)}), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
			if i%2 == 0 {
				d.NQN = "nqn.2014-08.org.example:t1"
			}
			before := ix.ZonesOf(d)
			if err := ix.Put(d); err != nil {
				t.Fatal(err)
			}
			if got := ix.Zones(d.Addr); !slices.Equal(before, got) {
				t.Fatalf("seed %d: %v: ZonesOf %v, indexed %v", seed, d, before, got)
			}
		}
	}
}

// TestRangeLookupMatchesScan checks the range index against a scan of
// every range, with overlapping and nested ranges of both families.
func TestRangeLookupMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	v4 := func(n int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(n >> 8), byte(n)}) }
	v6 := func(n int) netip.Addr {
		return netip.AddrFrom16([16]byte{0xfd, 0, 14: byte(n >> 8), 15: byte(n)})
	}
	for seed := 0; seed < 200; seed++ {
		cfg := NewConfig(Settings{DefaultZoneEnabled: true})
		type r struct {
			lo, hi netip.Addr
			zone   string
		}
		var all []r
		for z := range 1 + rng.IntN(12) {
			zone := &Zone{Name: fmt.Sprintf("z%d", z)}
			for range 1 + rng.IntN(3) {
				mk := v4
				if rng.IntN(3) == 0 {
					mk = v6
				}
				lo := rng.IntN(600)
				hi := lo + rng.IntN(1+rng.IntN(300))
				m := Member{Kind: MemberRange, Addr: mk(lo), Hi: mk(hi)}
				zone.Members = append(zone.Members, m)
				all = append(all, r{m.Addr, m.Hi, zone.Name})
			}
			cfg.Zones[zone.Name] = zone
		}
		ix, err := NewIndex(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 1000; n += 1 + rng.IntN(7) {
			for _, a := range []netip.Addr{v4(n), v6(n)} {
				var want []string
				for _, x := range all {
					if a.Is4() == x.lo.Is4() && !a.Less(x.lo) && !x.hi.Less(a) {
						want = append(want, x.zone)
					}
				}
				slices.Sort(want)
				want = slices.Compact(want)
				got := ix.ZonesOf(inof.Device{Addr: a, Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("seed %d: %v: index %v, scan %v", seed, a, got, want)
				}
			}
		}
	}
}

// BenchmarkZonesOfRanges: a device looked up against 1,000 zones made of
// address ranges (one /24-wide range each).
func BenchmarkZonesOfRanges(b *testing.B) {
	cfg := NewConfig(DefaultSettings())
	for z := range 1000 {
		lo := netip.AddrFrom4([4]byte{10, byte(z >> 8), byte(z), 1})
		hi := netip.AddrFrom4([4]byte{10, byte(z >> 8), byte(z), 254})
		cfg.Zones[fmt.Sprintf("r%04d", z)] = &Zone{Name: fmt.Sprintf("r%04d", z), Members: []Member{{Kind: MemberRange, Addr: lo, Hi: hi}}}
	}
	ix, err := NewIndex(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	d := inof.Device{Addr: netip.AddrFrom4([4]byte{10, 1, 200, 7}), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	b.ReportAllocs()
	for b.Loop() {
		if len(ix.ZonesOf(d)) != 1 {
			b.Fatal("device not in exactly one zone")
		}
	}
}
