package l2proto

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

const ms = time.Millisecond

// results collects notifier outcomes from other goroutines.
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
	case <-time.After(60 * time.Second):
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("only %d of %d results: %+v", len(r.all), r.want, r.all)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.all...)
}

// rig is a notifier running on the system clock on one end of a MemLink
// and an snsd-like host on the other.
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

// framesFor is how many frames greedy packing in sequence order needs.
func framesFor(ns []Notification, version uint8, payload int) int {
	frames, size := 0, 0
	for i := range ns {
		l := notificationLen(&ns[i], version)
		if frames == 0 || size+l > payload {
			frames, size = frames+1, msgHeaderLen
		}
		size += l
	}
	return frames
}

func checkDelivered(t *testing.T, rs []Result, want int) {
	t.Helper()
	if len(rs) != want {
		t.Fatalf("%d results, want %d", len(rs), want)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("result %+v", r)
		}
	}
}

// TestNotifierDelivers runs the real loop on the system clock over an
// in-memory link with an snsd-like host.
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
	if st := r.nt.Stats(); st.Delivered != 3 || st.Retransmits != 0 || r.nt.Pending() != 0 || int(st.Frames) != len(r.host.frameTimes()) {
		t.Fatalf("stats %+v pending %d, host saw %d frames", st, r.nt.Pending(), len(r.host.frameTimes()))
	}
}

// TestNotifierRetransmitsUntilAcked: ACKs withheld twice; the same sequence
// number goes out three times, at 0, RTO and 3·RTO (doubling backoff).
func TestNotifierRetransmitsUntilAcked(t *testing.T) {
	s := newSim(t, NotifierConfig{InitialRTO: 200 * ms})
	h := newHostModel(s, hostIP)
	h.withhold = func(_ Notification, seen int) bool { return seen < 3 }
	t0 := s.clk.Now()
	seqs := []uint32{s.notify(note(0)), s.notify(note(1))}
	s.run(s.resultsDone(2), time.Minute)
	for _, res := range s.results {
		if res.Err != nil || res.Attempts != 3 {
			t.Errorf("result %+v, want delivered on attempt 3", res)
		}
	}
	for _, seq := range seqs {
		got := h.copiesOf(seq)
		want := []time.Time{t0, t0.Add(200 * ms), t0.Add(600 * ms)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("seq %d copies at %v, want %v", seq, got, want)
		}
	}
	if st := s.nt.Stats(); st.Retransmits != 4 || st.Delivered != 2 || st.RTTSamples != 0 {
		t.Fatalf("stats %+v (Karn's rule: no samples from retransmitted notifications)", st)
	}
}

// TestNotifierGivesUp: never ACKed, the notification is sent MaxAttempts
// times with the timeout doubling up to MaxRTO, and given up one timeout
// after the last send.
func TestNotifierGivesUp(t *testing.T) {
	s := newSim(t, NotifierConfig{InitialRTO: 100 * ms, MaxRTO: 400 * ms, MaxAttempts: 4})
	h := newHostModel(s, hostIP)
	h.withhold = func(Notification, int) bool { return true }
	t0 := s.clk.Now()
	seq := s.notify(note(1))
	s.run(s.resultsDone(1), time.Minute)
	res := s.results[0]
	if !errors.Is(res.Err, ErrGaveUp) || res.Attempts != 4 {
		t.Fatalf("result %+v, want give-up after 4 attempts", res)
	}
	want := []time.Time{t0, t0.Add(100 * ms), t0.Add(300 * ms), t0.Add(700 * ms)}
	if got := h.copiesOf(seq); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("copies at %v, want %v", got, want)
	}
	if at := s.resAt[0]; !at.Equal(t0.Add(1100 * ms)) {
		t.Fatalf("gave up at +%s, want +1.1s", at.Sub(t0))
	}
	if st := s.nt.Stats(); st.GaveUp != 1 || s.nt.Pending() != 0 {
		t.Fatalf("stats %+v pending %d", st, s.nt.Pending())
	}
}

