package bgp_test

import (
	"context"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// These tests never start GoBGP: they run under -race.

// TestFakeRTC: records reach only subscribers of one of their route
// targets; untagged records reach no one; the reflector gets every tagged
// record (default route target) except from a NoDefaultRT client, which
// sends only what another client subscribed to; subscribing brings a zone's
// records and unsubscribing takes them away.
func TestFakeRTC(t *testing.T) {
	ctx := context.Background()
	red, blue, green := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue"), record.ZoneRT(bgptest.ASN, "green")
	f, r, cs := bgptest.FakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	nd := bgptest.NewFakeNode(t, f, "127.0.0.9", bgp.Options{})
	bgptest.FakeConnect(t, r, nd, func(n *bgp.Neighbor) { n.NoDefaultRT = true })

	redRec, blueRec, bare := bgptest.Device(bgptest.RouterID(a.Addr), 1), bgptest.Device(bgptest.RouterID(a.Addr), 2), bgptest.Device(bgptest.RouterID(a.Addr), 3)
	for _, p := range []struct {
		r   *record.Device
		rts []record.RouteTarget
	}{{bare, nil}, {blueRec, []record.RouteTarget{blue}}, {redRec, []record.RouteTarget{red}}} {
		if err := a.Publish(ctx, p.r, p.rts...); err != nil {
			t.Fatal(err)
		}
	}
	ndRed, ndGreen := bgptest.Device(bgptest.RouterID(nd.Addr), 1), bgptest.Device(bgptest.RouterID(nd.Addr), 2)
	if err := nd.Publish(ctx, ndGreen, green); err != nil {
		t.Fatal(err)
	}
	if err := nd.Publish(ctx, ndRed, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "red records at b", func(m map[string]bgp.RecordEvent) bool {
		return bgptest.HasKey(redRec.Key())(m) && bgptest.HasKey(ndRed.Key())(m)
	})
	r.View.WaitFor(t, "tagged records at the reflector", func(m map[string]bgp.RecordEvent) bool {
		return bgptest.HasKey(redRec.Key())(m) && bgptest.HasKey(blueRec.Key())(m) && bgptest.HasKey(ndRed.Key())(m)
	})
	// The fake is synchronous: everything above was queued before the
	// waited-for records.
	for _, c := range []struct {
		n    *bgptest.FakeNode
		key  []byte
		what string
	}{{b, blueRec.Key(), "blue record at b"}, {b, bare.Key(), "untagged record at b"}, {r, bare.Key(), "untagged record at the reflector"},
		{r, ndGreen.Key(), "NoDefaultRT client's unsubscribed record at the reflector"}} {
		if c.n.View.Has(c.key) {
			t.Errorf("%s", c.what)
		}
	}
	if e, _ := b.View.Get(redRec.Key()); e.Source != r.Addr || len(e.RouteTargets) != 1 || e.RouteTargets[0] != red {
		t.Fatalf("b's red record: %+v", e)
	}

	if err := b.Subscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record after subscribing", bgptest.HasKey(blueRec.Key()))
	if err := b.Unsubscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record gone", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(blueRec.Key())(m) })
	if !b.View.Has(redRec.Key()) {
		t.Fatal("unsubscribing blue took red away")
	}
	st := a.Stats()
	if st.Published != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFakeSessionLoss: when a client stops or its link is cut, its records
// are withdrawn everywhere and its neighbors see the session go; mending
// the link brings both back. WatchRecords starts with the current table.
func TestFakeSessionLoss(t *testing.T) {
	ctx := context.Background()
	red := record.ZoneRT(bgptest.ASN, "red")
	f, r, cs := bgptest.FakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	var states []bgp.NeighborEvent
	nbCh := make(chan bgp.NeighborEvent, 16)
	if err := r.WatchNeighbors(ctx, func(e bgp.NeighborEvent) { nbCh <- e }); err != nil {
		t.Fatal(err)
	}
	rec := bgptest.Device(bgptest.RouterID(a.Addr), 1)
	if err := a.Publish(ctx, rec, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "record at b", bgptest.HasKey(rec.Key()))

	// A late watcher gets the current table first.
	late := bgptest.NewRecordView()
	if err := b.WatchRecords(ctx, late.Apply); err != nil {
		t.Fatal(err)
	}
	late.WaitFor(t, "initial table", bgptest.HasKey(rec.Key()))

	f.Cut(r.Addr, a.Addr)
	b.View.WaitFor(t, "record withdrawn after the cut", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(rec.Key())(m) })
	states = append(states, <-nbCh)
	if states[0] != (bgp.NeighborEvent{Address: a.Addr, State: bgp.StateActive}) {
		t.Fatalf("neighbor events %+v", states)
	}
	f.Mend(r.Addr, a.Addr)
	b.View.WaitFor(t, "record back", bgptest.HasKey(rec.Key()))
	if e := <-nbCh; e != (bgp.NeighborEvent{Address: a.Addr, State: bgp.StateEstablished}) {
		t.Fatalf("neighbor event %+v", e)
	}
	a.Stop()
	b.View.WaitFor(t, "record withdrawn after a stopped", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(rec.Key())(m) })
	ns, err := r.Neighbors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if want := map[netip.Addr]bgp.SessionState{a.Addr: bgp.StateActive, b.Addr: bgp.StateEstablished}[n.Address]; n.State != want {
			t.Fatalf("reflector neighbor %s: %s", n.Address, n.State)
		}
	}
}

