package switchagent

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// BenchmarkTargetsRecord is the merged table's work per new record, as
// Engine.Record does it: read, store, read again.
func BenchmarkTargetsRecord(b *testing.B) {
	recs := make([]inof.Report, 1<<16)
	for i := range recs {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		recs[i] = inof.Report{Switch: inof.RouterID(i % 100), Device: inof.Device{Addr: a, Role: inof.RoleHost, Protocol: inof.ProtocolTCP},
			Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(1000)}}
	}
	b.ReportAllocs()
	t := NewTargets()
	i := 0
	for b.Loop() {
		if i == len(recs) {
			t, i = NewTargets(), 0
		}
		r := recs[i]
		before, _ := t.Get(r.Device.Addr)
		t.Put(r)
		if after, _ := t.Get(r.Device.Addr); after == before {
			b.Fatal("no change")
		}
		i++
	}
}
