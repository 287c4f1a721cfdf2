package porthealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/internal/ratelimit"
)

// Source reads port counters from a platform.
type Source interface {
	// Read returns one sample per port, in the order given. An error means
	// nothing could be read this time (the platform is unreachable); a
	// port whose counters alone are missing has Sample.Err set.
	Read(ctx context.Context, ports []string) ([]Sample, error)
}

// PrioritySource is a Source that reads the pause counters of chosen
// priorities only. The Monitor's goroutine calls SetPriorities before a
// read whenever the watched priorities changed (Monitor.Tune), so such a
// source reads what the thresholds in force watch.
type PrioritySource interface {
	Source
	SetPriorities(prios []uint8)
}

// Clock is the Monitor's time source; tests drive a fake one.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the Clock of the time package.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker implements Clock.
func (SystemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (s sysTicker) C() <-chan time.Time { return s.t.C }
func (s sysTicker) Stop()               { s.t.Stop() }

// DefaultInterval is the poll interval for zero: the lossless profile's
// default watchdog poll interval.
const DefaultInterval = 200 * time.Millisecond

// Options configure a Monitor.
type Options struct {
	Source Source
	// Interval is the poll interval (DefaultInterval if zero).
	Interval time.Duration
	// Thresholds are the detection parameters (DefaultThresholds if zero).
	Thresholds Thresholds
	// Clock is the time source (SystemClock if nil).
	Clock  Clock
	Logger *slog.Logger
}

// Stats are a Monitor's counters since it was made.
type Stats struct {
	Polls      uint64 // polls that read the source
	ReadErrors uint64 // polls where the source could not be read at all
	PortErrors uint64 // port samples that could not be read
}

// Monitor polls a Source for the watched ports and delivers the
// Detector's events on a channel from the one goroutine that runs Run.
type Monitor struct {
	opts   Options
	det    *Detector
	events chan Event
	limit  *ratelimit.Log

	mu      sync.Mutex
	pending []string // the latest watch set not yet taken by Run
	seq     uint64   // of the latest Watch
	tuning  *Tuning  // the latest tuning not yet taken by Run
	changed chan struct{}

	inForce atomic.Pointer[Tuning] // what Run polls with

	polls, readErrs, portErrs atomic.Uint64
}

// New validates the options and returns a Monitor; call Run to start it.
func New(opts Options) (*Monitor, error) {
	if opts.Source == nil {
		return nil, errors.New("porthealth: no source")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Thresholds.Priorities == nil && opts.Thresholds.StormDetection == 0 {
		opts.Thresholds = DefaultThresholds()
	}
	if err := opts.Thresholds.Validate(opts.Interval); err != nil {
		return nil, fmt.Errorf("porthealth: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Monitor{
		opts:    opts,
		det:     NewDetector(opts.Thresholds),
		events:  make(chan Event, 64),
		limit:   ratelimit.NewLog(0, opts.Clock.Now),
		changed: make(chan struct{}, 1),
	}
	m.inForce.Store(&Tuning{Interval: opts.Interval, Thresholds: opts.Thresholds.clone()})
	if ps, ok := opts.Source.(PrioritySource); ok {
		ps.SetPriorities(slices.Clone(opts.Thresholds.Priorities))
	}
	return m, nil
}

// Tuning is a poll interval with the thresholds it is used with.
type Tuning struct {
	Interval   time.Duration
	Thresholds Thresholds
}

// Tune replaces the poll interval and the thresholds; Run takes them
// before its next poll, as it takes a watch set. Values Thresholds.Validate
// refuses are returned as an error and change nothing. The ports keep their
// state: a sick port stays sick until it recovers under the new thresholds,
// and a storm run or an error window in progress is judged by them from
// the next poll (Detector.SetThresholds).
func (m *Monitor) Tune(t Tuning) error {
	if err := t.Thresholds.Validate(t.Interval); err != nil {
		return fmt.Errorf("porthealth: %w", err)
	}
	t.Thresholds = t.Thresholds.clone()
	m.mu.Lock()
	m.tuning = &t
	m.mu.Unlock()
	m.signal()
	return nil
}

// InForce returns the interval and thresholds Run polls with now (those
// of New until Run took a Tune).
func (m *Monitor) InForce() Tuning {
	t := *m.inForce.Load()
	t.Thresholds = t.Thresholds.clone()
	return t
}

func (m *Monitor) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Events delivers the port events. Run blocks while it is full.
func (m *Monitor) Events() <-chan Event { return m.events }

// Watch sets the ports to watch, replacing the earlier set; Run takes it
// before its next poll. A port left out loses its state without an event.
// It returns the set's sequence number (1, 2, ...): events decided under
// this set or a later one carry at least that number in Event.Watch, so a
// caller can tell an event still on its way about a port it dropped from
// one about the port watched again.
func (m *Monitor) Watch(ports []string) uint64 {
	m.mu.Lock()
	m.pending = slices.Clone(ports)
	if m.pending == nil {
		m.pending = []string{}
	}
	m.seq++
	seq := m.seq
	m.mu.Unlock()
	m.signal()
	return seq
}

// Stats returns the counters.
func (m *Monitor) Stats() Stats {
	return Stats{Polls: m.polls.Load(), ReadErrors: m.readErrs.Load(), PortErrors: m.portErrs.Load()}
}

// Run polls until ctx ends and returns ctx's error. Only one Run may run.
func (m *Monitor) Run(ctx context.Context) error {
	r := &runState{tick: m.opts.Clock.NewTicker(m.opts.Interval), interval: m.opts.Interval}
	defer func() { r.tick.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.changed:
			m.take(r)
		case <-r.tick.C():
			select { // a Watch or Tune made before this tick applies to it
			case <-m.changed:
				m.take(r)
			default:
			}
			if err := m.poll(ctx, r); err != nil {
				return err
			}
		}
	}
}

// runState is what Run owns besides the detector.
type runState struct {
	tick     Ticker
	ports    []string
	seq      uint64 // of the watch set ports is
	interval time.Duration
}

// take installs the pending watch set, forgetting the ports it dropped,
// and the pending tuning, restarting the ticker if the interval changed.
func (m *Monitor) take(r *runState) {
	m.mu.Lock()
	ports, t := m.pending, m.tuning
	m.pending, m.tuning = nil, nil
	r.seq = m.seq
	m.mu.Unlock()
	if ports != nil {
		keep := make(map[string]bool, len(ports))
		for _, p := range ports {
			keep[p] = true
		}
		for _, p := range r.ports {
			if !keep[p] {
				m.det.Forget(p)
			}
		}
		r.ports = ports
	}
	if t == nil {
		return
	}
	old := m.inForce.Load()
	if t.Interval != old.Interval {
		r.tick.Stop()
		r.tick = m.opts.Clock.NewTicker(t.Interval)
	}
	r.interval = t.Interval
	if ps, ok := m.opts.Source.(PrioritySource); ok && !slices.Equal(t.Thresholds.Priorities, old.Thresholds.Priorities) {
		ps.SetPriorities(slices.Clone(t.Thresholds.Priorities))
	}
	m.det.SetThresholds(t.Thresholds)
	m.inForce.Store(t)
	m.opts.Logger.Info("port health: thresholds in force", "interval", t.Interval, "priorities", fmt.Sprint(ints(t.Thresholds.Priorities)),
		"storm_detection", t.Thresholds.StormDetection, "storm_recovery", t.Thresholds.StormRecovery,
		"error_limit", t.Thresholds.ErrorLimit, "error_window", t.Thresholds.ErrorWindow,
		"error_recovery", t.Thresholds.ErrorRecovery, "max_flaps", t.Thresholds.MaxFlaps, "flap_window", t.Thresholds.FlapWindow)
}

// poll reads the source once (bounded by one interval) and delivers the
// events; it returns an error only when ctx ended.
func (m *Monitor) poll(ctx context.Context, r *runState) error {
	ports, interval := r.ports, r.interval
	if len(ports) == 0 {
		return nil
	}
	now := m.opts.Clock.Now() // the samples' time: when the read began
	rctx, cancel := context.WithTimeout(ctx, interval)
	samples, err := m.opts.Source.Read(rctx, ports)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		m.readErrs.Add(1)
		m.limit.Warn(m.opts.Logger, "port health: cannot read the counters", "err", err)
		return nil
	}
	m.polls.Add(1)
	for _, s := range samples {
		if s.Err != nil {
			m.portErrs.Add(1)
			m.limit.Warn(m.opts.Logger, "port health: cannot read a port's counters", "port", s.Port, "err", s.Err)
			continue
		}
		for _, ev := range m.det.Observe(now, s) {
			ev.Watch = r.seq
			select {
			case m.events <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// ints widens priorities for logs (a []uint8 would print as bytes).
func ints(ps []uint8) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	return out
}
