package table

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// deviceView feeds a DeviceTable from a watch and keeps every change.
type deviceView struct {
	mu      sync.Mutex
	cond    *sync.Cond
	table   *DeviceTable
	history map[record.DeviceID][]DeviceChange
}

func newDeviceView() *deviceView {
	v := &deviceView{table: NewDeviceTable(DeviceTableOptions{Decoded: true}), history: map[record.DeviceID][]DeviceChange{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *deviceView) apply(e bgp.RecordEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, ch := range v.table.Apply(nil, e) {
		v.history[ch.ID] = append(v.history[ch.ID], ch)
	}
	v.cond.Broadcast()
}

// waitFor waits until cond holds (or fails after a bound only a broken
// fabric reaches).
func (v *deviceView) waitFor(t testing.TB, what string, cond func(t *DeviceTable) bool) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !bgptest.WaitCond(v.cond, func() bool { return cond(v.table) }) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func (v *deviceView) historyCopy() map[record.DeviceID][]DeviceChange {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[record.DeviceID][]DeviceChange, len(v.history))
	for id, chs := range v.history {
		out[id] = slices.Clone(chs)
	}
	return out
}

func (v *deviceView) changes(id record.DeviceID) []DeviceChange {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.history[id])
}

func TestDeviceRecordValidatedOnEncode(t *testing.T) {
	good := bgptest.Device(1, 1)
	if _, _, err := record.Encode(good, 1); err != nil {
		t.Fatal(err)
	}
	bad := []func(d *record.Device){
		func(d *record.Device) { d.Device.Role = inof.RoleUnknown },
		func(d *record.Device) { d.Device.Role = 9 },
		func(d *record.Device) { d.Device.Protocol = inof.ProtocolUnknown },
		func(d *record.Device) { d.State = 2 },
		func(d *record.Device) { d.Reason = inof.ReasonBFDDown + 1 },
		func(d *record.Device) { d.Device.Addr = netip.Addr{} },
		func(d *record.Device) { d.Device.Addr = netip.MustParseAddr("0.0.0.0") },
		func(d *record.Device) { d.Device.Addr = netip.MustParseAddr("ff02::1") },
	}
	for i, mut := range bad {
		d := *good
		mut(&d)
		if _, _, err := record.Encode(&d, 1); !errors.Is(err, record.ErrMalformed) {
			t.Errorf("case %d (%+v): encode error %v, want ErrMalformed", i, d.Device, err)
		}
		// The same record forced onto the wire is what receivers refuse.
		if k, v, err := forceEncode(&d); err == nil {
			if _, err := record.Decode(k, v); !errors.Is(err, record.ErrMalformed) {
				t.Errorf("case %d: decoder accepts what the encoder refuses: %v", i, err)
			}
		}
	}
}

// forceEncode encodes a device record without validation, as a peer with
// a lax encoder would.
func forceEncode(d *record.Device) ([]byte, []byte, error) {
	if !d.Device.Addr.IsValid() {
		return nil, nil, errors.New("no address to encode")
	}
	ok := *d
	ok.Device.Role, ok.Device.Protocol, ok.State, ok.Reason = inof.RoleTarget, inof.ProtocolTCP, inof.StateActive, inof.ReasonNone
	ok.Device.Addr = netip.MustParseAddr("10.0.0.1")
	v, err := ok.MarshalValue()
	if err != nil {
		return nil, nil, err
	}
	v[2], v[3], v[6], v[7] = byte(d.Device.Role), byte(d.Device.Protocol), byte(d.State), byte(d.Reason)
	return d.Key(), v, nil
}

func TestParseDeviceKey(t *testing.T) {
	d := bgptest.Device(0x0a000001, 5)
	d.Epoch = 1<<40 + 3
	k, err := record.ParseDeviceKey(d.Key())
	if err != nil || k != (record.DeviceKey{DeviceID: d.ID(), Epoch: d.Epoch}) {
		t.Fatalf("%+v %v", k, err)
	}
	for _, bad := range [][]byte{nil, {2}, d.Key()[:len(d.Key())-1], append(d.Key(), 0)} {
		if _, err := record.ParseDeviceKey(bad); !errors.Is(err, record.ErrMalformed) {
			t.Errorf("key %x: %v", bad, err)
		}
	}
}

func devEvent(d record.Device, epoch uint64, st inof.State) bgp.RecordEvent {
	d.Epoch, d.State = epoch, st
	return bgp.RecordEvent{Key: d.Key(), Record: &d}
}

