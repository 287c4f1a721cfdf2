package table

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// sendLog records the set records a publisher sends.
type sendLog struct {
	mu    sync.Mutex
	sets  []*record.DeviceSet
	taken int           // sets handed out by next
	sent  chan struct{} // one token a send
}

func newSendLog() *sendLog { return &sendLog{sent: make(chan struct{}, 64)} }

func (l *sendLog) Publish(_ context.Context, r record.Record, _ ...record.RouteTarget) error {
	l.mu.Lock()
	l.sets = append(l.sets, r.(*record.DeviceSet))
	l.mu.Unlock()
	l.sent <- struct{}{}
	return nil
}

func (l *sendLog) Withdraw(context.Context, []byte) error {
	l.sent <- struct{}{}
	return nil
}

// next waits for one more send and returns the set records sent in turn.
func (l *sendLog) next(t *testing.T) *record.DeviceSet {
	t.Helper()
	select {
	case <-l.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("no set record sent in 10 s")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.taken++
	return l.sets[l.taken-1]
}

// none checks that nothing more was sent.
func (l *sendLog) none(t *testing.T, what string) {
	t.Helper()
	select {
	case <-l.sent:
		t.Fatalf("%s: a set record was sent", what)
	default:
	}
}

// fakeTimer is a settable clock whose timers the test fires.
type fakeTimer struct {
	mu    sync.Mutex
	now   time.Time
	asked chan time.Duration // every wait asked for
	fire  chan time.Time     // what every timer receives
}

func newFakeTimer() *fakeTimer {
	return &fakeTimer{now: time.Unix(1000, 0), asked: make(chan time.Duration, 16), fire: make(chan time.Time)}
}

func (c *fakeTimer) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeTimer) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func (c *fakeTimer) After(d time.Duration) <-chan time.Time {
	c.asked <- d
	return c.fire
}

// waitAsked returns the next wait the publisher asked for.
func (c *fakeTimer) waitAsked(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.asked:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher never waited for its interval")
	}
	return 0
}

// spacedPublisher is a publisher of switch testSwitch with interval on a
// fake clock, sending into a sendLog.
func spacedPublisher(t *testing.T, interval time.Duration) (*SetPublisher, *sendLog, *fakeTimer) {
	t.Helper()
	log, clk := newSendLog(), newFakeTimer()
	pub, err := NewSetPublisher(SetPublisherOptions{Speaker: log, Switch: testSwitch, MinInterval: interval, Now: clk.Now, After: clk.After})
	if err != nil {
		t.Fatal(err)
	}
	return pub, log, clk
}

// testSwitch is the publishing switch of these tests.
const testSwitch = inof.RouterID(0x7f000002)

// TestSetPublisherSpacesSends: the first change of a quiet shard goes out
// at once; changes within MinInterval of that send wait for the rest of
// the interval and go out in one record; a change after a quiet interval
// goes out at once again.
func TestSetPublisherSpacesSends(t *testing.T) {
	ctx, sw := context.Background(), testSwitch
	const interval = 20 * time.Millisecond
	pub, log, clk := spacedPublisher(t, interval)
	t.Cleanup(pub.Close)
	red := record.ZoneRT(bgptest.ASN, "red")

	if err := pub.Publish(ctx, *bgptest.Device(sw, 1), red); err != nil {
		t.Fatal(err)
	}
	if got := log.next(t); len(got.Devices) != 1 {
		t.Fatalf("first send carries %d devices, want 1", len(got.Devices))
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// 5 ms later, three more devices: the shard waits the 15 ms left.
	clk.Add(5 * time.Millisecond)
	for i := 2; i <= 4; i++ {
		if err := pub.Publish(ctx, *bgptest.Device(sw, i), red); err != nil {
			t.Fatal(err)
		}
	}
	if d := clk.waitAsked(t); d != 15*time.Millisecond {
		t.Fatalf("waited %v, want the 15ms left of the interval", d)
	}
	log.none(t, "within the interval")
	if err := pub.Publish(ctx, *bgptest.Device(sw, 5), red); err != nil { // while it waits
		t.Fatal(err)
	}
	clk.Add(15 * time.Millisecond)
	clk.fire <- clk.Now()
	if got := log.next(t); len(got.Devices) != 5 {
		t.Fatalf("the send after the interval carries %d devices, want all 5", len(got.Devices))
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.Updates != 2 || st.Changes != 5 {
		t.Fatalf("stats %+v: want 5 changes in 2 updates", st)
	}

	// A quiet interval later a change goes out at once, without a wait.
	clk.Add(interval)
	if err := pub.Publish(ctx, *bgptest.Device(sw, 6), red); err != nil {
		t.Fatal(err)
	}
	if got := log.next(t); len(got.Devices) != 6 {
		t.Fatalf("send after a quiet interval carries %d devices, want 6", len(got.Devices))
	}
	select {
	case d := <-clk.asked:
		t.Fatalf("waited %v after a quiet interval", d)
	default:
	}
}

// TestSetPublisherCloseEndsWait: Close ends a flush that waits for its
// interval, and Flush returns.
func TestSetPublisherCloseEndsWait(t *testing.T) {
	ctx, sw := context.Background(), testSwitch
	pub, log, clk := spacedPublisher(t, time.Second)
	red := record.ZoneRT(bgptest.ASN, "red")
	for i := 1; i <= 2; i++ {
		if err := pub.Publish(ctx, *bgptest.Device(sw, i), red); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			log.next(t)
		}
	}
	clk.waitAsked(t)
	pub.Close() // returns only once the waiting flush ended
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, *bgptest.Device(sw, 3), red); err != ErrPublisherClosed {
		t.Fatalf("publish after close: %v, want ErrPublisherClosed", err)
	}
}