// TestNotifierSupersedes: a newer notification for the same host, target
// and port replaces one in flight; the late ACK of the old one is stale.
func TestNotifierSupersedes(t *testing.T) {
	s := newSim(t, NotifierConfig{InitialRTO: time.Hour})
	h := newHostModel(s, hostIP)
	n := note(1)
	first := s.notify(n)
	h.withhold = func(x Notification, _ int) bool { return x.Seq == first }
	s.runFor(time.Second)
	if got := h.copiesOf(first); len(got) != 1 || len(s.results) != 0 {
		t.Fatalf("first version: %d copies, results %+v", len(got), s.results)
	}
	n.State, n.Reason = inof.StateInactive, inof.ReasonLinkDown
	second := s.notify(n)
	s.run(s.resultsDone(2), time.Minute)
	if old := s.results[0]; !errors.Is(old.Err, ErrSuperseded) || old.Notification.Seq != first {
		t.Fatalf("old result %+v", old)
	}
	if cur := s.results[1]; cur.Err != nil || cur.Notification.State != inof.StateInactive || cur.Notification.Seq != second {
		t.Fatalf("new result %+v", cur)
	}
	s.nt.Ack(Ack{Target: n.Target, Host: n.Host, Seq: first})
	if st := s.nt.Stats(); st.StaleAcks != 1 || st.Superseded != 1 || s.nt.Pending() != 0 {
		t.Fatalf("stats %+v pending %d", st, s.nt.Pending())
	}
}

// TestNotifierPacksAndPaces: queued notifications are packed greedily up to
// the MTU, and frames leave exactly as the token bucket allows: a burst,
// then one per 1/Rate, never more than Burst + Rate/2 in 500 ms.
func TestNotifierPacksAndPaces(t *testing.T) {
	const count = 500
	cfg := NotifierConfig{Rate: 40, Burst: 2, Window: 500}
	s := newSim(t, cfg)
	newHostModel(s, hostIP)
	var ns []Notification
	for i := range count {
		s.notify(note(i))
		ns = append(ns, note(i))
	}
	s.run(s.resultsDone(count), 10*time.Minute)
	checkDelivered(t, s.results, count)
	want := framesFor(ns, Version1, 1500)
	if st := s.nt.Stats(); st.Frames != uint64(want) || st.Sent != count || st.Retransmits != 0 {
		t.Fatalf("stats %+v, want %d frames", st, want)
	}
	// Closed 500 ms windows: the bound NewNotifier checks is reached, not
	// exceeded.
	peak := maxInWindow(s.sends, FloodGuardPeriod+time.Nanosecond)
	if limit := maxFramesPerPeriod(cfg.Rate, cfg.Burst); peak != limit || limit != cfg.Burst+cfg.Rate/2 {
		t.Fatalf("peak %d frames in 500 ms, want exactly %d (burst + rate/2)", peak, limit)
	}
	span := s.sends[len(s.sends)-1].Sub(s.sends[0])
	if wantSpan := time.Duration(want-cfg.Burst) * time.Second / time.Duration(cfg.Rate); span != wantSpan {
		t.Fatalf("%d frames took %s, want %s", want, span, wantSpan)
	}
}

// TestNotifierJumboMTU: a jumbo port still delivers, in frames nvme-snsd
// accepts (≤ 1514 bytes); a smaller MTU packs smaller frames.
func TestNotifierJumboMTU(t *testing.T) {
	for _, c := range []struct{ mtu, payload int }{{9000, 1500}, {9216, 1500}, {1500, 1500}, {1000, 1000}} {
		t.Run(fmt.Sprint(c.mtu), func(t *testing.T) {
			s := newSim(t, NotifierConfig{MTU: c.mtu})
			newHostModel(s, hostIP)
			var ns []Notification
			for i := range 60 {
				s.notify(note(i))
				ns = append(ns, note(i))
			}
			s.run(s.resultsDone(60), time.Minute)
			checkDelivered(t, s.results, 60)
			if st := s.nt.Stats(); st.Frames != uint64(framesFor(ns, Version1, c.payload)) {
				t.Fatalf("%d frames, want %d", st.Frames, framesFor(ns, Version1, c.payload))
			}
		})
	}
}