func devWithdraw(d record.Device, epoch uint64) bgp.RecordEvent {
	d.Epoch = epoch
	return bgp.RecordEvent{Key: d.Key(), Withdrawn: true}
}

// applyOne applies an event of one device record and returns its change.
func applyOne(t testing.TB, tb *DeviceTable, ev bgp.RecordEvent) (DeviceChange, bool) {
	t.Helper()
	chs := tb.Apply(nil, ev)
	switch len(chs) {
	case 0:
		return DeviceChange{}, false
	case 1:
		return chs[0], true
	}
	t.Fatalf("event %+v: %d changes from one device record", ev, len(chs))
	return DeviceChange{}, false
}

// TestDeviceTable: the highest epoch present is the device's record; a
// device whose last record is withdrawn while active has vanished, one
// published inactive first has left; bounds are counted.
func TestDeviceTable(t *testing.T) {
	forEachForm(t, testDeviceTable)
}

func testDeviceTable(t *testing.T, opts DeviceTableOptions) {
	d := *bgptest.Device(1, 1)
	opts.MaxDevices = 2
	tb := NewDeviceTable(opts)
	step := func(ev bgp.RecordEvent, wantChange bool, check func(DeviceChange) bool) {
		t.Helper()
		ch, ok := applyOne(t, tb, ev)
		if ok != wantChange || (ok && !check(ch)) {
			t.Fatalf("event %+v: change %v %+v", ev, ok, ch)
		}
	}
	epoch := func(e uint64) func(DeviceChange) bool {
		return func(ch DeviceChange) bool { return ch.Record != nil && ch.Record.Epoch == e }
	}
	step(devEvent(d, 1, inof.StateActive), true, epoch(1))
	step(devEvent(d, 1, inof.StateActive), false, nil)
	step(devEvent(d, 2, inof.StateActive), true, epoch(2))
	step(devEvent(d, 1, inof.StateInactive), false, nil) // the old epoch retires unseen
	step(devWithdraw(d, 1), false, nil)
	step(devWithdraw(d, 2), true, func(ch DeviceChange) bool { return ch.Record == nil && ch.Vanished && ch.ID == d.ID() })
	step(devEvent(d, 3, inof.StateActive), true, epoch(3))
	step(devEvent(d, 3, inof.StateInactive), true, func(ch DeviceChange) bool { return ch.Record.State == inof.StateInactive })
	step(devWithdraw(d, 3), true, func(ch DeviceChange) bool { return ch.Record == nil && !ch.Vanished })
	if n := tb.Len(); n != 0 {
		t.Fatalf("%d devices held after the last withdraw", n)
	}
	step(bgp.RecordEvent{Key: []byte{9}, Withdrawn: true}, false, nil)
	step(bgp.RecordEvent{Key: (&record.Config{Reflector: 1}).Key(), Record: &record.Config{Reflector: 1}}, false, nil)

	for i := range 6 {
		tb.Apply(nil, devEvent(d, uint64(10+i), inof.StateActive))
	}
	if got, _ := tb.Get(d.ID()); got.Epoch != 15 || tb.Stats().Evicted != 6-maxEpochs {
		t.Fatalf("epoch bound: current %d, stats %+v", got.Epoch, tb.Stats())
	}
	tb.Apply(nil, devEvent(*bgptest.Device(1, 2), 1, inof.StateActive))
	if _, ok := applyOne(t, tb, devEvent(*bgptest.Device(1, 3), 1, inof.StateActive)); ok || tb.Stats().Refused != 1 || len(tb.Reports()) != 2 || tb.Len() != 2 {
		t.Fatalf("device bound: stats %+v, %d devices", tb.Stats(), len(tb.Reports()))
	}
}

// retagViews are the receivers of the re-tag scenario.
type retagViews struct {
	red, blue, both *deviceView
}

// testRetag publishes a device in zone red, then moves it to zone blue
// only, through a DevicePublisher on a. Receivers subscribed to red only
// must see it inactive (zone change) and then gone, never vanished; those
// in both zones must never lose it; those in blue only must get it. A
// marker record in both zones, published after each step, tells when
// every receiver has seen the step.
func testRetag(t *testing.T, a RecordPublisher, sw inof.RouterID, v retagViews) {
	t.Helper()
	pub, err := NewDevicePublisher(DevicePublisherOptions{Speaker: a})
	if err != nil {
		t.Fatal(err)
	}
	testRetagWith(t, pub, func() {}, sw, v, true)
}

