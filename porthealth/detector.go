package porthealth

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openinof/inof/inof"
)

// Condition is a kind of port sickness.
type Condition uint8

// Conditions a Detector reports.
const (
	PFCStorm     Condition = 1
	PacketErrors Condition = 2
)

// Conditions lists every condition, in order.
var Conditions = []Condition{PFCStorm, PacketErrors}

func (c Condition) String() string {
	switch c {
	case PFCStorm:
		return "pfc-storm"
	case PacketErrors:
		return "packet-errors"
	}
	return fmt.Sprintf("condition(%d)", uint8(c))
}

// Reason is the host-protocol reason a device on a port sick with c is
// reported inactive with (inof.ReasonPFCStorm, inof.ReasonPacketErr).
func (c Condition) Reason() inof.Reason {
	if c == PFCStorm {
		return inof.ReasonPFCStorm
	}
	return inof.ReasonPacketErr
}

// NumPriorities is the number of IEEE 802.1p priorities.
const NumPriorities = 8

// Sample is one read of a port's counters. Counters are cumulative as the
// platform keeps them; a counter lower than the previous read is taken as
// a reset (counters cleared), not as a change.
type Sample struct {
	Port string
	// Err is set when the port's counters could not be read; the sample is
	// then ignored (the port keeps its state).
	Err error
	// Pause holds the pause frames received per priority; only priorities
	// in PauseValid (bit n for priority n) were read.
	Pause      [NumPriorities]uint64
	PauseValid uint8
	// Stormed reports that the platform's PFC watchdog holds one of the
	// watched priorities' queues in the storm state; HasWatchdog that the
	// platform reports a watchdog state at all.
	Stormed     bool
	HasWatchdog bool
	// Errors counts received frames dropped as bad (FCS/CRC, alignment,
	// input errors); HasErrors reports that the source reads them.
	Errors    uint64
	HasErrors bool
}

// Thresholds are the detection parameters. DefaultThresholds gives the
// defaults, which follow the lossless profile's default PFC watchdog
// (lossless.Default: detection 200 ms, restoration 200 ms, priority 3).
type Thresholds struct {
	// Priorities are the lossless priorities whose pause counters and
	// watchdog queues are watched.
	Priorities []uint8
	// StormDetection: a watched priority whose pause counter rose at every
	// poll for this long is in a storm.
	StormDetection time.Duration
	// StormRecovery: a stormed port is healthy again once no watched
	// priority received a pause frame, and the watchdog reported no storm,
	// for this long.
	StormRecovery time.Duration
	// ErrorLimit: more than this many receive errors within ErrorWindow make
	// the port sick; it is healthy again once the count within the window
	// stayed at or below the limit for ErrorRecovery.
	ErrorLimit    uint64
	ErrorWindow   time.Duration
	ErrorRecovery time.Duration
	// MaxFlaps caps how often one port and condition may turn sick within
	// FlapWindow: once it has MaxFlaps times, its next recovery waits until
	// it has been clean for FlapWindow (and the event says Capped).
	MaxFlaps   int
	FlapWindow time.Duration
}

// DefaultThresholds returns the defaults: the lossless profile's default
// watchdog times for storms, more than 10 errors within 1 s for packet
// errors with a 10 s recovery, and at most 3 flaps per 10 minutes.
func DefaultThresholds() Thresholds {
	return Thresholds{
		Priorities:     []uint8{3},
		StormDetection: 200 * time.Millisecond,
		StormRecovery:  200 * time.Millisecond,
		ErrorLimit:     10,
		ErrorWindow:    time.Second,
		ErrorRecovery:  10 * time.Second,
		MaxFlaps:       3,
		FlapWindow:     10 * time.Minute,
	}
}

// clone copies t with its own Priorities.
func (t Thresholds) clone() Thresholds {
	t.Priorities = slices.Clone(t.Priorities)
	return t
}

