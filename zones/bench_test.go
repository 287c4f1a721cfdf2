package zones

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/openinof/inof/inof"
)

// fabric returns n devices (every tenth a target) and zones custom zones of
// per devices each, taken from the start; the rest are unzoned (in the
// default zone). zoned: 100k devices in 1k zones of 100; mostly default:
// 100k devices, 1k zones of 10, 90k unzoned.
func fabric(n, zones, per int) (*Config, []inof.Device) {
	c := NewConfig(DefaultSettings())
	ds := make([]inof.Device, n)
	for i := range ds {
		role := inof.RoleHost
		if i%10 == 0 {
			role = inof.RoleTarget
		}
		ds[i] = inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), Role: role, Protocol: inof.ProtocolTCP}
	}
	for z := range zones {
		name := fmt.Sprintf("zone%04d", z)
		zz := &Zone{Name: name}
		for _, d := range ds[z*per : (z+1)*per] {
			zz.Members = append(zz.Members, Member{Kind: MemberAddr, Addr: d.Addr})
		}
		c.Zones[name] = zz
	}
	return c, ds
}

var fabrics = []struct {
	name       string
	zones, per int
}{{"zoned", 1000, 100}, {"mostly-default", 1000, 10}}

func BenchmarkIndexBuild100k(b *testing.B) {
	for _, f := range fabrics {
		b.Run(f.name, func(b *testing.B) {
			c, ds := fabric(100_000, f.zones, f.per)
			b.ReportAllocs()
			for b.Loop() {
				mustIndex(b, c, ds)
			}
		})
	}
}

// BenchmarkQuery100k: a host in a zone of 100 (10 targets); a host in a
// default zone of 90k devices (9k targets): CanSee, the lazy Targets
// iteration (reported per target) and the sorted TargetsFor.
func BenchmarkQuery100k(b *testing.B) {
	c, ds := fabric(100_000, 1000, 100)
	ix := mustIndex(b, c, ds)
	b.Run("zoned/TargetsFor", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			host := ds[1+i%len(ds)/10*10]
			if len(ix.TargetsFor(host.Addr)) != 10 {
				b.Fatal("wrong answer")
			}
			i++
		}
	})
	c, ds = fabric(100_000, 1000, 10)
	ix = mustIndex(b, c, ds)
	host, target := ds[50_001].Addr, ds[70_000].Addr
	b.Run("default/CanSee", func(b *testing.B) {
		for b.Loop() {
			if !ix.CanSee(host, target) {
				b.Fatal("wrong answer")
			}
		}
	})
	b.Run("default/Targets", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n = 0
			for range ix.Targets(host) {
				n++
			}
		}
		if n != 9000 {
			b.Fatalf("%d targets, want 9000", n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/target")
	})
	b.Run("default/TargetsFor", func(b *testing.B) {
		for b.Loop() {
			ix.TargetsFor(host)
		}
	})
}

// BenchmarkReconfigure: what a switch agent pays for a configuration
// change at 100k devices: derive the new index, diff it and expand the
// changes for 300 local hosts (one in every 300 devices, so in the
// mostly-default fabric 270 of them are unzoned). Edits: toggle hard
// zoning; add one member to a zone (in the mostly-default fabric an
// unzoned target, which 81k unzoned hosts lose).
func BenchmarkReconfigure(b *testing.B) {
	for _, f := range fabrics {
		c, ds := fabric(100_000, f.zones, f.per)
		var local []netip.Addr
		for i := 1; i < len(ds); i += 333 {
			local = append(local, ds[i].Addr)
		}
		toggle := c.Clone()
		toggle.Settings.HardZoning = false
		member := c.Clone()
		z := member.Zones["zone0005"]
		z.Members = append(z.Members, Member{Kind: MemberAddr, Addr: ds[99_990].Addr})
		for _, edit := range []struct {
			name string
			c    *Config
		}{{"toggle", toggle}, {"one-member", member}} {
			b.Run(f.name+"/"+edit.name, func(b *testing.B) {
				ix := mustIndex(b, c, ds)
				b.ReportAllocs()
				changes := 0
				for b.Loop() {
					d := Diff(ix, ix.WithConfig(edit.c))
					changes = 0
					for _, h := range local {
						changes += len(d.For(h))
					}
				}
				b.ReportMetric(float64(changes), "changes")
			})
		}
		// A switch's first zoning: its devices were indexed under none
		// (no zones, the default zone off) while it held the zoning it
		// received; every zone is new.
		b.Run(f.name+"/first-zoning", func(b *testing.B) {
			none := NewConfig(Settings{HardZoning: true})
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ix := mustIndex(b, none, ds)
				b.StartTimer()
				d := Diff(ix, ix.WithConfig(c))
				for _, h := range local {
					_ = d.For(h)
				}
			}
		})
	}
}

