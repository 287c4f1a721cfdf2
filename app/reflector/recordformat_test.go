package reflector

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// formatClient is a fake switch that can announce what it reads and
// watches the configuration records.
func formatClient(t *testing.T, f *bgp.FakeFabric, id string, reflectors ...string) (*bgp.FakeSpeaker, *clientView, *atomic.Int32) {
	t.Helper()
	s := clientSpeaker(t, f, id, reflectors...)
	ctx := context.Background()
	v := newClientView()
	var switchRecords atomic.Int32
	if err := s.WatchRecords(ctx, func(ev bgp.RecordEvent) {
		if _, ok := ev.Record.(*record.Switch); ok && !ev.Local() {
			switchRecords.Add(1)
		}
		v.apply(ev)
	}); err != nil {
		t.Fatal(err)
	}
	return s, v, &switchRecords
}

func announce(t *testing.T, s *bgp.FakeSpeaker, id string, reads uint32) {
	t.Helper()
	rec := &record.Switch{Switch: inof.MustParseRouterID(id), Reads: reads}
	if err := s.Publish(context.Background(), rec, record.SwitchInfoRT); err != nil {
		t.Fatal(err)
	}
}

// formatOf returns the record format the client holds (0 if none).
func formatOf(v *clientView) record.Format {
	for _, c := range v.keys {
		if configsync.KindOf(c) == configsync.KindRecordFormat {
			f, _ := configsync.DecodeRecordFormat(c.Payload)
			return f
		}
	}
	return 0
}

// TestRecordFormatWaitsForEverySwitch: "sets" is refused, naming the
// switches behind, until every configured switch announced that it reads
// device sets (one that announced without the bit counts as behind); then
// it is accepted, reaches the switches as a configuration record, is
// adopted by the other reflector and survives a restart. A switch record
// never reaches another switch.
func TestRecordFormatWaitsForEverySwitch(t *testing.T) {
	const sw1, sw2 = "10.0.1.1", "10.0.1.2"
	f := bgp.NewFakeFabric()
	o1 := testOptions(t, r1ID, []string{r2ID}, []string{sw1, sw2})
	o2 := testOptions(t, r2ID, []string{r1ID}, []string{sw1, sw2})
	r1 := startReflector(t, Config{Options: o1, NewSpeaker: fakeSpeakers(f, nil)})
	r2 := startReflector(t, Config{Options: o2, NewSpeaker: fakeSpeakers(f, nil)})
	s1, v1, seen1 := formatClient(t, f, sw1, r1ID, r2ID)
	s2, _, _ := formatClient(t, f, sw2, r1ID, r2ID)
	if err := s1.Subscribe(context.Background(), record.AnyRT); err != nil { // would get every record but switch records
		t.Fatal(err)
	}
	ctx := context.Background()

	st, err := r1.RecordFormat()
	if err != nil || st.Format != "per-device" || len(st.Switches) != 2 || st.Switches[0].Announced {
		t.Fatalf("before anything: %+v %v", st, err)
	}
	announce(t, s1, sw1, record.SwitchReadsDeviceSets)
	announce(t, s2, sw2, 0) // an announcement without the bit: behind
	waitCond(t, "both announcements at r1", func() bool {
		st, _ := r1.RecordFormat()
		return st.Switches[0].Announced && st.Switches[1].Announced
	})
	err = r1.SetRecordFormat(ctx, "sets")
	if !errors.Is(err, api.ErrFormatRefused) || !strings.Contains(err.Error(), sw2) || strings.Contains(err.Error(), sw1+",") {
		t.Fatalf("sets with %s behind: %v", sw2, err)
	}
	if err := r1.SetRecordFormat(ctx, "bogus"); !errors.Is(err, api.ErrFormatRefused) {
		t.Fatalf("unknown format: %v", err)
	}
	if st, _ := r1.RecordFormat(); st.Format != "per-device" {
		t.Fatalf("format changed by a refused call: %+v", st)
	}

	announce(t, s2, sw2, record.SwitchReadsDeviceSets)
	waitCond(t, "sw2 reads sets at r1", func() bool { st, _ := r1.RecordFormat(); return st.Switches[1].ReadsSets })
	if err := r1.SetRecordFormat(ctx, "sets"); err != nil {
		t.Fatal(err)
	}
	v1.waitFor(t, "the record format at the switch", func(v *clientView) bool { return formatOf(v) == record.FormatSets })
	waitCond(t, "r2 adopts sets", func() bool { st, _ := r2.RecordFormat(); return st.Format == "sets" })
	if n := seen1.Load(); n != 0 {
		t.Fatalf("%d switch records reached a switch", n)
	}

	if err := r1.testStop(); err != nil {
		t.Fatal(err)
	}
	r1b := startReflector(t, Config{Options: o1, NewSpeaker: fakeSpeakers(bgp.NewFakeFabric(), nil)})
	if st, _ := r1b.RecordFormat(); st.Format != "sets" {
		t.Fatalf("after a restart: %+v", st)
	}
	// Back to per-device is always accepted.
	if err := r1b.SetRecordFormat(ctx, "per-device"); err != nil {
		t.Fatal(err)
	}
}
