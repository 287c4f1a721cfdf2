package porthealth

import (
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const poll = 100 * time.Millisecond

// feed drives one port of a detector on synthetic time, one sample per poll.
type feed struct {
	t   *testing.T
	d   *Detector
	now time.Time
	s   Sample
}

func newFeed(t *testing.T, th Thresholds) *feed {
	return &feed{t: t, d: NewDetector(th), now: t0,
		s: Sample{Port: "Ethernet0", PauseValid: 1 << 3, HasWatchdog: true, HasErrors: true}}
}

// step advances one poll, applies change to the sample and returns the events.
func (f *feed) step(change func(*Sample)) []Event {
	f.now = f.now.Add(poll)
	if change != nil {
		change(&f.s)
	}
	return f.d.Observe(f.now, f.s)
}

func pause(n uint64) func(*Sample) { return func(s *Sample) { s.Pause[3] += n } }
func errs(n uint64) func(*Sample)  { return func(s *Sample) { s.Errors += n } }

func (f *feed) expectNone(change func(*Sample), what string) {
	f.t.Helper()
	if evs := f.step(change); len(evs) != 0 {
		f.t.Fatalf("%s at %v: unexpected events %+v", what, f.now.Sub(t0), evs)
	}
}

func (f *feed) expect(change func(*Sample), c Condition, sick bool, what string) Event {
	f.t.Helper()
	evs := f.step(change)
	if len(evs) != 1 || evs[0].Condition != c || evs[0].Sick != sick {
		f.t.Fatalf("%s at %v: events %+v, want one %v sick=%v", what, f.now.Sub(t0), evs, c, sick)
	}
	return evs[0]
}

func stormThresholds() Thresholds {
	th := DefaultThresholds()
	th.StormDetection, th.StormRecovery = 300*time.Millisecond, 500*time.Millisecond
	return th
}

func TestStormBeginsPersistsEnds(t *testing.T) {
	f := newFeed(t, stormThresholds())
	f.expectNone(nil, "first sample (base)")
	// A short burst (two polls of pause) is congestion, not a storm.
	f.expectNone(pause(5), "burst 1")
	f.expectNone(pause(5), "burst 2")
	f.expectNone(nil, "pause stops")
	// Continuous pause: the run starts at the first rising sample and is a
	// storm once it lasted the detection time (300 ms = 3 more polls).
	f.expectNone(pause(1), "storm poll 1")
	f.expectNone(pause(1), "storm poll 2")
	f.expectNone(pause(1), "storm poll 3")
	start := f.now.Add(-2 * poll)
	ev := f.expect(pause(1), PFCStorm, true, "storm detected")
	if !ev.Onset.Equal(start) || !strings.Contains(ev.Detail, "priority 3") || ev.Condition.Reason() != inof.ReasonPFCStorm {
		t.Fatalf("storm event %+v: onset want %v, detail naming priority 3, reason 2", ev, start)
	}
	for i := range 20 {
		f.expectNone(pause(1), "storm persists "+string(rune('a'+i)))
	}
	if !f.d.Sick("Ethernet0", PFCStorm) {
		t.Fatal("Sick: the port is in a storm")
	}
	// Pause stops: healthy once clean for the recovery time (500 ms).
	for range 5 {
		f.expectNone(nil, "recovering")
	}
	// One pause frame restarts the recovery.
	f.expectNone(pause(1), "pause during recovery")
	for range 5 {
		f.expectNone(nil, "recovering again")
	}
	ev = f.expect(nil, PFCStorm, false, "recovered")
	if ev.At.Sub(ev.Onset) != 500*time.Millisecond || ev.Capped {
		t.Fatalf("recovery event %+v: want clean for 500ms, not capped", ev)
	}
}

func TestStormFromWatchdog(t *testing.T) {
	f := newFeed(t, stormThresholds())
	f.expectNone(nil, "base")
	ev := f.expect(func(s *Sample) { s.Stormed = true }, PFCStorm, true, "watchdog stormed")
	if !strings.Contains(ev.Detail, "watchdog") {
		t.Fatalf("detail %q does not name the watchdog", ev.Detail)
	}
	f.expectNone(nil, "still stormed")
	f.s.Stormed = false
	for range 5 {
		f.expectNone(nil, "recovering")
	}
	f.expect(nil, PFCStorm, false, "recovered")
}

func TestStormIgnoresUnwatchedPriorityAndReset(t *testing.T) {
	f := newFeed(t, stormThresholds())
	f.s.PauseValid = 1<<3 | 1<<4
	f.expectNone(nil, "base")
	for range 10 {
		f.expectNone(func(s *Sample) { s.Pause[4]++ }, "priority 4 is not lossless")
	}
	f.s.Pause[3] = 1000
	f.expectNone(nil, "jump")
	f.expectNone(func(s *Sample) { s.Pause[3] = 0 }, "counters cleared")
	f.expectNone(nil, "after clear")
}

func TestErrorRateBelowAndAbove(t *testing.T) {
	th := DefaultThresholds() // more than 10 within 1 s
	th.ErrorRecovery = time.Second
	f := newFeed(t, th)
	f.s.PauseValid = 0
	f.expectNone(nil, "base")
	// 1 error per poll = 10 per second: at the limit, not above it.
	for range 30 {
		f.expectNone(errs(1), "10/s")
	}
	// 2 per poll: above the limit once the window holds more than 10.
	var ev Event
	for i := 0; ; i++ {
		evs := f.step(errs(2))
		if len(evs) > 0 {
			ev = evs[0]
			break
		}
		if i > 10 {
			t.Fatal("20 errors/s never reported")
		}
	}
	if ev.Condition != PacketErrors || !ev.Sick || ev.Condition.Reason() != inof.ReasonPacketErr || !strings.Contains(ev.Detail, "receive errors") {
		t.Fatalf("event %+v", ev)
	}
	// Back to 1 per poll: clean once the window drops to the limit, healthy
	// a recovery time later.
	n := 0
	for {
		n++
		evs := f.step(errs(1))
		if len(evs) == 1 && !evs[0].Sick {
			break
		}
		if len(evs) != 0 || n > 30 {
			t.Fatalf("after %d polls: %+v", n, evs)
		}
	}
	if n < 10 {
		t.Fatalf("healthy after %d polls: recovery needs 1 s clean after the window drained", n)
	}
	// A cleared counter is not a burst of errors.
	f.expectNone(func(s *Sample) { s.Errors = 0 }, "counters cleared")
}

func TestFlappingCapped(t *testing.T) {
	th := stormThresholds()
	th.MaxFlaps, th.FlapWindow = 2, time.Minute
	f := newFeed(t, th)
	f.expectNone(nil, "base")
	stormed := func(on bool) func(*Sample) { return func(s *Sample) { s.Stormed = on } }
	cycle := func() (Event, int) {
		sick := f.expect(stormed(true), PFCStorm, true, "sick")
		polls := 0
		for {
			polls++
			evs := f.step(stormed(false))
			if len(evs) == 1 && !evs[0].Sick {
				return sick, polls
			}
			if len(evs) != 0 || polls > 1000 {
				t.Fatalf("poll %d: %+v", polls, evs)
			}
		}
	}
	ev, polls := cycle()
	if ev.Flaps != 1 || ev.Capped || polls != 6 {
		t.Fatalf("first flap %+v, healthy after %d polls (want 6)", ev, polls)
	}
	ev, polls = cycle()
	if ev.Flaps != 2 || !ev.Capped || polls != 601 {
		t.Fatalf("second flap %+v, healthy after %d polls (want the flap window, 601)", ev, polls)
	}
	// The window has passed: the count starts again.
	ev, _ = cycle()
	if ev.Flaps != 1 || ev.Capped {
		t.Fatalf("after a clean window %+v", ev)
	}
}

func TestThresholdsValidate(t *testing.T) {
	if err := DefaultThresholds().Validate(DefaultInterval); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := DefaultThresholds()
	bad.Priorities = []uint8{3, 3, 9}
	bad.StormDetection = 50 * time.Millisecond
	bad.ErrorWindow = 0
	bad.MaxFlaps = 0
	err := bad.Validate(DefaultInterval)
	if err == nil {
		t.Fatal("bad thresholds accepted")
	}
	for _, want := range []string{"priority 3 listed twice", "priority 9", "storm detection 50ms is shorter than the poll interval", "error window 0s", "max flaps 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