func TestNotifierConfigErrors(t *testing.T) {
	sw, _ := NewMemPair("a", switchMAC, "b", hostMAC)
	for _, c := range []struct {
		cfg  NotifierConfig
		want string
	}{
		{NotifierConfig{}, "link"},
		{NotifierConfig{Link: sw, Rate: 980, Burst: 9}, "ceiling is 250"}, // tripped snsd's flood guard
		{NotifierConfig{Link: sw, Rate: 482, Burst: 10}, "up to 251 frames"},
		{NotifierConfig{Link: sw, Burst: 600}, "ceiling"},
		{NotifierConfig{Link: sw, Window: MaxWindow + 1}, "window"},
		{NotifierConfig{Link: sw, MTU: 20}, "MTU"},
		{NotifierConfig{Link: sw, MTU: MaxMTU + 1}, "MTU"},
		{NotifierConfig{Link: sw, InitialRTO: time.Second, MaxRTO: time.Millisecond}, "RTO"},
		{NotifierConfig{Link: sw, MinRTO: time.Second, InitialRTO: time.Millisecond}, "RTO"},
		{NotifierConfig{Link: sw, Rate: -1}, "negative"},
	} {
		if _, err := NewNotifier(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %+v: err %v, want one mentioning %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []NotifierConfig{
		{Link: sw, Rate: 480, Burst: 10}, // exactly 250 in 500 ms
		{Link: sw, Window: MaxWindow, MTU: 9000},
		{Link: sw, InitialRTO: time.Millisecond}, // MinRTO follows
	} {
		if _, err := NewNotifier(ok); err != nil {
			t.Errorf("config %+v refused: %v", ok, err)
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

// TestNotifierWindow: at most Window notifications per host are
// unacknowledged; the rest wait and go out as ACKs come in, and other hosts
// are not held up.
func TestNotifierWindow(t *testing.T) {
	const window = 10
	other := netip.MustParseAddr("10.77.0.3")
	s := newSim(t, NotifierConfig{Window: window, InitialRTO: time.Hour})
	h := newHostModel(s, hostIP)
	h.withhold = func(Notification, int) bool { return true }
	var seqs []uint32
	for i := range 25 {
		seqs = append(seqs, s.notify(note(i)))
	}
	for i := range 5 {
		n := note(100 + i)
		n.Host = other
		s.notify(n)
	}
	s.runFor(time.Second)
	if got, want := len(s.onWire(hostIP)), window; got != want {
		t.Fatalf("%d notifications for the host on the wire, want %d (the window)", got, want)
	}
	if got := len(s.onWire(other)); got != 5 {
		t.Fatalf("%d notifications for the other host on the wire, want 5", got)
	}
	if s.nt.Pending() != 30 {
		t.Fatalf("pending %d", s.nt.Pending())
	}
	// Three ACKs let the next three in, in order.
	for i, seq := range seqs[:3] {
		s.nt.Ack(Ack{Target: target(i), Host: hostIP, Seq: seq})
	}
	s.runFor(time.Second)
	wire := s.onWire(hostIP)
	if len(wire) != window+3 {
		t.Fatalf("%d on the wire after 3 ACKs, want %d", len(wire), window+3)
	}
	for _, seq := range seqs[:window+3] {
		if wire[seq] != 1 {
			t.Fatalf("seq %d sent %d times (want the oldest first, once each): %v", seq, wire[seq], wire)
		}
	}
	// A notification waiting beyond the window can be superseded too.
	s.notify(note(24))
	if r := s.results[len(s.results)-1]; !errors.Is(r.Err, ErrSuperseded) || r.Notification.Seq != seqs[24] {
		t.Fatalf("result %+v", r)
	}
	if s.nt.Pending() != 27 {
		t.Fatalf("pending %d", s.nt.Pending())
	}
}

// TestNotifierRTO: the retransmission timeout follows the measured ACK
// round trip (RFC 6298) with one timed notification per round trip, takes
// no samples from retransmitted notifications (Karn), backs off on a timeout
// until the next valid sample, and stays within [MinRTO, MaxRTO].
func TestNotifierRTO(t *testing.T) {
	const minRTO = 100 * ms
	s := newSim(t, NotifierConfig{MinRTO: minRTO})
	h := newHostModel(s, hostIP)
	delay := 300 * ms
	h.ackDelay = func(*rand.Rand) time.Duration { return delay }
	if got := s.nt.hostRTO(hostIP); got != DefaultInitialRTO {
		t.Fatalf("RTO before samples %s", got)
	}
	i := 0
	round := func(n int) {
		start := len(s.results)
		for range n {
			s.notify(note(i))
			i++
		}
		s.run(s.resultsDone(start+n), 10*time.Minute)
	}
	// Ten round trips of 40 notifications (3 frames each), ACKed after
	// 300 ms: one sample per round trip, no retransmission.
	for range 10 {
		round(40)
	}
	st := s.nt.Stats()
	if st.Retransmits != 0 || st.RTTSamples != 10 || st.Frames != 30 {
		t.Fatalf("stats %+v: want 30 frames, no retransmission, one sample per round trip", st)
	}
	rto := s.nt.hostRTO(hostIP)
	// SRTT = 300 ms; RTTVAR = 150 ms·(3/4)^(k-1) after k samples.
	want := delay + 4*time.Duration(150e6*pow(0.75, 9))
	if d := rto - want; d < -ms || d > ms {
		t.Fatalf("RTO %s after 10 samples of 300 ms, want %s", rto, want)
	}

	// The first copy is lost: the retransmission's ACK is no sample, and
	// the backed-off timeout sticks.
	h.withhold = func(_ Notification, seen int) bool { return seen < 2 }
	round(1)
	st2 := s.nt.Stats()
	if st2.Retransmits != 1 || st2.RTTSamples != st.RTTSamples {
		t.Fatalf("stats %+v after one loss", st2)
	}
	if got := s.nt.hostRTO(hostIP); got != 2*rto {
		t.Fatalf("RTO %s after a timeout, want backed off to %s", got, 2*rto)
	}
	// A valid sample ends the backoff.
	h.withhold = nil
	round(1)
	if got := s.nt.hostRTO(hostIP); got >= 2*rto || got < delay {
		t.Fatalf("RTO %s after a valid sample", got)
	}
	// Floor: a fast host gets MinRTO.
	delay = 100 * time.Microsecond
	for range 100 {
		round(1)
	}
	if got := s.nt.hostRTO(hostIP); got != minRTO {
		t.Fatalf("RTO %s for a fast host, want the floor %s", got, minRTO)
	}
	// Ceiling: a stalled host backs off to MaxRTO, not beyond.
	h.withhold = func(Notification, int) bool { return true }
	s.notify(note(i))
	s.run(s.resultsDone(len(s.results)+1), 10*time.Minute)
	if got := s.nt.hostRTO(hostIP); got != DefaultMaxRTO {
		t.Fatalf("RTO %s after a stall, want the ceiling %s", got, DefaultMaxRTO)
	}
	if got := s.nt.Stats().RTTSamples; got != st.RTTSamples+101 {
		t.Fatalf("%d samples, want %d", got, st.RTTSamples+101)
	}
}

func pow(x float64, n int) float64 {
	r := 1.0
	for range n {
		r *= x
	}
	return r
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

// TestNotifierRunUsesClock: Run's timers come from the injected clock: with
// an hour-long RTO, the retransmission and the give-up happen as soon as
// the fake clock moves, without real waiting.
func TestNotifierRunUsesClock(t *testing.T) {
	clk := newFakeClock()
	sw, hl := NewMemPair("sw1", switchMAC, "host", hostMAC)
	res := newResults(1)
	nt, err := NewNotifier(NotifierConfig{Link: sw, Clock: clk, OnResult: res.add,
		InitialRTO: time.Hour, MaxRTO: time.Hour, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); nt.Run(ctx) }()
	defer func() { cancel(); <-runDone; sw.Close(); hl.Close() }()
	frames := make(chan []byte, 16)
	go func() {
		buf := make([]byte, MaxFrameLen)
		for {
			n, err := hl.ReadFrame(buf)
			if err != nil {
				return
			}
			frames <- append([]byte(nil), buf[:n]...)
		}
	}()
	seq, err := nt.Notify(note(1))
	if err != nil {
		t.Fatal(err)
	}
	// Move the clock an hour at a time until the effect shows: Run may
	// arm its timer just after a move.
	advanceUntil := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if done() {
				return
			}
			clk.Advance(time.Hour)
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("no %s", what)
	}
	var copies []uint32
	got := func() bool {
		for {
			select {
			case f := <-frames:
				copies = append(copies, mustDecode(t, f).Message.Notifications[0].Seq)
			default:
				return len(copies) >= 2
			}
		}
	}
	advanceUntil("retransmission", got)
	if copies[0] != seq || copies[1] != seq {
		t.Fatalf("copies %v, want seq %d twice", copies, seq)
	}
	advanceUntil("give-up", func() bool {
		select {
		case <-res.done:
			return true
		default:
			return false
		}
	})
	if r := res.wait(t)[0]; !errors.Is(r.Err, ErrGaveUp) || r.Attempts != 2 {
		t.Fatalf("result %+v", r)
	}
}
