package l2proto

import (
	"container/heap"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when a test moves it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), timers: map[*fakeTimer]struct{}{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clk: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Set moves the clock to at (never backwards) and fires the timers due.
func (c *fakeClock) Set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.fireLocked()
		}
	}
}

func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

type fakeTimer struct {
	clk *fakeClock
	ch  chan time.Time
	at  time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Reset(d time.Duration) {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	t.drain()
	t.at = c.now.Add(d)
	c.timers[t] = struct{}{}
	if d <= 0 {
		t.fireLocked()
	}
}

func (t *fakeTimer) Stop() {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.timers, t)
	t.drain()
}

func (t *fakeTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

func (t *fakeTimer) fireLocked() {
	delete(t.clk.timers, t)
	select {
	case t.ch <- t.clk.now:
	default:
	}
}

// sim runs a Notifier as a discrete-event simulation on a fake clock, in
// the test's goroutine: no Run loop, no real time, no scheduling noise. The
// notifier's frames go to onFrame (a host model) the moment they are sent;
// the host schedules its answers with after.
type sim struct {
	t       testing.TB
	clk     *fakeClock
	nt      *Notifier
	results []Result
	resAt   []time.Time    // when each result was reported
	sends   []time.Time    // send time of every frame
	wire    []Notification // every notification sent, copies included
	events  simEvents
	seq     int
	onFrame func(now time.Time, frame []byte)
}

type simEvent struct {
	at  time.Time
	seq int
	fn  func()
}

type simEvents []simEvent

func (h simEvents) Len() int { return len(h) }
func (h simEvents) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h simEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// simLink is the notifier's side of the simulated wire.
type simLink struct {
	s    *sim
	done chan struct{}
	once sync.Once
}

func (l *simLink) ReadFrame([]byte) (int, error) {
	<-l.done
	return 0, &net.OpError{Op: "read", Net: "sim", Err: net.ErrClosed}
}
func (l *simLink) WriteFrame(frame []byte) error {
	now := l.s.clk.Now()
	l.s.sends = append(l.s.sends, now)
	if f, err := DecodeFrame(frame); err == nil && f.Message != nil {
		l.s.wire = append(l.s.wire, f.Message.Notifications...)
	} else {
		l.s.t.Errorf("notifier sent an undecodable frame (%v): %x", err, frame)
	}
	if l.s.onFrame != nil {
		l.s.onFrame(now, append([]byte(nil), frame...))
	}
	return nil
}
func (l *simLink) HardwareAddr() net.HardwareAddr { return switchMAC }
func (l *simLink) Name() string                   { return "sw1" }
func (l *simLink) Close() error                   { l.once.Do(func() { close(l.done) }); return nil }

func newSim(t testing.TB, cfg NotifierConfig) *sim {
	t.Helper()
	s := &sim{t: t, clk: newFakeClock()}
	cfg.Link = &simLink{s: s, done: make(chan struct{})}
	cfg.Clock = s.clk
	cfg.OnResult = func(r Result) {
		s.results = append(s.results, r)
		s.resAt = append(s.resAt, s.clk.Now())
	}
	nt, err := NewNotifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.nt = nt
	return s
}

// after schedules fn at d from now on the simulated clock.
func (s *sim) after(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, simEvent{at: s.clk.Now().Add(d), seq: s.seq, fn: fn})
}

func (s *sim) notify(n Notification) uint32 {
	s.t.Helper()
	seq, err := s.nt.Notify(n)
	if err != nil {
		s.t.Fatal(err)
	}
	return seq
}

// run lets the notifier and the scheduled events play out until done
// reports true; it fails the test if that takes more than limit of
// simulated time.
func (s *sim) run(done func() bool, limit time.Duration) {
	s.t.Helper()
	deadline := s.clk.Now().Add(limit)
	for !done() {
		now := s.clk.Now()
		next := now.Add(s.nt.poll(now))
		if done() {
			return
		}
		if len(s.events) > 0 && s.events[0].at.Before(next) {
			next = s.events[0].at
		}
		if next.After(deadline) {
			s.t.Fatalf("simulation not done after %s: %d results, %d pending", limit, len(s.results), s.nt.Pending())
		}
		s.clk.Set(next)
		for len(s.events) > 0 && !s.events[0].at.After(next) {
			heap.Pop(&s.events).(simEvent).fn()
		}
	}
}

