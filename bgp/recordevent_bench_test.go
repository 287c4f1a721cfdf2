package bgp

import (
	"context"
	"testing"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"
)

// watchedPath is a device record as a client's watch gets it from GoBGP:
// the attributes a switch sends plus those its reflector adds.
func watchedPath(tb testing.TB) *api.Path {
	tb.Helper()
	key, value, err := EncodeRecord(device(0x7f010001, 7), 1)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := opaquePath(key, value, []RouteTarget{ZoneRT(65000, "z0007")})
	if err != nil {
		tb.Fatal(err)
	}
	lp, err1 := anypb.New(&api.LocalPrefAttribute{LocalPref: 100})
	orig, err2 := anypb.New(&api.OriginatorIdAttribute{Id: "127.1.0.1"})
	cl, err3 := anypb.New(&api.ClusterListAttribute{Ids: []string{"127.0.0.1"}})
	if err1 != nil || err2 != nil || err3 != nil {
		tb.Fatal(err1, err2, err3)
	}
	p.Pattrs = append(p.Pattrs, lp, orig, cl)
	p.NeighborIp = "127.0.0.1"
	return p
}

// BenchmarkRecordEvent is the speaker's work per record a watch receives:
// reading GoBGP's protobuf path and decoding the record.
func BenchmarkRecordEvent(b *testing.B) {
	g, err := NewGoBGP(Options{Role: RoleClient, ASN: 65000, RouterID: addr("127.2.0.1")})
	if err != nil {
		b.Fatal(err)
	}
	p := watchedPath(b)
	b.ReportAllocs()
	for b.Loop() {
		if ev, ok := g.recordEvent(p, nil); !ok || ev.Record == nil || len(ev.RouteTargets) != 1 {
			b.Fatalf("%+v %v", ev, ok)
		}
	}
}

// BenchmarkDeviceTableApply is a receiving table's work per new device.
func BenchmarkDeviceTableApply(b *testing.B) {
	evs := make([]RecordEvent, 1<<16)
	for i := range evs {
		d := device(1, i)
		d.Epoch = 1
		evs[i] = RecordEvent{Key: d.Key(), Record: d}
	}
	b.ReportAllocs()
	t := NewDeviceTable(DeviceTableOptions{})
	i := 0
	var buf []DeviceChange
	for b.Loop() {
		if i == len(evs) {
			t, i = NewDeviceTable(DeviceTableOptions{}), 0
		}
		if buf = t.Apply(buf[:0], evs[i]); len(buf) != 1 {
			b.Fatal("no change")
		}
		i++
	}
}

// BenchmarkSetRecord measures building one shard's record (its devices
// sorted), what every send of a set costs before it is encoded: a shard as
// full as the churn benchmark's (~40 devices).
func BenchmarkSetRecord(b *testing.B) {
	// At most one send per change: within the send log's 64 tokens.
	pub, err := NewSetPublisher(SetPublisherOptions{Speaker: newSendLog(), Switch: testSwitch})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pub.Close)
	ctx, red := context.Background(), ZoneRT(testASN, "red")
	for i := range 40 {
		if err := pub.Publish(ctx, *device(testSwitch, 40-i), red); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	var s *shard
	for _, set := range pub.sets {
		s = set.shards[0]
	}
	b.ReportAllocs()
	for b.Loop() {
		pub.mu.Lock()
		r := pub.record(s)
		pub.mu.Unlock()
		if len(r.Devices) != 40 {
			b.Fatalf("%d devices in the record, want 40", len(r.Devices))
		}
	}
}
