package l2proto

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// results collects notifier outcomes.
type results struct {
	mu   sync.Mutex
	all  []Result
	done chan struct{}
	want int
}

func newResults(want int) *results { return &results{done: make(chan struct{}), want: want} }

func (r *results) add(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, res)
	if len(r.all) == r.want {
		close(r.done)
	}
}

func (r *results) wait(t testing.TB) []Result {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("only %d of %d results: %+v", len(r.all), r.want, r.all)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.all...)
}

// rig is a notifier on one end of a MemLink and an snsd-like host on the other.
type rig struct {
	nt   *Notifier
	host *snsdHost
	res  *results
	sw   *MemLink
}

func newRig(t *testing.T, want int, cfg NotifierConfig, withhold func(Notification, int) bool) *rig {
	t.Helper()
	sw, hl := NewMemPair("sw1", switchMAC, "host", hostMAC)
	host := newSNSDHost(hl, hostIP)
	host.withhold = withhold
	res := newResults(want)
	cfg.Link = sw
	cfg.OnResult = res.add
	nt, err := NewNotifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); nt.Run(ctx) }()
	go func() {
		defer wg.Done()
		if err := host.run(); err != nil {
			t.Errorf("host: %v", err)
		}
	}()
	// The switch side reads ACKs off its end and feeds the notifier.
	go func() {
		defer wg.Done()
		buf := make([]byte, MaxFrameLen)
		for {
			n, err := sw.ReadFrame(buf)
			if err != nil {
				return
			}
			if f, err := DecodeFrame(buf[:n]); err == nil && f.Message != nil {
				nt.Ack(f.Message.Acks...)
			}
		}
	}()
	t.Cleanup(func() { cancel(); sw.Close(); hl.Close(); wg.Wait() })
	return &rig{nt: nt, host: host, res: res, sw: sw}
}

func target(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 77, byte(1 + i>>8), byte(i)}) }