// devicePublishing is what DevicePublisher and SetPublisher share.
type devicePublishing interface {
	Publish(ctx context.Context, rec record.Device, rts ...record.RouteTarget) error
	Withdraw(ctx context.Context, id record.DeviceID) error
}

// testRetagSets runs the re-tag scenario through a SetPublisher.
func testRetagSets(t *testing.T, a RecordPublisher, sw inof.RouterID, v retagViews) {
	t.Helper()
	pub, err := NewSetPublisher(SetPublisherOptions{Speaker: a, Switch: sw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	flush := func() {
		if err := pub.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	testRetagWith(t, pub, flush, sw, v, false)
}

// testRetagWith is the scenario for one publisher; flush waits until what
// it was given went out, and keepsEpoch says that adding a zone keeps a
// device's epoch (per-device records; in sets the device moves to another
// set under a new epoch).
func testRetagWith(t *testing.T, pub devicePublishing, flush func(), sw inof.RouterID, v retagViews, keepsEpoch bool) {
	t.Helper()
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	rec, marker := *bgptest.Device(sw, 1), *bgptest.Device(sw, 2)
	all := []*deviceView{v.red, v.blue, v.both}
	step := func(n uint16) {
		t.Helper()
		flush() // the device's changes go out before the marker
		marker.Device.Port = n
		if err := pub.Publish(ctx, marker, red, blue); err != nil {
			t.Fatal(err)
		}
		for _, dv := range all {
			dv.waitFor(t, "marker", func(tb *DeviceTable) bool {
				m, ok := tb.Get(marker.ID())
				return ok && m.Device.Port == n
			})
		}
	}
	if err := pub.Publish(ctx, rec, red); err != nil {
		t.Fatal(err)
	}
	step(1)
	first, ok := v.both.table.Get(rec.ID())
	if _, inRed := v.red.table.Get(rec.ID()); !ok || !inRed {
		t.Fatal("device missing in zone red")
	}
	if _, inBlue := v.blue.table.Get(rec.ID()); inBlue {
		t.Fatal("device in zone blue before the move")
	}

	if err := pub.Publish(ctx, rec, blue); err != nil {
		t.Fatal(err)
	}
	step(2)
	if got, ok := v.red.table.Get(rec.ID()); ok {
		t.Fatalf("red-only receiver still holds the device: %+v", got)
	}
	h := v.red.changes(rec.ID())
	if n := len(h); n < 2 || h[n-1].Record != nil || h[n-1].Vanished ||
		h[n-2].Record == nil || h[n-2].Record.State != inof.StateInactive || h[n-2].Record.Reason != inof.ReasonZoneChange {
		t.Fatalf("red-only receiver's changes: %+v", h)
	}
	for _, ch := range v.both.changes(rec.ID()) {
		if ch.Record == nil || ch.Record.State != inof.StateActive {
			t.Fatalf("receiver in both zones saw %+v", ch)
		}
	}
	now, ok := v.both.table.Get(rec.ID())
	if !ok || now.Epoch <= first.Epoch {
		t.Fatalf("both zones: epoch %d after %d", now.Epoch, first.Epoch)
	}
	if got, ok := v.blue.table.Get(rec.ID()); !ok || got.State != inof.StateActive || got.Epoch != now.Epoch {
		t.Fatalf("blue-only receiver: %+v %v", got, ok)
	}

	// Adding a zone keeps the epoch; withdrawing removes it everywhere.
	if err := pub.Publish(ctx, rec, blue, red); err != nil {
		t.Fatal(err)
	}
	step(3)
	if got, ok := v.red.table.Get(rec.ID()); !ok || got.State != inof.StateActive || (keepsEpoch && got.Epoch != now.Epoch) {
		t.Fatalf("red-only receiver after adding red again: %+v %v", got, ok)
	}
	for _, ch := range v.blue.changes(rec.ID()) {
		if ch.Record == nil || ch.Record.State != inof.StateActive {
			t.Fatalf("blue-only receiver saw %+v while red was added", ch)
		}
	}
	if err := pub.Withdraw(ctx, rec.ID()); err != nil {
		t.Fatal(err)
	}
	step(4)
	for _, dv := range all {
		if _, ok := dv.table.Get(rec.ID()); ok {
			t.Fatal("device still held after its withdrawal")
		}
	}
}

// TestFakeRetag runs the re-tag scenario on the fake fabric.
func TestFakeRetag(t *testing.T) {
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}, "127.0.0.4": {blue}, "127.0.0.5": {red, blue}})
	testRetag(t, cs["127.0.0.2"], 0x7f000002, retagViews{red: cs["127.0.0.3"].dev, blue: cs["127.0.0.4"].dev, both: cs["127.0.0.5"].dev})
}

