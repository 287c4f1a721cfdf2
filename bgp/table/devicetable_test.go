package table

import (
	"fmt"
	"slices"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// forEachForm runs test on a compact table (a reflector's) and on a
// decoded one (a switch's): both must behave alike.
func forEachForm(t *testing.T, test func(*testing.T, DeviceTableOptions)) {
	for _, decoded := range []bool{false, true} {
		t.Run(fmt.Sprint("decoded=", decoded), func(t *testing.T) { test(t, DeviceTableOptions{Decoded: decoded}) })
	}
}

// setEvent is the event of set key (sw, 1, 0) holding devs; received
// makes it go through the wire codec, as a watch delivers it.
func setEvent(t *testing.T, sw inof.RouterID, received bool, devs ...record.Device) bgp.RecordEvent {
	t.Helper()
	r := &record.DeviceSet{Switch: sw, Set: 1, Devices: devs}
	if !received {
		return bgp.RecordEvent{Key: r.Key(), Record: r}
	}
	k, v, err := record.Encode(r, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := record.Decode(k, v)
	if err != nil {
		t.Fatal(err)
	}
	return bgp.RecordEvent{Key: k, Record: got}
}

// TestDeviceTableSetValues: a new value of a set key changes exactly the
// devices whose entries differ, whether the value was received (its
// entries' bytes kept as they came) or built here; a device moving to a
// new epoch within the set never seems gone; a set withdrawn takes its
// devices; entries refused while the table was full are taken by a later
// value once there is room.
func TestDeviceTableSetValues(t *testing.T) {
	for _, c := range []struct{ received, decoded bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		received := c.received
		t.Run(fmt.Sprintf("received=%v,decoded=%v", c.received, c.decoded), func(t *testing.T) {
			const sw = inof.RouterID(0x7f000002)
			tb := NewDeviceTable(DeviceTableOptions{MaxDevices: 4, Decoded: c.decoded})
			dev := func(i int, epoch uint64, st inof.State) record.Device {
				d := *bgptest.Device(sw, i)
				d.Epoch, d.State = epoch, st
				if st != inof.StateActive {
					d.Reason = inof.ReasonLinkDown
				}
				return d
			}
			apply := func(what string, want int, devs ...record.Device) []DeviceChange {
				t.Helper()
				chs := tb.Apply(nil, setEvent(t, sw, received, devs...))
				if len(chs) != want {
					t.Fatalf("%s: %d changes, want %d: %+v", what, len(chs), want, chs)
				}
				return chs
			}
			a, b, c := dev(1, 1, inof.StateActive), dev(2, 1, inof.StateActive), dev(3, 1, inof.StateActive)
			apply("first value", 3, a, b, c)
			apply("the same value again", 0, a, b, c)
			b2 := dev(2, 1, inof.StateInactive)
			if chs := apply("one entry changed", 1, a, b2, c); chs[0].ID != b.ID() || chs[0].Record.State != inof.StateInactive ||
				chs[0].Before.State != inof.StateActive {
				t.Fatalf("change %+v", chs[0])
			}
			if got, _ := tb.Get(b.ID()); got.State != inof.StateInactive || got.NQN != b.NQN || got.AccessPort != b.AccessPort {
				t.Fatalf("Get after the change: %+v", got)
			}
			// a moves to epoch 2 within the set: both entries, then the old one gone.
			a2 := dev(1, 2, inof.StateActive)
			a2.Device.Port = 4421
			if chs := apply("a at two epochs", 1, a, a2, b2, c); chs[0].Record.Epoch != 2 || chs[0].Record.Device.Port != 4421 {
				t.Fatalf("move: %+v", chs[0])
			}
			apply("a's old epoch gone", 0, a2, b2, c)
			if got, ok := tb.Get(a.ID()); !ok || got.Epoch != 2 {
				t.Fatalf("a after its move: %+v %v", got, ok)
			}
			// c leaves while active: vanished.
			if chs := apply("c gone", 1, a2, b2); chs[0].Record != nil || !chs[0].Vanished {
				t.Fatalf("c gone: %+v", chs[0])
			}
			// The table holds 4: d and e come, e is refused.
			d, e := dev(4, 1, inof.StateActive), dev(5, 1, inof.StateActive)
			apply("d and e, one refused", 2, a2, b2, c, d, e)
			if tb.Stats().Refused != 1 || tb.Len() != 4 {
				t.Fatalf("stats %+v, %d devices", tb.Stats(), tb.Len())
			}
			// Entries are put before those gone are removed: e finds room
			// only in the value after the one that drops c.
			apply("c gone again", 1, a2, b2, d, e)
			apply("the same value, e taken", 1, a2, b2, d, e)
			if _, ok := tb.Get(e.ID()); !ok || tb.Stats().Refused != 2 {
				t.Fatalf("e not taken once there was room (stats %+v)", tb.Stats())
			}
			if recs := tb.Records(); len(recs) != 4 || recs[0].Device.Addr != a2.Device.Addr || recs[0].Epoch != 2 {
				t.Fatalf("records %+v", recs)
			}
			chs := tb.Apply(nil, bgp.RecordEvent{Key: (&record.DeviceSet{Switch: sw, Set: 1}).Key(), Withdrawn: true})
			if len(chs) != 4 || tb.Len() != 0 {
				t.Fatalf("withdrawn set: %d changes, %d devices left", len(chs), tb.Len())
			}
		})
	}
}

// TestDeviceTableAcrossFormats: a device published by its own record and
// by a set entry of the same epoch reads the one written last, and keeps
// its record while either copy is there.
func TestDeviceTableAcrossFormats(t *testing.T) {
	forEachForm(t, testDeviceTableAcrossFormats)
}

func testDeviceTableAcrossFormats(t *testing.T, opts DeviceTableOptions) {
	const sw = inof.RouterID(0x7f000002)
	tb := NewDeviceTable(opts)
	d := *bgptest.Device(sw, 1)
	d.Epoch = 7
	own := d
	own.AccessPort = "swp9"
	if chs := tb.Apply(nil, bgp.RecordEvent{Key: own.Key(), Record: &own}); len(chs) != 1 {
		t.Fatalf("own record: %+v", chs)
	}
	if chs := tb.Apply(nil, setEvent(t, sw, true, d)); len(chs) != 1 || chs[0].Record.AccessPort != d.AccessPort {
		t.Fatalf("set entry of the same epoch: %+v", chs)
	}
	if chs := tb.Apply(nil, bgp.RecordEvent{Key: own.Key(), Withdrawn: true}); len(chs) != 0 {
		t.Fatalf("own record withdrawn while the set holds it: %+v", chs)
	}
	if got, ok := tb.Get(d.ID()); !ok || got.AccessPort != d.AccessPort {
		t.Fatalf("after the own record's withdraw: %+v %v", got, ok)
	}
}

// TestDecodedTableDecodesOnce: on a switch (a decoded table) each received
// record is decoded once, by the speaker, and never encoded or decoded
// again whatever it goes through (a new status, a higher epoch coming and
// going, a set's new values, its withdraw, the reads of the API); the
// compact table of a reflector decodes on demand for the same events, and
// both report the same changes.
func TestDecodedTableDecodesOnce(t *testing.T) {
	const sw = inof.RouterID(0x7f000002)
	received := 0 // decodes on the receive path, one per record
	recv := func(r record.Record) bgp.RecordEvent {
		k, v, err := record.Encode(r, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := record.Decode(k, v)
		if err != nil {
			t.Fatal(err)
		}
		received++
		return bgp.RecordEvent{Key: k, Record: got}
	}
	dev := func(i int, epoch uint64, st inof.State) *record.Device {
		d := bgptest.Device(sw, i)
		d.Epoch, d.State = epoch, st
		return d
	}
	set := func(devs ...*record.Device) *record.DeviceSet {
		s := &record.DeviceSet{Switch: sw, Set: 1}
		for _, d := range devs {
			s.Devices = append(s.Devices, *d)
		}
		return s
	}
	one := dev(1, 1, inof.StateActive)
	evs := []bgp.RecordEvent{
		recv(one),
		recv(dev(1, 1, inof.StateInactive)),        // a new status: the old one was read
		recv(dev(1, 2, inof.StateActive)),          // a new epoch
		{Key: dev(1, 2, 0).Key(), Withdrawn: true}, // gone: epoch 1 is current again
		recv(set(dev(2, 1, inof.StateActive), dev(3, 1, inof.StateActive), dev(4, 1, inof.StateActive))),
		recv(set(dev(2, 1, inof.StateActive), dev(3, 1, inof.StateInactive), dev(5, 1, inof.StateActive))),
		{Key: set().Key(), Withdrawn: true},
		{Key: one.Key(), Withdrawn: true},
	}
	compact, decoded := NewDeviceTable(DeviceTableOptions{}), NewDeviceTable(DeviceTableOptions{Decoded: true})
	for i, ev := range evs {
		a, b := compact.Apply(nil, ev), decoded.Apply(nil, ev)
		if !slices.EqualFunc(a, b, func(x, y DeviceChange) bool {
			return x.ID == y.ID && x.Vanished == y.Vanished && x.Had == y.Had && x.Before == y.Before &&
				(x.Record == nil) == (y.Record == nil) && (x.Record == nil || x.Record.Same(y.Record))
		}) {
			t.Fatalf("event %d: the compact table reports %+v, the decoded one %+v", i, a, b)
		}
		if i == 1 && len(b) != 1 {
			t.Fatalf("event %d: %d changes, want 1", i, len(b))
		}
		_, _ = decoded.Reports(), decoded.Records()
		_, _ = compact.Reports(), compact.Records()
	}
	if received != 5 {
		t.Fatalf("%d records received, want 5", received)
	}
	if n := decoded.Stats().Decodes; n != 0 {
		t.Fatalf("the decoded table decoded %d entries again after the speaker's %d decodes: a record decoded twice", n, received)
	}
	if compact.Stats().Decodes == 0 {
		t.Fatal("the compact table decoded nothing: the count does not see decodes")
	}
}
