package zones

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/openinof/inof/inof"
)

// fabric returns 100k devices (every tenth a target) in 1k zones of 100
// addresses each.
func fabric(devices, zones int) (*Config, []inof.Device) {
	c := NewConfig(DefaultSettings())
	ds := make([]inof.Device, devices)
	for i := range ds {
		role := inof.RoleHost
		if i%10 == 0 {
			role = inof.RoleTarget
		}
		ds[i] = inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), Role: role, Protocol: inof.ProtocolTCP}
	}
	per := devices / zones
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

func BenchmarkIndexBuild100k(b *testing.B) {
	c, ds := fabric(100_000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		NewIndex(c, ds)
	}
}

func BenchmarkIndexQuery100k(b *testing.B) {
	c, ds := fabric(100_000, 1000)
	ix := NewIndex(c, ds)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		host := ds[1+i%len(ds)/10*10]
		if len(ix.TargetsFor(host.Addr)) != 10 {
			b.Fatal("wrong answer")
		}
		i++
	}
}

// BenchmarkDiffOneMember: what a switch agent pays when one member moves:
// index the new configuration and diff it against the old one.
func BenchmarkDiffOneMember(b *testing.B) {
	c, ds := fabric(100_000, 1000)
	old := NewIndex(c, ds)
	next := c.Clone()
	z := next.Zones["zone0005"]
	z.Members = append(z.Members, Member{Kind: MemberAddr, Addr: ds[99_999].Addr})
	b.ReportAllocs()
	var changes []Change
	for b.Loop() {
		changes = Diff(old, NewIndex(next, ds))
	}
	if len(changes) != 10 {
		b.Fatalf("%d changes, want 10 (the moved host gains zone0005's targets)", len(changes))
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