// BenchmarkToggleAllHosts is the case that was quadratic: n unzoned
// devices, hard zoning toggled (no pair changes), and the diff expanded for
// every host of the fabric, not only a switch's local ones.
func BenchmarkToggleAllHosts(b *testing.B) {
	for _, n := range []int{2000, 8000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, ds := fabric(n, 0, 0)
			toggle := c.Clone()
			toggle.Settings.HardZoning = false
			ix := mustIndex(b, c, ds)
			for b.Loop() {
				d := Diff(ix, ix.WithConfig(toggle))
				for _, h := range ds {
					if len(d.For(h.Addr)) != 0 {
						b.Fatal("a change without one")
					}
				}
			}
		})
	}
}

func BenchmarkCommit(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "z.db"), StoreOptions{RouterID: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tx := s.Begin()
	tx.CreateZone("bench")
	if _, err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		tx := s.Begin()
		tx.AddZoneMembers("bench", Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next()})
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCommitLarge: one member added to or removed from one zone in a
// store of 10,000 zones (Begin, the edit and Commit), the reflector's
// commit path at that size.
func BenchmarkCommitLarge(b *testing.B) {
	s := largeStore(b, b.TempDir())
	extra := MustParseMember("192.0.2.1")
	i := 0
	for b.Loop() {
		tx := s.Begin()
		var err error
		if i%2 == 0 {
			err = tx.AddZoneMembers("z05000", extra)
		} else {
			err = tx.RemoveZoneMembers("z05000", extra)
		}
		if err != nil {
			b.Fatal(err)
		}
		if rs, err := tx.Commit(); err != nil || len(rs) != 1 {
			b.Fatal(len(rs), err)
		}
		i++
	}
}

// BenchmarkApplyLarge: one record from a peer reflector merged into a
// store of 10,000 zones, the reflector's merge path at that size.
func BenchmarkApplyLarge(b *testing.B) {
	dir := b.TempDir()
	s := largeStore(b, dir)
	peer, err := Open(filepath.Join(dir, "peer.db"), StoreOptions{RouterID: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	i := 0
	for b.Loop() {
		tx := peer.Begin()
		if err := tx.CreateZone(fmt.Sprintf("p%07d", i), Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)})}); err != nil {
			b.Fatal(err)
		}
		rs, err := tx.Commit()
		if err != nil {
			b.Fatal(err)
		}
		if won, err := s.Apply(rs); err != nil || len(won) != 1 {
			b.Fatal(len(won), err)
		}
		i++
	}
}

// BenchmarkStoreRecord: what a reflector's sync loop pays per key it
// reconciles after a commit, in a store of 10,000 zones: a look-up
// (Record) against the copy and sort of every record it made before
// (Records, then a map by key).
func BenchmarkStoreRecord(b *testing.B) {
	s := largeStore(b, b.TempDir())
	k := Key{Kind: KindZone, Name: "z05000"}
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			if _, ok := s.Record(k); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("copy-all", func(b *testing.B) {
		for b.Loop() {
			m := map[Key]Record{}
			for _, r := range s.Records() {
				m[r.Key] = r
			}
			if _, ok := m[k]; !ok {
				b.Fatal("missing")
			}
		}
	})
}

// largeStore opens a store in dir holding 10,000 zones of one member each,
// closed when the benchmark ends.
func largeStore(b *testing.B, dir string) *Store {
	b.Helper()
	s, err := Open(filepath.Join(dir, "z.db"), StoreOptions{RouterID: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tx := s.Begin()
	for i := range 10000 {
		if err := tx.CreateZone(fmt.Sprintf("z%05d", i), Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return s
}
