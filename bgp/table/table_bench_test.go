package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// BenchmarkDeviceTableApply is a receiving table's work per new device.
func BenchmarkDeviceTableApply(b *testing.B) {
	evs := make([]bgp.RecordEvent, 1<<16)
	for i := range evs {
		d := bgptest.Device(1, i)
		d.Epoch = 1
		evs[i] = bgp.RecordEvent{Key: d.Key(), Record: d}
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
	ctx, red := context.Background(), record.ZoneRT(bgptest.ASN, "red")
	for i := range 40 {
		if err := pub.Publish(ctx, *bgptest.Device(testSwitch, 40-i), red); err != nil {
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

// BenchmarkDeviceTableUpdate is a receiving table's work per new status
// of a device it holds (the link down, link up of churn), in a reflector's
// compact table and a switch's decoded one.
func BenchmarkDeviceTableUpdate(b *testing.B) {
	const n = 1 << 12
	evs := make([]bgp.RecordEvent, 2*n)
	for i := range evs {
		d := bgptest.Device(1, i%n)
		d.Epoch = 1
		if i >= n {
			d.State, d.Reason = inof.StateInactive, inof.ReasonLinkDown
		}
		k, v, err := record.Encode(d, 1)
		if err != nil {
			b.Fatal(err)
		}
		r, err := record.Decode(k, v)
		if err != nil {
			b.Fatal(err)
		}
		evs[i] = bgp.RecordEvent{Key: k, Record: r}
	}
	for _, decoded := range []bool{false, true} {
		b.Run(fmt.Sprint("decoded=", decoded), func(b *testing.B) {
			t := NewDeviceTable(DeviceTableOptions{Decoded: decoded})
			var buf []DeviceChange
			for _, ev := range evs[:n] {
				buf = t.Apply(buf[:0], ev)
			}
			b.ReportAllocs()
			i := n
			for b.Loop() {
				if buf = t.Apply(buf[:0], evs[i]); len(buf) != 1 {
					b.Fatal("no change")
				}
				i = (i + 1) % len(evs)
			}
		})
	}
}
