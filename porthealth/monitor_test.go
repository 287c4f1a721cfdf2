package porthealth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose one ticker fires when the test sends on tick.
type fakeClock struct {
	mu        sync.Mutex
	now       time.Time
	tick      chan time.Time
	intervals []time.Duration // of every ticker made
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	c.intervals = append(c.intervals, d)
	c.mu.Unlock()
	return fakeTicker{c.tick}
}

// fire advances the clock by d and ticks.
func (c *fakeClock) fire(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	c.tick <- now
}

type fakeTicker struct{ c chan time.Time }

func (f fakeTicker) C() <-chan time.Time { return f.c }
func (fakeTicker) Stop()                 {}

// fakeSource serves per port a pause counter the test sets, and records
// which ports each read asked for.
type fakeSource struct {
	mu    sync.Mutex
	pause map[string]uint64
	fail  bool
	asked [][]string
	prios [][]uint8 // every SetPriorities
	// served receives one value per read, after the read, so the test
	// knows when a poll has read the counters.
	served chan struct{}
}

func (s *fakeSource) Read(_ context.Context, ports []string) ([]Sample, error) {
	defer func() { s.served <- struct{}{} }()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, slices.Clone(ports))
	if s.fail {
		return nil, errors.New("source down")
	}
	out := make([]Sample, len(ports))
	for i, p := range ports {
		v, ok := s.pause[p]
		if !ok {
			out[i] = Sample{Port: p, Err: errors.New("no such port")}
			continue
		}
		out[i] = Sample{Port: p, PauseValid: 1 << 3, Pause: [NumPriorities]uint64{3: v}}
	}
	return out, nil
}

func (s *fakeSource) SetPriorities(p []uint8) {
	s.mu.Lock()
	s.prios = append(s.prios, p)
	s.mu.Unlock()
}

func (s *fakeSource) set(port string, v uint64) {
	s.mu.Lock()
	s.pause[port] = v
	s.mu.Unlock()
}

func TestMonitorDeliversEvents(t *testing.T) {
	clk := &fakeClock{now: t0, tick: make(chan time.Time)}
	src := &fakeSource{pause: map[string]uint64{"Ethernet0": 0, "Ethernet4": 0}, served: make(chan struct{})}
	// A tick handed to Run means the poll before it has finished; the read
	// of the new poll then waits in the source until the test takes
	// served, so between the two the monitor's state holds still.
	fire := func() { clk.fire(poll); <-src.served }
	m, err := New(Options{Source: src, Interval: poll, Thresholds: DefaultThresholds(), Clock: clk}) // 200 ms detection
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()

	m.Watch([]string{"Ethernet0", "Ethernet4", "Ethernet8"})
	fire() // base
	for i := range uint64(3) {
		src.set("Ethernet0", 10*(i+1))
		fire()
	}
	var ev Event
	select {
	case ev = <-m.Events():
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	}
	if ev.Port != "Ethernet0" || ev.Condition != PFCStorm || !ev.Sick || !ev.At.Equal(t0.Add(4*poll)) || !ev.Onset.Equal(t0.Add(2*poll)) {
		t.Fatalf("event %+v", ev)
	}
	// Dropping a port forgets it; Ethernet8, which has no counters, was
	// counted at every poll without stopping the others.
	m.Watch([]string{"Ethernet4"})
	clk.fire(poll)
	if st := m.Stats(); st.PortErrors != 4 || st.Polls != 4 || st.ReadErrors != 0 {
		t.Fatalf("stats %+v, want 4 polls and 4 port errors", st)
	}
	<-src.served
	src.mu.Lock()
	src.fail = true
	src.mu.Unlock()
	fire()
	clk.fire(poll)
	src.mu.Lock()
	asked := src.asked[4]
	src.mu.Unlock()
	if !slices.Equal(asked, []string{"Ethernet4"}) {
		t.Fatalf("fifth read asked for %v", asked)
	}
	if st := m.Stats(); st.ReadErrors != 1 || st.Polls != 5 {
		t.Fatalf("stats %+v, want 5 polls and one read error", st)
	}
	if m.det.Sick("Ethernet0", PFCStorm) {
		t.Fatal("a dropped port kept its state")
	}
	<-src.served
	select {
	case ev := <-m.Events():
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func TestMonitorRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no source accepted")
	}
	th := DefaultThresholds()
	th.StormDetection = time.Millisecond
	if _, err := New(Options{Source: &fakeSource{}, Thresholds: th}); err == nil {
		t.Fatal("detection shorter than the poll interval accepted")
	}
}