// Validate checks the thresholds against the poll interval: every time
// must be positive and the detection time and the error window at least
// one poll interval, since a storm or a rate cannot be seen between polls.
func (t Thresholds) Validate(interval time.Duration) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if interval <= 0 {
		add("poll interval %v: must be positive", interval)
	}
	if len(t.Priorities) == 0 {
		add("priorities: at least one lossless priority is watched")
	}
	seen := uint8(0)
	for _, p := range t.Priorities {
		if p >= NumPriorities {
			add("priority %d: priorities are 0–7", p)
			continue
		}
		if seen&(1<<p) != 0 {
			add("priority %d listed twice", p)
		}
		seen |= 1 << p
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"storm detection", t.StormDetection}, {"storm recovery", t.StormRecovery}, {"error window", t.ErrorWindow},
		{"error recovery", t.ErrorRecovery}, {"flap window", t.FlapWindow}} {
		if d.v <= 0 {
			add("%s %v: must be positive", d.name, d.v)
		}
	}
	if interval > 0 && t.StormDetection > 0 && t.StormDetection < interval {
		add("storm detection %v is shorter than the poll interval %v: a storm cannot be told from one pause burst", t.StormDetection, interval)
	}
	if interval > 0 && t.ErrorWindow > 0 && t.ErrorWindow < interval {
		add("error window %v is shorter than the poll interval %v", t.ErrorWindow, interval)
	}
	if t.MaxFlaps < 1 {
		add("max flaps %d: at least 1", t.MaxFlaps)
	}
	return errors.Join(errs...)
}

// Event reports a port turning sick or healthy for one condition.
type Event struct {
	Port      string
	Condition Condition
	Sick      bool
	// At is the time of the sample that decided the change; Onset is when
	// the condition was first seen in this episode (sick) or when the port
	// turned clean (healthy).
	At, Onset time.Time
	// Detail says what was seen, for logs and the event feed.
	Detail string
	// Flaps is how often the port turned sick for this condition within
	// the flap window, this time included (sick events).
	Flaps int
	// Capped: the port reached MaxFlaps, so its recovery waits for a clean
	// flap window (sick events), or waited for one (healthy events).
	Capped bool
	// Watch is the sequence number of the Monitor's watch set the event
	// was decided under (Monitor.Watch); zero from a bare Detector.
	Watch uint64
}

// Detector holds the per-port state of both conditions. It is not safe for
// concurrent use: one goroutine owns it (Monitor).
type Detector struct {
	th    Thresholds
	watch uint8 // bit n: priority n is watched
	ports map[string]*portState
}

type portState struct {
	storm  stormState
	errs   errState
	health [3]condState // indexed by Condition
}

type stormState struct {
	last   [NumPriorities]uint64
	have   uint8
	rising [NumPriorities]time.Time // first sample of an unbroken run of rises; zero if none
}

type errPoint struct {
	at time.Time
	v  uint64
}

type errState struct {
	points []errPoint // oldest first; the first is the base at or before the window's start
}

type condState struct {
	sick       bool
	onset      time.Time
	cleanSince time.Time
	flaps      []time.Time
	capped     bool // this episode reached MaxFlaps: recovery waits for FlapWindow
}

// NewDetector returns a detector for valid thresholds (see
// Thresholds.Validate).
func NewDetector(th Thresholds) *Detector {
	d := &Detector{th: th, ports: map[string]*portState{}}
	for _, p := range th.Priorities {
		d.watch |= 1 << p
	}
	return d
}

// SetThresholds replaces the thresholds (valid ones, see
// Thresholds.Validate) and keeps every port's state: a sick port stays sick
// until it recovers under the new ones, runs and windows in progress are
// judged by them from the next sample. A priority no longer watched drops
// its pause run, so watched again later it starts afresh.
func (d *Detector) SetThresholds(th Thresholds) {
	d.th = th
	d.watch = 0
	for _, p := range th.Priorities {
		d.watch |= 1 << p
	}
	for _, ps := range d.ports {
		for p := range uint8(NumPriorities) {
			if d.watch&(1<<p) == 0 {
				ps.storm.have &^= 1 << p
				ps.storm.rising[p] = time.Time{}
			}
		}
	}
}

// Forget drops a port's state (it is no longer watched).
func (d *Detector) Forget(port string) { delete(d.ports, port) }

// Sick reports whether port is currently reported sick for c.
func (d *Detector) Sick(port string, c Condition) bool {
	ps := d.ports[port]
	return ps != nil && ps.health[c].sick
}

// Observe feeds one sample taken at now and returns the events it causes
// (none, or one per condition that changed). Samples of one port must come
// in time order.
func (d *Detector) Observe(now time.Time, s Sample) []Event {
	if s.Err != nil {
		return nil
	}
	ps := d.ports[s.Port]
	if ps == nil {
		ps = &portState{}
		d.ports[s.Port] = ps
	}
	var out []Event
	if s.PauseValid&d.watch != 0 || s.HasWatchdog {
		bad, clean, onset, detail := d.storm(ps, now, s, !ps.health[PFCStorm].sick)
		if ev, ok := d.step(&ps.health[PFCStorm], s.Port, PFCStorm, now, bad, clean, onset, detail, d.th.StormRecovery); ok {
			out = append(out, ev)
		}
	}
	if s.HasErrors {
		bad, onset, detail := d.errors(ps, now, s.Errors, !ps.health[PacketErrors].sick)
		if ev, ok := d.step(&ps.health[PacketErrors], s.Port, PacketErrors, now, bad, !bad, onset, detail, d.th.ErrorRecovery); ok {
			out = append(out, ev)
		}
	}
	return out
}