// runFor plays the simulation for d of simulated time.
func (s *sim) runFor(d time.Duration) {
	end := s.clk.Now().Add(d)
	s.after(d, func() {})
	s.run(func() bool { return !s.clk.Now().Before(end) }, d+time.Nanosecond)
}

func (s *sim) resultsDone(n int) func() bool { return func() bool { return len(s.results) >= n } }

// hostModel is an nvme-snsd host as the notifier meets it under load (fact
// sheet §6-7 and the busy-host run of issue #9):
//   - every notification accepted into the 1,000-slot message pool is ACKed,
//     all of a frame's in one ACK frame, after a delay drawn from ackDelay;
//     it holds its slot until then. With the pool full, a notification is
//     dropped without an ACK. Each copy of a notification that makes it into
//     the pool becomes a task on the host: copies beyond the first are
//     duplicates;
//   - the flood guard: 500 or more frames within 500 ms make it drop every
//     frame for the next 10 s.
type hostModel struct {
	s        *sim
	ip       netip.Addr
	rng      *rand.Rand
	ackDelay func(*rand.Rand) time.Duration // nil: immediate
	withhold func(n Notification, seen int) bool
	poolSize int  // 0: unbounded
	guard    bool // model the flood guard
	// A stall: frames arriving in [stallFrom, stallUntil) are ACKed only
	// after stallUntil (the host's listener is busy elsewhere).
	stallFrom, stallUntil time.Time

	pool       int
	recent     []time.Time
	guardUntil time.Time
	seen       map[AckKey]int
	got        []Notification
	copies     []time.Time // arrival of every accepted copy

	frames, trips, guardDrops, overflows, duplicates, maxPool int
}

func newHostModel(s *sim, ip netip.Addr) *hostModel {
	h := &hostModel{s: s, ip: ip, rng: rand.New(rand.NewPCG(1, 2)), seen: map[AckKey]int{}}
	s.onFrame = h.receive
	return h
}

func (h *hostModel) receive(now time.Time, frame []byte) {
	f, err := DecodeFrame(frame)
	if err != nil || f.Message == nil {
		h.s.t.Errorf("host model: undecodable frame %x: %v", frame, err)
		return
	}
	if len(frame) > MaxFrameLen {
		h.s.t.Errorf("host model: frame of %d bytes", len(frame))
	}
	h.frames++
	if h.guard {
		i := 0
		for i < len(h.recent) && now.Sub(h.recent[i]) >= FloodGuardPeriod {
			i++
		}
		h.recent = append(h.recent[i:], now)
		if len(h.recent) >= FloodGuardFrames {
			if !now.Before(h.guardUntil) {
				h.trips++
			}
			h.guardUntil = now.Add(10 * time.Second)
		}
		if now.Before(h.guardUntil) {
			h.guardDrops++
			return
		}
	}
	var acks []Ack
	held := 0
	for _, n := range f.Message.Notifications {
		if n.Host != h.ip {
			continue
		}
		if h.poolSize > 0 && h.pool >= h.poolSize {
			h.overflows++
			continue
		}
		h.pool++
		h.maxPool = max(h.maxPool, h.pool)
		held++
		k := n.Key()
		h.seen[k]++
		if h.seen[k] > 1 {
			h.duplicates++
		}
		h.got = append(h.got, n)
		h.copies = append(h.copies, now)
		if h.withhold != nil && h.withhold(n, h.seen[k]) {
			continue
		}
		acks = append(acks, Ack{Target: n.Target, Host: n.Host, Seq: n.Seq})
	}
	if held == 0 {
		return
	}
	var d time.Duration
	if h.ackDelay != nil {
		d = h.ackDelay(h.rng)
	}
	if !now.Before(h.stallFrom) && now.Before(h.stallUntil) {
		d += h.stallUntil.Sub(now)
	}
	h.s.after(d, func() {
		h.pool -= held
		if len(acks) > 0 {
			h.s.nt.Ack(acks...)
		}
	})
}

// onWire returns how many copies of each sequence number were sent for host.
func (s *sim) onWire(host netip.Addr) map[uint32]int {
	out := map[uint32]int{}
	for _, n := range s.wire {
		if n.Host == host {
			out[n.Seq]++
		}
	}
	return out
}

// copiesOf returns the arrival times of the accepted copies of the
// notification with sequence seq.
func (h *hostModel) copiesOf(seq uint32) []time.Time {
	var out []time.Time
	for i, n := range h.got {
		if n.Seq == seq {
			out = append(out, h.copies[i])
		}
	}
	return out
}
