package zones

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkCommitToggle commits one member added to or removed from a
// zone of n members (each commit rewrites the zone's record and, since
// issue #30, journals the record it replaces), reporting latency
// percentiles.
func BenchmarkCommitToggle(b *testing.B) {
	for _, n := range []int{10, 5000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "z.db"), StoreOptions{RouterID: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ms := make([]Member, n)
			for i := range ms {
				ms[i] = Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next()}
			}
			tx := s.Begin()
			if err := tx.CreateZone("bench", ms...); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			extra := MustParseMember("192.0.2.1")
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				tx := s.Begin()
				if i%2 == 0 {
					err = tx.AddZoneMembers("bench", extra)
				} else {
					err = tx.RemoveZoneMembers("bench", extra)
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkBackup takes a backup of a store holding 20 zones of 5,000
// members and a full journal of 100 entries.
func BenchmarkBackup(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "z.db"), StoreOptions{RouterID: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for z := range 20 {
		ms := make([]Member, 5000)
		for i := range ms {
			ms[i] = Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(z), byte(i >> 8), byte(i)}).Next()}
		}
		tx := s.Begin()
		if err := tx.CreateZone(fmt.Sprintf("z%d", z), ms...); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	extra := MustParseMember("192.0.2.1")
	for i := range 100 {
		tx := s.Begin()
		name := fmt.Sprintf("z%d", i%20)
		if i%40 < 20 {
			err = tx.AddZoneMembers(name, extra)
		} else {
			err = tx.RemoveZoneMembers(name, extra)
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	var size int64
	for b.Loop() {
		var buf bytes.Buffer
		if size, err = s.Backup(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}