// TestFakeWatchResync: a watch whose consumer falls more than the queue
// behind is resynchronised from the table: it converges to the table (no
// ghost of a record withdrawn meanwhile) and Stats counts the resync.
func TestFakeWatchResync(t *testing.T) {
	ctx := context.Background()
	red := record.ZoneRT(bgptest.ASN, "red")
	f := bgp.NewFakeFabric()
	r := bgptest.NewFakeNode(t, f, "127.0.0.1", bgp.Options{Role: bgp.RoleReflector})
	a := bgptest.NewFakeNode(t, f, "127.0.0.2", bgp.Options{})
	b := bgptest.NewFakeNode(t, f, "127.0.0.3", bgp.Options{WatchQueue: 4})
	bgptest.FakeConnect(t, r, a, nil)
	bgptest.FakeConnect(t, r, b, nil)
	if err := b.Subscribe(ctx, red); err != nil {
		t.Fatal(err)
	}
	testWatchResync(t, a, b, red, func() bool { return b.Stats().Resyncs > 0 })
}

// testWatchResync runs the slow-consumer scenario on any speakers: a
// publishes, b's extra watch blocks until b counted a resync.
func testWatchResync(t *testing.T, a bgp.Speaker, b bgp.Speaker, rt record.RouteTarget, resynced func() bool) {
	t.Helper()
	ctx := context.Background()
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	var open sync.Once
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // runs before the speakers' Stop
	slow := bgptest.NewRecordView()
	if err := b.WatchRecords(ctx, func(e bgp.RecordEvent) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		slow.Apply(e)
	}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	first := bgptest.Device(7, 0)
	if err := a.Publish(ctx, first, rt); err != nil {
		t.Fatal(err)
	}
	// The consumer is now stuck in its first call, with the queue empty.
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the first record never reached the watch")
	}
	for i := 1; i <= n; i++ {
		if err := a.Publish(ctx, bgptest.Device(7, i), rt); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Withdraw(ctx, first.Key()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !resynced() {
		if time.Now().After(deadline) {
			t.Fatal("no resync counted")
		}
		time.Sleep(time.Millisecond)
	}
	open.Do(func() { close(gate) })
	slow.WaitFor(t, "the table after the resync", func(m map[string]bgp.RecordEvent) bool {
		if len(m) != n {
			return false
		}
		for i := 1; i <= n; i++ {
			if _, ok := m[string(bgptest.Device(7, i).Key())]; !ok {
				return false
			}
		}
		return true
	})
}

// TestFakeStopEndsWatches: Stop returns after every watch goroutine of the
// speaker ended, whatever the watches' contexts.
func TestFakeStopEndsWatches(t *testing.T) {
	f := bgp.NewFakeFabric()
	s, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testStopEndsWatches(t, s, func() { s.Stop() })
}

// testStopEndsWatches starts one watch of each kind with a context that
// never ends, stops, and waits until none of the given goroutines is left.
func testStopEndsWatches(t *testing.T, s bgp.Speaker, stop func(), extra ...string) {
	t.Helper()
	ctx := context.Background()
	if err := s.WatchRecords(ctx, func(bgp.RecordEvent) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchReceived(ctx, func(bgp.RecordEvent) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchNeighbors(ctx, func(bgp.NeighborEvent) {}); err != nil {
		t.Fatal(err)
	}
	frames := append([]string{"bgp.(*recordWatch).run", "bgp.(*neighborWatch).run"}, extra...)
	t.Cleanup(stop)
	deadline := time.Now().Add(30 * time.Second)
	for goroutinesIn(frames[:2]) < 3 { // started asynchronously
		if time.Now().After(deadline) {
			t.Fatal("watch goroutines never started")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	<-s.Done()
	if n := goroutinesIn(frames[:2]); n != 0 {
		t.Fatalf("%d watch goroutines left after Stop", n)
	}
	deadline = time.Now().Add(30 * time.Second)
	for goroutinesIn(frames) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("watch goroutines never ended after Stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// goroutinesIn counts goroutines with a frame containing one of frames.
func goroutinesIn(frames []string) int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, f := range frames {
			if strings.Contains(g, f) {
				n++
				break
			}
		}
	}
	return n
}

// TestFakeRTCAny: AnyRT subscribes to every record, as GoBGP's default
// membership does (TestRTConstraintAny); a client's AnyRT is not
// reflected to the other clients.
func TestFakeRTCAny(t *testing.T) {
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	f, r, cs := bgptest.FakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	nd := bgptest.NewFakeNode(t, f, "127.0.0.9", bgp.Options{})
	bgptest.FakeConnect(t, r, nd, func(n *bgp.Neighbor) { n.NoDefaultRT = true })
	redRec, blueRec := bgptest.Device(bgptest.RouterID(a.Addr), 1), bgptest.Device(bgptest.RouterID(a.Addr), 2)
	if err := a.Publish(ctx, blueRec, blue); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, redRec, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "red record at b", bgptest.HasKey(redRec.Key()))
	if b.View.Has(blueRec.Key()) {
		t.Fatal("blue record at b before AnyRT")
	}
	if err := b.Subscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record with AnyRT", bgptest.HasKey(blueRec.Key()))
	ndBlue := bgptest.Device(bgptest.RouterID(nd.Addr), 1)
	if err := nd.Publish(ctx, ndBlue, blue); err != nil {
		t.Fatal(err)
	}
	marker := bgptest.Device(bgptest.RouterID(a.Addr), 3)
	if err := a.Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "marker", bgptest.HasKey(marker.Key()))
	if r.View.Has(ndBlue.Key()) {
		t.Fatal("b's AnyRT was reflected to the NoDefaultRT client")
	}
	if err := b.Unsubscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record gone", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(blueRec.Key())(m) })
	if !b.View.Has(redRec.Key()) {
		t.Fatal("unsubscribing AnyRT took red away")
	}
}