// TestMonitorTune: new thresholds reach the running monitor before its
// next poll and judge a storm already under way by the new detection time;
// invalid ones are refused and change nothing; a new interval restarts the
// ticker and new priorities reach the source.
func TestMonitorTune(t *testing.T) {
	clk := &fakeClock{now: t0, tick: make(chan time.Time)}
	src := &fakeSource{pause: map[string]uint64{"Ethernet0": 0}, served: make(chan struct{})}
	fire := func() { clk.fire(poll); <-src.served }
	m, err := New(Options{Source: src, Interval: poll, Thresholds: DefaultThresholds(), Clock: clk}) // 200 ms detection
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	noEvent := func(what string) {
		t.Helper()
		select {
		case ev := <-m.Events():
			t.Fatalf("%s: unexpected event %+v", what, ev)
		default:
		}
	}

	bad := DefaultThresholds()
	bad.StormDetection = poll / 2
	if err := m.Tune(Tuning{Interval: poll, Thresholds: bad}); err == nil || !strings.Contains(err.Error(), "shorter than the poll interval") {
		t.Fatalf("detection below the interval: %v", err)
	}
	if got := m.InForce(); got.Thresholds.StormDetection != 200*time.Millisecond || got.Interval != poll {
		t.Fatalf("a refused tuning changed what is in force: %+v", got)
	}

	m.Watch([]string{"Ethernet0"})
	fire() // base
	rise := func() {
		src.mu.Lock()
		src.pause["Ethernet0"] += 10
		src.mu.Unlock()
		fire()
	}
	rise() // t0+2poll: the run begins
	rise() // t0+3poll: 100 ms
	slow := DefaultThresholds()
	slow.StormDetection = 5 * poll
	if err := m.Tune(Tuning{Interval: poll, Thresholds: slow}); err != nil {
		t.Fatal(err)
	}
	rise() // t0+4poll: 200 ms, a storm under the old detection time
	noEvent("200 ms into the storm with a 500 ms detection time")
	if got := m.InForce(); got.Thresholds.StormDetection != 5*poll {
		t.Fatalf("in force after the poll: %+v", got)
	}
	for range 2 {
		rise() // 300, 400 ms
	}
	noEvent("400 ms into the storm")
	rise() // 500 ms
	select {
	case ev := <-m.Events():
		if !ev.Sick || ev.Condition != PFCStorm || !ev.Onset.Equal(t0.Add(2*poll)) || !ev.At.Equal(t0.Add(7*poll)) {
			t.Fatalf("event %+v", ev)
		}
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	}

	other := slow.clone()
	other.Priorities = []uint8{4}
	if err := m.Tune(Tuning{Interval: 2 * poll, Thresholds: other}); err != nil {
		t.Fatal(err)
	}
	rise()
	clk.mu.Lock()
	intervals := slices.Clone(clk.intervals)
	clk.mu.Unlock()
	src.mu.Lock()
	prios := slices.Clone(src.prios)
	src.mu.Unlock()
	if !slices.Equal(intervals, []time.Duration{poll, 2 * poll}) {
		t.Fatalf("tickers made with %v", intervals)
	}
	if len(prios) != 2 || !slices.Equal(prios[0], []uint8{3}) || !slices.Equal(prios[1], []uint8{4}) {
		t.Fatalf("source told priorities %v", prios)
	}
	noEvent("after the priorities changed")
	// Back on priority 3, the pause counter still: the port was kept sick
	// through the tunings and recovers after the storm recovery time.
	if err := m.Tune(Tuning{Interval: poll, Thresholds: slow}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		fire()
	}
	noEvent("100 ms clean")
	fire()
	select {
	case ev := <-m.Events():
		if ev.Sick || ev.Condition != PFCStorm || !ev.At.Equal(t0.Add(11*poll)) {
			t.Fatalf("event %+v", ev)
		}
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	}
}
