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
	changed chan struct{}

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
	return &Monitor{
		opts:    opts,
		det:     NewDetector(opts.Thresholds),
		events:  make(chan Event, 64),
		limit:   ratelimit.NewLog(0, opts.Clock.Now),
		changed: make(chan struct{}, 1),
	}, nil
}

// Events delivers the port events. Run blocks while it is full.
func (m *Monitor) Events() <-chan Event { return m.events }

// Watch sets the ports to watch, replacing the earlier set; Run takes it
// before its next poll. A port left out loses its state without an event.
func (m *Monitor) Watch(ports []string) {
	m.mu.Lock()
	m.pending = slices.Clone(ports)
	if m.pending == nil {
		m.pending = []string{}
	}
	m.mu.Unlock()
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (m *Monitor) Stats() Stats {
	return Stats{Polls: m.polls.Load(), ReadErrors: m.readErrs.Load(), PortErrors: m.portErrs.Load()}
}

// Run polls until ctx ends and returns ctx's error. Only one Run may run.
func (m *Monitor) Run(ctx context.Context) error {
	tick := m.opts.Clock.NewTicker(m.opts.Interval)
	defer tick.Stop()
	var ports []string
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.changed:
			ports = m.take(ports)
		case <-tick.C():
			select { // a Watch made before this tick applies to it
			case <-m.changed:
				ports = m.take(ports)
			default:
			}
			if err := m.poll(ctx, ports); err != nil {
				return err
			}
		}
	}
}

// take installs the pending watch set and forgets the ports it dropped.
func (m *Monitor) take(old []string) []string {
	m.mu.Lock()
	ports := m.pending
	m.pending = nil
	m.mu.Unlock()
	if ports == nil {
		return old
	}
	for _, p := range old {
		if !slices.Contains(ports, p) {
			m.det.Forget(p)
		}
	}
	return ports
}

// poll reads the source once (bounded by one interval) and delivers the
// events; it returns an error only when ctx ended.
func (m *Monitor) poll(ctx context.Context, ports []string) error {
	if len(ports) == 0 {
		return nil
	}
	now := m.opts.Clock.Now() // the samples' time: when the read began
	rctx, cancel := context.WithTimeout(ctx, m.opts.Interval)
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
			select {
			case m.events <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