// storm updates the pause runs and reports whether the port is in a storm
// now (bad), whether it is clean (no pause at all, no watchdog storm), when
// the storm began and, if describe, what was seen.
func (d *Detector) storm(ps *portState, now time.Time, s Sample, describe bool) (bad, clean bool, onset time.Time, detail string) {
	st := &ps.storm
	clean = !s.Stormed
	for p := range uint8(NumPriorities) {
		bit := uint8(1) << p
		if d.watch&bit == 0 || s.PauseValid&bit == 0 {
			continue
		}
		v := s.Pause[p]
		rose := st.have&bit != 0 && v > st.last[p]
		st.last[p], st.have = v, st.have|bit
		if !rose {
			st.rising[p] = time.Time{}
			continue
		}
		clean = false
		if st.rising[p].IsZero() {
			st.rising[p] = now
		}
		if run := now.Sub(st.rising[p]); run >= d.th.StormDetection && !bad {
			bad, onset = true, st.rising[p]
			if describe {
				detail = fmt.Sprintf("priority %d paused at every poll for %v", p, run)
			}
		}
	}
	if s.Stormed && !bad {
		bad, onset, detail = true, now, "the platform's PFC watchdog reports a watched queue stormed"
	}
	return bad, clean, onset, detail
}

// errors records the error counter and reports whether the count within the
// window exceeds the limit (and, if describe, what was seen).
func (d *Detector) errors(ps *portState, now time.Time, v uint64, describe bool) (bad bool, onset time.Time, detail string) {
	es := &ps.errs
	if n := len(es.points); n > 0 && v < es.points[n-1].v {
		es.points = es.points[:0] // counters cleared
	}
	es.points = append(es.points, errPoint{now, v})
	start := now.Add(-d.th.ErrorWindow)
	// Keep one point at or before the window's start as the base.
	drop := 0
	for drop+1 < len(es.points) && !es.points[drop+1].at.After(start) {
		drop++
	}
	es.points = es.points[drop:]
	base := es.points[0]
	count := v - base.v
	if count <= d.th.ErrorLimit {
		return false, time.Time{}, ""
	}
	onset = base.at
	for _, p := range es.points {
		if p.v > base.v {
			break
		}
		onset = p.at
	}
	if !describe {
		return true, onset, ""
	}
	return true, onset, fmt.Sprintf("%d receive errors within %v (limit %d)", count, now.Sub(base.at), d.th.ErrorLimit)
}

// step moves one condition's state machine: bad turns it sick, a clean
// stretch of recovery (or of the flap window once capped) turns it healthy.
func (d *Detector) step(cs *condState, port string, c Condition, now time.Time, bad, clean bool, onset time.Time, detail string, recovery time.Duration) (Event, bool) {
	if bad {
		cs.cleanSince = time.Time{}
		if cs.sick {
			return Event{}, false
		}
		cs.flaps = pruneBefore(cs.flaps, now.Add(-d.th.FlapWindow))
		cs.flaps = append(cs.flaps, now)
		cs.sick, cs.onset, cs.capped = true, onset, len(cs.flaps) >= d.th.MaxFlaps
		return Event{Port: port, Condition: c, Sick: true, At: now, Onset: onset, Detail: detail,
			Flaps: len(cs.flaps), Capped: cs.capped}, true
	}
	if !cs.sick {
		return Event{}, false
	}
	if !clean {
		cs.cleanSince = time.Time{}
		return Event{}, false
	}
	if cs.cleanSince.IsZero() {
		cs.cleanSince = now
	}
	wait := recovery
	if cs.capped {
		wait = max(wait, d.th.FlapWindow)
	}
	cleanFor := now.Sub(cs.cleanSince)
	if cleanFor < wait {
		return Event{}, false
	}
	cs.sick = false
	return Event{Port: port, Condition: c, At: now, Onset: cs.cleanSince, Capped: cs.capped,
		Detail: fmt.Sprintf("clean for %v", cleanFor)}, true
}

// pruneBefore drops the times before t from a sorted slice.
func pruneBefore(ts []time.Time, t time.Time) []time.Time {
	i := 0
	for i < len(ts) && ts[i].Before(t) {
		i++
	}
	return append(ts[:0], ts[i:]...)
}