func note(i int) Notification {
	return Notification{Target: target(i), Host: hostIP, State: inof.StateActive, Reason: inof.ReasonNone,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:t%d", i)}
}

func TestNotifierDelivers(t *testing.T) {
	r := newRig(t, 3, NotifierConfig{}, nil)
	seqs := map[uint32]bool{}
	for i := range 3 {
		seq, err := r.nt.Notify(note(i))
		if err != nil {
			t.Fatal(err)
		}
		seqs[seq] = true
	}
	if len(seqs) != 3 {
		t.Fatalf("sequence numbers not distinct: %v", seqs)
	}
	for _, res := range r.res.wait(t) {
		if res.Err != nil || res.Attempts != 1 || !seqs[res.Notification.Seq] {
			t.Errorf("result %+v", res)
		}
	}
	got := r.host.received()
	if len(got) != 3 {
		t.Fatalf("host got %d notifications", len(got))
	}
	if st := r.nt.Stats(); st.Delivered != 3 || st.Retransmits != 0 || r.nt.Pending() != 0 {
		t.Fatalf("stats %+v pending %d", st, r.nt.Pending())
	}
}

func TestNotifierRetransmitsUntilAcked(t *testing.T) {
	withhold := func(n Notification, seen int) bool { return seen < 3 }
	r := newRig(t, 2, NotifierConfig{InitialRTO: time.Millisecond, MaxRTO: 4 * time.Millisecond}, withhold)
	for i := range 2 {
		if _, err := r.nt.Notify(note(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, res := range r.res.wait(t) {
		if res.Err != nil || res.Attempts != 3 {
			t.Errorf("result %+v, want delivered on attempt 3", res)
		}
	}
	if st := r.nt.Stats(); st.Retransmits != 4 || st.Delivered != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestNotifierGivesUp(t *testing.T) {
	never := func(Notification, int) bool { return true }
	r := newRig(t, 1, NotifierConfig{InitialRTO: time.Millisecond, MaxRTO: 2 * time.Millisecond, MaxAttempts: 4}, never)
	if _, err := r.nt.Notify(note(1)); err != nil {
		t.Fatal(err)
	}
	res := r.res.wait(t)[0]
	if !errors.Is(res.Err, ErrGaveUp) || res.Attempts != 4 {
		t.Fatalf("result %+v, want give-up after 4 attempts", res)
	}
	if n := len(r.host.received()); n != 4 {
		t.Fatalf("host saw %d copies, want 4", n)
	}
	if st := r.nt.Stats(); st.GaveUp != 1 || r.nt.Pending() != 0 {
		t.Fatalf("stats %+v pending %d", st, r.nt.Pending())
	}
}

func TestNotifierSupersedes(t *testing.T) {
	// Withhold ACKs of the first version so it is still in flight.
	first := true
	var firstSeq uint32
	withhold := func(n Notification, _ int) bool { return n.Seq == firstSeq && first }
	r := newRig(t, 2, NotifierConfig{InitialRTO: time.Hour, MaxRTO: time.Hour}, withhold)
	n := note(1)
	seq, err := r.nt.Notify(n)
	if err != nil {
		t.Fatal(err)
	}
	firstSeq = seq
	n.State, n.Reason = inof.StateInactive, inof.ReasonLinkDown
	if _, err := r.nt.Notify(n); err != nil {
		t.Fatal(err)
	}
	got := r.res.wait(t)
	byErr := map[bool]Result{}
	for _, res := range got {
		byErr[res.Err == nil] = res
	}
	if old := byErr[false]; !errors.Is(old.Err, ErrSuperseded) || old.Notification.Seq != firstSeq {
		t.Fatalf("old result %+v", old)
	}
	if cur := byErr[true]; cur.Notification.State != inof.StateInactive {
		t.Fatalf("new result %+v", cur)
	}
	// A late ACK for the superseded sequence is stale.
	r.nt.Ack(Ack{Target: n.Target, Host: n.Host, Seq: firstSeq})
	if st := r.nt.Stats(); st.StaleAcks == 0 || st.Superseded != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestNotifierPacksAndPaces queues many notifications and checks frame
// packing against the MTU and the pacing bound, which does not depend on the
// machine's speed (a slow machine only sends fewer frames per window).
func TestNotifierPacksAndPaces(t *testing.T) {
	const count = 600
	cfg := NotifierConfig{Rate: 40, Burst: 2, MTU: 1500}
	r := newRig(t, count, cfg, nil)
	for i := range count {
		if _, err := r.nt.Notify(note(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, res := range r.res.wait(t) {
		if res.Err != nil {
			t.Fatalf("result %+v", res)
		}
	}
	st := r.nt.Stats()
	perFrame := (cfg.MTU - msgHeaderLen) / notificationLen(&[]Notification{note(100)}[0], Version1)
	if min := uint64((count + perFrame - 1) / perFrame); st.Frames < min || st.Frames > min+2 {
		t.Fatalf("%d frames for %d notifications, want about %d (%d per frame)", st.Frames, count, min, perFrame)
	}
	limit := cfg.Rate/2 + cfg.Burst
	if got := maxInWindow(r.host.frameTimes(), 500*time.Millisecond); got > limit {
		t.Fatalf("%d frames within 500 ms, pacing allows %d", got, limit)
	}
}

func TestNotifierConfigErrors(t *testing.T) {
	sw, _ := NewMemPair("a", switchMAC, "b", hostMAC)
	for _, c := range []NotifierConfig{
		{},
		{Link: sw, Rate: 1000},
		{Link: sw, Burst: 600},
		{Link: sw, MTU: 20},
		{Link: sw, InitialRTO: time.Second, MaxRTO: time.Millisecond},
		{Link: sw, Rate: -1},
	} {
		if _, err := NewNotifier(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	nt, err := NewNotifier(NotifierConfig{Link: sw})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nt.Notify(Notification{Target: netip.MustParseAddr("fd00::1"), Host: hostIP}); !errors.Is(err, ErrValue) {
		t.Errorf("mixed families: %v", err)
	}
}

func TestNotifierStopReportsPending(t *testing.T) {
	sw, _ := NewMemPair("a", switchMAC, "b", hostMAC)
	res := newResults(1)
	nt, err := NewNotifier(NotifierConfig{Link: sw, OnResult: res.add, InitialRTO: time.Hour, MaxRTO: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- nt.Run(ctx) }()
	if _, err := nt.Notify(note(1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if got := res.wait(t); !errors.Is(got[0].Err, ErrStopped) {
		t.Fatalf("result %+v", got[0])
	}
	if _, err := nt.Notify(note(2)); !errors.Is(err, ErrStopped) {
		t.Fatalf("notify after stop: %v", err)
	}
}
