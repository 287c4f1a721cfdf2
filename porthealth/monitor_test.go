package porthealth

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose one ticker fires when the test sends on tick.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) Ticker { return fakeTicker{c.tick} }

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
