package bgp

import (
	"context"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// These tests never start GoBGP: they run under -race.

// fnode is a fake speaker under test with what it has seen.
type fnode struct {
	*FakeSpeaker
	addr netip.Addr
	view *recordView
}

func newFakeNode(t testing.TB, f *FakeFabric, a string, opts Options) *fnode {
	t.Helper()
	opts.ASN, opts.RouterID = testASN, addr(a)
	if opts.Role == 0 {
		opts.Role = RoleClient
	}
	s, err := f.NewSpeaker(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &fnode{FakeSpeaker: s, addr: addr(a), view: newRecordView()}
	if err := s.WatchRecords(ctx, n.view.apply); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Stop() })
	return n
}

// fakeConnect makes c a client of reflector r.
func fakeConnect(t testing.TB, r, c *fnode, edit func(*Neighbor)) {
	t.Helper()
	rn := Neighbor{Address: c.addr, RRClient: true}
	if edit != nil {
		edit(&rn)
	}
	if err := r.AddNeighbor(context.Background(), rn); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNeighbor(context.Background(), Neighbor{Address: r.addr}); err != nil {
		t.Fatal(err)
	}
}

// fakeStar is a reflector 127.0.0.1 and clients at the given addresses,
// each subscribed to its route targets.
func fakeStar(t testing.TB, clients map[string][]record.RouteTarget) (*FakeFabric, *fnode, map[string]*fnode) {
	t.Helper()
	f := NewFakeFabric()
	r := newFakeNode(t, f, "127.0.0.1", Options{Role: RoleReflector})
	out := map[string]*fnode{}
	for a, rts := range clients {
		c := newFakeNode(t, f, a, Options{})
		fakeConnect(t, r, c, nil)
		for _, rt := range rts {
			if err := c.Subscribe(context.Background(), rt); err != nil {
				t.Fatal(err)
			}
		}
		out[a] = c
	}
	return f, r, out
}

func hasKey(k []byte) func(map[string]RecordEvent) bool {
	return func(m map[string]RecordEvent) bool { _, ok := m[string(k)]; return ok }
}

// TestFakeRTC: records reach only subscribers of one of their route
// targets; untagged records reach no one; the reflector gets every tagged
// record (default route target) except from a NoDefaultRT client, which
// sends only what another client subscribed to; subscribing brings a zone's
// records and unsubscribing takes them away.
func TestFakeRTC(t *testing.T) {
	ctx := context.Background()
	red, blue, green := record.ZoneRT(testASN, "red"), record.ZoneRT(testASN, "blue"), record.ZoneRT(testASN, "green")
	f, r, cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	nd := newFakeNode(t, f, "127.0.0.9", Options{})
	fakeConnect(t, r, nd, func(n *Neighbor) { n.NoDefaultRT = true })

	redRec, blueRec, bare := device(ridOf(a.addr), 1), device(ridOf(a.addr), 2), device(ridOf(a.addr), 3)
	for _, p := range []struct {
		r   *record.Device
		rts []record.RouteTarget
	}{{bare, nil}, {blueRec, []record.RouteTarget{blue}}, {redRec, []record.RouteTarget{red}}} {
		if err := a.Publish(ctx, p.r, p.rts...); err != nil {
			t.Fatal(err)
		}
	}
	ndRed, ndGreen := device(ridOf(nd.addr), 1), device(ridOf(nd.addr), 2)
	if err := nd.Publish(ctx, ndGreen, green); err != nil {
		t.Fatal(err)
	}
	if err := nd.Publish(ctx, ndRed, red); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "red records at b", func(m map[string]RecordEvent) bool {
		return hasKey(redRec.Key())(m) && hasKey(ndRed.Key())(m)
	})
	r.view.waitFor(t, "tagged records at the reflector", func(m map[string]RecordEvent) bool {
		return hasKey(redRec.Key())(m) && hasKey(blueRec.Key())(m) && hasKey(ndRed.Key())(m)
	})
	// The fake is synchronous: everything above was queued before the
	// waited-for records.
	for _, c := range []struct {
		n    *fnode
		key  []byte
		what string
	}{{b, blueRec.Key(), "blue record at b"}, {b, bare.Key(), "untagged record at b"}, {r, bare.Key(), "untagged record at the reflector"},
		{r, ndGreen.Key(), "NoDefaultRT client's unsubscribed record at the reflector"}} {
		if c.n.view.has(c.key) {
			t.Errorf("%s", c.what)
		}
	}
	if e, _ := b.view.get(redRec.Key()); e.Source != r.addr || len(e.RouteTargets) != 1 || e.RouteTargets[0] != red {
		t.Fatalf("b's red record: %+v", e)
	}

	if err := b.Subscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "blue record after subscribing", hasKey(blueRec.Key()))
	if err := b.Unsubscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "blue record gone", func(m map[string]RecordEvent) bool { return !hasKey(blueRec.Key())(m) })
	if !b.view.has(redRec.Key()) {
		t.Fatal("unsubscribing blue took red away")
	}
	st := a.Stats()
	if st.Published != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func ridOf(a netip.Addr) inof.RouterID { id, _ := inof.RouterIDFrom(a); return id }