// TestFakeRetagSets runs the re-tag scenario through device sets on the
// fake fabric.
func TestFakeRetagSets(t *testing.T) {
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}, "127.0.0.4": {blue}, "127.0.0.5": {red, blue}})
	testRetagSets(t, cs["127.0.0.2"], 0x7f000002, retagViews{red: cs["127.0.0.3"].dev, blue: cs["127.0.0.4"].dev, both: cs["127.0.0.5"].dev})
}

// testRetagGap shows the speaker-level behaviour that DevicePublisher works
// around: the same key published again with a route target the receiver
// does not want leaves the receiver with the old value.
func testRetagGap(t *testing.T, a RecordPublisher, sw inof.RouterID, redOnly *bgptest.RecordView) {
	t.Helper()
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	rec := bgptest.Device(sw, 10)
	if err := a.Publish(ctx, rec, red); err != nil {
		t.Fatal(err)
	}
	moved := *rec
	moved.Device.Port = 9999
	if err := a.Publish(ctx, &moved, blue); err != nil {
		t.Fatal(err)
	}
	marker := bgptest.Device(sw, 11)
	if err := a.Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	redOnly.WaitFor(t, "marker", bgptest.HasKey(marker.Key()))
	got, ok := redOnly.Get(rec.Key())
	if d, isDev := got.Record.(*record.Device); !ok || !isDev || d.Device.Port != rec.Device.Port {
		t.Fatalf("red-only receiver: %+v %v (the speaker is expected to leave the old value)", got, ok)
	}
}

func TestFakeRetagGap(t *testing.T) {
	red := record.ZoneRT(bgptest.ASN, "red")
	cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	testRetagGap(t, cs["127.0.0.2"], 0x7f000002, cs["127.0.0.3"].View)
}

// TestFakeRepublishAfterRestart: a switch agent that restarts republishes
// its saved records under their saved epochs; a zone move after that
// retires the old epoch as usual. Without the saved epochs the new
// publisher would start a fresh epoch and the red-only receiver would keep
// the old one, active, for ever.
func TestFakeRepublishAfterRestart(t *testing.T) {
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	sp, redOnly := cs["127.0.0.2"], cs["127.0.0.3"].dev
	before, err := NewDevicePublisher(DevicePublisherOptions{Speaker: sp})
	if err != nil {
		t.Fatal(err)
	}
	rec := *bgptest.Device(0x7f000002, 1)
	if err := before.Publish(ctx, rec, red); err != nil {
		t.Fatal(err)
	}
	redOnly.waitFor(t, "device", func(tb *DeviceTable) bool { _, ok := tb.Get(rec.ID()); return ok })
	saved := before.Published()
	if len(saved) != 1 || saved[0].Record.Epoch == 0 || !slices.Equal(saved[0].RouteTargets, []record.RouteTarget{red}) {
		t.Fatalf("saved %+v", saved)
	}

	after, err := NewDevicePublisher(DevicePublisherOptions{Speaker: sp, Clock: inof.NewClock(func() time.Time { return time.UnixMilli(1) })})
	if err != nil {
		t.Fatal(err)
	}
	if err := after.Republish(ctx, saved); err != nil {
		t.Fatal(err)
	}
	if err := after.Publish(ctx, rec, blue); err != nil {
		t.Fatal(err)
	}
	redOnly.waitFor(t, "the device to leave zone red", func(tb *DeviceTable) bool { _, ok := tb.Get(rec.ID()); return !ok })
	for _, ch := range redOnly.changes(rec.ID()) {
		if ch.Vanished {
			t.Fatalf("red-only receiver saw the device vanish: %+v", redOnly.changes(rec.ID()))
		}
	}
	if got := after.Published(); len(got) != 1 || got[0].Record.Epoch <= saved[0].Record.Epoch {
		t.Fatalf("after the move: %+v (epoch must pass the saved %d even with a clock behind)", got, saved[0].Record.Epoch)
	}
}