func TestSetPublisherRefusesNegativeInterval(t *testing.T) {
	if _, err := NewSetPublisher(SetPublisherOptions{Speaker: newSendLog(), MinInterval: -time.Millisecond}); err == nil {
		t.Fatal("a negative interval was taken")
	}
}

// TestSetPublisherBatch: the changes of one Batch go out in one UPDATE a
// shard, none of them behind the interval.
func TestSetPublisherBatch(t *testing.T) {
	ctx, sw := context.Background(), testSwitch
	pub, log, clk := spacedPublisher(t, time.Second)
	t.Cleanup(pub.Close)
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	pub.Batch(func() {
		for i := 1; i <= 3; i++ {
			if err := pub.Publish(ctx, *bgptest.Device(sw, i), red); err != nil {
				t.Fatal(err)
			}
			// Nothing goes out while the batch runs.
			log.none(t, "inside the batch")
		}
		pub.Batch(func() { // nested: released with the outer one
			if err := pub.Publish(ctx, *bgptest.Device(sw, 4), blue); err != nil {
				t.Fatal(err)
			}
		})
		log.none(t, "after a nested batch")
	})
	got := map[int]int{} // devices by set record size
	for range 2 {
		got[len(log.next(t).Devices)]++
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got[3] != 1 || got[1] != 1 {
		t.Fatalf("sent sets of sizes %v, want one of 3 (red) and one of 1 (blue)", got)
	}
	select {
	case d := <-clk.asked:
		t.Fatalf("a batch of a quiet fabric waited %v", d)
	default:
	}
	log.none(t, "after the batch's sends")
}

// TestSetPublisherBatchHoldsWaitingShard: a shard whose interval ends
// while a Batch runs waits for the batch and goes out with its changes in
// one UPDATE.
func TestSetPublisherBatchHoldsWaitingShard(t *testing.T) {
	ctx, sw := context.Background(), testSwitch
	pub, log, clk := spacedPublisher(t, time.Second)
	t.Cleanup(pub.Close)
	red := record.ZoneRT(bgptest.ASN, "red")
	if err := pub.Publish(ctx, *bgptest.Device(sw, 1), red); err != nil {
		t.Fatal(err)
	}
	log.next(t)
	if err := pub.Publish(ctx, *bgptest.Device(sw, 2), red); err != nil {
		t.Fatal(err)
	}
	clk.waitAsked(t) // device 2 waits for the interval
	pub.Batch(func() {
		clk.Add(time.Second)
		clk.fire <- clk.Now() // the interval ends inside the batch
		if err := pub.Publish(ctx, *bgptest.Device(sw, 3), red); err != nil {
			t.Fatal(err)
		}
		log.none(t, "inside the batch")
	})
	if got := log.next(t); len(got.Devices) != 3 {
		t.Fatalf("the send after the batch carries %d devices, want 3", len(got.Devices))
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	log.none(t, "after the batch's send")
	if st := pub.Stats(); st.Updates != 2 {
		t.Fatalf("%d updates, want 2", st.Updates)
	}
}