// TestFakeSessionLoss: when a client stops or its link is cut, its records
// are withdrawn everywhere and its neighbors see the session go; mending
// the link brings both back. WatchRecords starts with the current table.
func TestFakeSessionLoss(t *testing.T) {
	ctx := context.Background()
	red := record.ZoneRT(testASN, "red")
	f, r, cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	var states []NeighborEvent
	nbCh := make(chan NeighborEvent, 16)
	if err := r.WatchNeighbors(ctx, func(e NeighborEvent) { nbCh <- e }); err != nil {
		t.Fatal(err)
	}
	rec := device(ridOf(a.addr), 1)
	if err := a.Publish(ctx, rec, red); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "record at b", hasKey(rec.Key()))

	// A late watcher gets the current table first.
	late := newRecordView()
	if err := b.WatchRecords(ctx, late.apply); err != nil {
		t.Fatal(err)
	}
	late.waitFor(t, "initial table", hasKey(rec.Key()))

	f.Cut(r.addr, a.addr)
	b.view.waitFor(t, "record withdrawn after the cut", func(m map[string]RecordEvent) bool { return !hasKey(rec.Key())(m) })
	states = append(states, <-nbCh)
	if states[0] != (NeighborEvent{Address: a.addr, State: StateActive}) {
		t.Fatalf("neighbor events %+v", states)
	}
	f.Mend(r.addr, a.addr)
	b.view.waitFor(t, "record back", hasKey(rec.Key()))
	if e := <-nbCh; e != (NeighborEvent{Address: a.addr, State: StateEstablished}) {
		t.Fatalf("neighbor event %+v", e)
	}
	a.Stop()
	b.view.waitFor(t, "record withdrawn after a stopped", func(m map[string]RecordEvent) bool { return !hasKey(rec.Key())(m) })
	ns, err := r.Neighbors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if want := map[netip.Addr]SessionState{a.addr: StateActive, b.addr: StateEstablished}[n.Address]; n.State != want {
			t.Fatalf("reflector neighbor %s: %s", n.Address, n.State)
		}
	}
}

// TestFakeWatchResync: a watch whose consumer falls more than the queue
// behind is resynchronised from the table: it converges to the table (no
// ghost of a record withdrawn meanwhile) and Stats counts the resync.
func TestFakeWatchResync(t *testing.T) {
	ctx := context.Background()
	red := record.ZoneRT(testASN, "red")
	f := NewFakeFabric()
	r := newFakeNode(t, f, "127.0.0.1", Options{Role: RoleReflector})
	a := newFakeNode(t, f, "127.0.0.2", Options{})
	b := newFakeNode(t, f, "127.0.0.3", Options{WatchQueue: 4})
	fakeConnect(t, r, a, nil)
	fakeConnect(t, r, b, nil)
	if err := b.Subscribe(ctx, red); err != nil {
		t.Fatal(err)
	}
	testWatchResync(t, a, b, red, func() bool { return b.Stats().Resyncs > 0 })
}

// testWatchResync runs the slow-consumer scenario on any speakers: a
// publishes, b's extra watch blocks until b counted a resync.
func testWatchResync(t *testing.T, a Speaker, b Speaker, rt record.RouteTarget, resynced func() bool) {
	t.Helper()
	ctx := context.Background()
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	var open sync.Once
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // runs before the speakers' Stop
	slow := newRecordView()
	if err := b.WatchRecords(ctx, func(e RecordEvent) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		slow.apply(e)
	}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	first := device(7, 0)
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
		if err := a.Publish(ctx, device(7, i), rt); err != nil {
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
	slow.waitFor(t, "the table after the resync", func(m map[string]RecordEvent) bool {
		if len(m) != n {
			return false
		}
		for i := 1; i <= n; i++ {
			if _, ok := m[string(device(7, i).Key())]; !ok {
				return false
			}
		}
		return true
	})
}

// TestFakeStopEndsWatches: Stop returns after every watch goroutine of the
// speaker ended, whatever the watches' contexts.
func TestFakeStopEndsWatches(t *testing.T) {
	f := NewFakeFabric()
	s, err := f.NewSpeaker(Options{Role: RoleClient, ASN: testASN, RouterID: addr("127.0.0.2")})
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
func testStopEndsWatches(t *testing.T, s Speaker, stop func(), extra ...string) {
	t.Helper()
	ctx := context.Background()
	if err := s.WatchRecords(ctx, func(RecordEvent) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchReceived(ctx, func(RecordEvent) {}); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchNeighbors(ctx, func(NeighborEvent) {}); err != nil {
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
	red, blue := record.ZoneRT(testASN, "red"), record.ZoneRT(testASN, "blue")
	f, r, cs := fakeStar(t, map[string][]record.RouteTarget{"127.0.0.2": nil, "127.0.0.3": {red}})
	a, b := cs["127.0.0.2"], cs["127.0.0.3"]
	nd := newFakeNode(t, f, "127.0.0.9", Options{})
	fakeConnect(t, r, nd, func(n *Neighbor) { n.NoDefaultRT = true })
	redRec, blueRec := device(ridOf(a.addr), 1), device(ridOf(a.addr), 2)
	if err := a.Publish(ctx, blueRec, blue); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, redRec, red); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "red record at b", hasKey(redRec.Key()))
	if b.view.has(blueRec.Key()) {
		t.Fatal("blue record at b before AnyRT")
	}
	if err := b.Subscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "blue record with AnyRT", hasKey(blueRec.Key()))
	ndBlue := device(ridOf(nd.addr), 1)
	if err := nd.Publish(ctx, ndBlue, blue); err != nil {
		t.Fatal(err)
	}
	marker := device(ridOf(a.addr), 3)
	if err := a.Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "marker", hasKey(marker.Key()))
	if r.view.has(ndBlue.Key()) {
		t.Fatal("b's AnyRT was reflected to the NoDefaultRT client")
	}
	if err := b.Unsubscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "blue record gone", func(m map[string]RecordEvent) bool { return !hasKey(blueRec.Key())(m) })
	if !b.view.has(redRec.Key()) {
		t.Fatal("unsubscribing AnyRT took red away")
	}
}
