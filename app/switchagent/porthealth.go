package switchagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/porthealth"
	"github.com/openinof/inof/porthealth/linuxstats"
	"github.com/openinof/inof/porthealth/sonic"
)

// Port health sources (PortHealthOptions.Source).
const (
	HealthSourceNone  = ""
	HealthSourceSONiC = "sonic"
	HealthSourceLinux = "linux"
)

// PortHealthOptions configure the watch on the access ports' health
// (docs/switch-agent.md, "Port health"): a PFC storm or receive errors on
// a port make its devices inactive with reason 2 or 3. The poll interval,
// the priorities and the storm times left out (zero) follow the lossless
// profile in force (its PFC watchdog and lossless priorities); a value
// set here wins over the profile's.
type PortHealthOptions struct {
	// Source is where the counters come from: "sonic" (COUNTERS_DB),
	// "linux" (netlink and ethtool) or empty (off).
	Source string `yaml:"source"`
	// Redis is the SONiC Redis unix socket (sonic.DefaultSocket if empty).
	Redis string `yaml:"redis"`
	// PauseStat overrides the Linux driver's per-priority pause statistic
	// (e.g. rx_pause_prio_%d); "-" reads none.
	PauseStat string `yaml:"pause_stat"`
	// Interval is the poll interval (zero: the profile's watchdog.poll_ms).
	Interval time.Duration `yaml:"interval"`
	// Priorities are the lossless priorities watched (empty: the
	// profile's lossless_priorities).
	Priorities []uint8 `yaml:"priorities"`
	// StormDetection and StormRecovery are a storm's detection and
	// recovery times (zero: the profile's watchdog.detection_ms and
	// restoration_ms).
	StormDetection time.Duration `yaml:"storm_detection"`
	StormRecovery  time.Duration `yaml:"storm_recovery"`
	ErrorLimit     uint64        `yaml:"error_limit"`
	ErrorWindow    time.Duration `yaml:"error_window"`
	ErrorRecovery  time.Duration `yaml:"error_recovery"`
	MaxFlaps       int           `yaml:"max_flaps"`
	FlapWindow     time.Duration `yaml:"flap_window"`
}

// DefaultPortHealthOptions are port_health's defaults (source off; the
// interval, priorities and storm times from the lossless profile).
func DefaultPortHealthOptions() PortHealthOptions {
	th := porthealth.DefaultThresholds()
	return PortHealthOptions{Priorities: []uint8{}, ErrorLimit: th.ErrorLimit, ErrorWindow: th.ErrorWindow, ErrorRecovery: th.ErrorRecovery,
		MaxFlaps: th.MaxFlaps, FlapWindow: th.FlapWindow}
}

// tuning is what the Monitor polls with under profile p: each key set in
// the options, the profile's watchdog and lossless priorities for the
// others.
func (o PortHealthOptions) tuning(p lossless.Profile) porthealth.Tuning {
	ms := func(v uint32) time.Duration { return time.Duration(v) * time.Millisecond }
	pick := func(set time.Duration, profile uint32) time.Duration {
		if set != 0 {
			return set
		}
		return ms(profile)
	}
	prios := o.Priorities
	if len(prios) == 0 {
		prios = p.LosslessPriorities
	}
	return porthealth.Tuning{Interval: pick(o.Interval, p.Watchdog.PollMs), Thresholds: porthealth.Thresholds{
		Priorities: slices.Clone(prios), StormDetection: pick(o.StormDetection, p.Watchdog.DetectionMs),
		StormRecovery: pick(o.StormRecovery, p.Watchdog.RestorationMs), ErrorLimit: o.ErrorLimit,
		ErrorWindow: o.ErrorWindow, ErrorRecovery: o.ErrorRecovery, MaxFlaps: o.MaxFlaps, FlapWindow: o.FlapWindow}}
}

// Validate checks the source and the thresholds, those left out taken
// from the default lossless profile (the one in force until the
// reflectors publish another; each received is checked again).
func (o PortHealthOptions) Validate() error {
	switch o.Source {
	case HealthSourceNone:
		return nil
	case HealthSourceSONiC, HealthSourceLinux:
	default:
		return fmt.Errorf("port_health.source %q: use sonic, linux or leave it empty", o.Source)
	}
	t := o.tuning(lossless.Default())
	if err := t.Thresholds.Validate(t.Interval); err != nil {
		return fmt.Errorf("port_health (keys left out from the default lossless profile): %w", err)
	}
	return nil
}

// portHealth runs the Monitor over the access ports that carry a
// registered device and keeps, per port, which conditions are sick. Only
// the agent's loop touches it after newPortHealth.
type portHealth struct {
	opts    PortHealthOptions
	mon     *porthealth.Monitor
	close   func() error
	sick    map[string]map[porthealth.Condition]bool
	watched []string // the ports handed to the Monitor, sorted
	// since is, per watched port, the Monitor's watch set that added it:
	// an older event about the port is from before its last device left.
	since   map[string]uint64
	events  *prometheus.CounterVec
	gauge   *prometheus.GaugeVec
	refused prometheus.Counter
}

// newPortHealth opens the configured source (or src, when set) and tunes
// the Monitor to the default lossless profile; nil when port health is
// off.
func newPortHealth(o PortHealthOptions, src porthealth.Source, log *slog.Logger, reg prometheus.Registerer) (*portHealth, error) {
	closeSrc := func() error { return nil }
	switch {
	case src != nil:
	case o.Source == HealthSourceNone:
		return nil, nil
	case o.Source == HealthSourceSONiC:
		s, err := sonic.Open(sonic.Options{Network: "unix", Addr: o.Redis, Priorities: o.Priorities})
		if err != nil {
			return nil, err
		}
		src, closeSrc = s, s.Close
	case o.Source == HealthSourceLinux:
		s, err := linuxstats.Open(linuxstats.Options{Priorities: o.Priorities, PauseStat: o.PauseStat})
		if err != nil {
			return nil, err
		}
		src, closeSrc = s, s.Close
	default:
		return nil, fmt.Errorf("port_health.source %q", o.Source)
	}
	t := o.tuning(lossless.Default())
	mon, err := porthealth.New(porthealth.Options{Source: src, Interval: t.Interval, Thresholds: t.Thresholds, Logger: log})
	if err != nil {
		return nil, errors.Join(err, closeSrc())
	}
	h := &portHealth{opts: o, mon: mon, close: closeSrc, sick: map[string]map[porthealth.Condition]bool{},
		since: map[string]uint64{},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_switch_port_health_events_total",
			Help: "Access ports turning sick or healthy, per port, condition (pfc-storm, packet-errors) and state."},
			[]string{"port", "condition", "state"}),
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inof_switch_port_sick",
			Help: "1 while an access port is reported sick for the condition."}, []string{"port", "condition"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_switch_port_health_profiles_refused_total",
			Help: "Lossless profiles whose watchdog gives port health unusable thresholds (the previous ones stay)."})}
	if reg != nil {
		for _, c := range []prometheus.Collector{h.events, h.gauge, h.refused} {
			if err := reg.Register(c); err != nil {
				return nil, errors.Join(fmt.Errorf("port health metrics: %w", err), closeSrc())
			}
		}
	}
	return h, nil
}

// followProfile (loop) tunes the Monitor to the lossless profile p now in
// force; thresholds it makes unusable are refused, logged and counted, and
// the previous ones stay.
func (a *Agent) followProfile(p lossless.Profile) {
	h := a.health
	if h == nil {
		return
	}
	t := h.opts.tuning(p)
	if err := h.mon.Tune(t); err != nil {
		h.refused.Inc()
		in := h.mon.InForce()
		a.log.Error("port health: the lossless profile's watchdog gives unusable thresholds; keeping those in force",
			"profile", p.Name, "err", err, "interval", in.Interval, "storm_detection", in.Thresholds.StormDetection,
			"storm_recovery", in.Thresholds.StormRecovery)
		return
	}
	a.log.Info("port health follows the lossless profile", "profile", p.Name, "interval", t.Interval,
		"storm_detection", t.Thresholds.StormDetection, "storm_recovery", t.Thresholds.StormRecovery)
}

// eventsC is the Monitor's event channel, nil when port health is off.
func (h *portHealth) eventsC() <-chan porthealth.Event {
	if h == nil {
		return nil
	}
	return h.mon.Events()
}

// reason is the reason a port's devices are inactive with: a storm before
// errors, none when healthy.
func (h *portHealth) reason(port string) inof.Reason {
	switch c := h.sick[port]; {
	case c[porthealth.PFCStorm]:
		return inof.ReasonPFCStorm
	case c[porthealth.PacketErrors]:
		return inof.ReasonPacketErr
	}
	return inof.ReasonNone
}

// startPortHealth runs the Monitor, over the access ports that carry a
// device (followPorts), until the agent stops.
func (a *Agent) startPortHealth() {
	h := a.health
	if h == nil {
		return
	}
	a.followPorts()
	a.tasks.spawn("port health", func(ctx context.Context) error {
		err := h.mon.Run(ctx)
		if cerr := h.close(); cerr != nil {
			a.log.Warn("port health: closing the source", "err", cerr)
		}
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
}

// followPorts (loop) hands the Monitor the access ports that carry a
// registered device when that set changed: a port is polled and judged
// from its first device on and forgotten with its last (the Monitor drops
// its detector state; its sick gauges return to 0), so a switch polls as
// many ports as it has devices on. DIM registrations have no port to
// watch.
func (a *Agent) followPorts() {
	h := a.health
	if h == nil {
		return
	}
	ports, changed := a.engine.PortsChanged()
	if !changed {
		return
	}
	ports = slices.DeleteFunc(ports, func(p string) bool { return p == dimPort })
	keep := make(map[string]bool, len(ports))
	for _, p := range ports {
		keep[p] = true
	}
	for _, p := range h.watched {
		if keep[p] {
			delete(keep, p)
			continue
		}
		for c, sick := range h.sick[p] {
			if sick {
				h.gauge.WithLabelValues(p, c.String()).Set(0)
			}
		}
		delete(h.sick, p)
		delete(h.since, p)
	}
	h.watched = ports
	seq := h.mon.Watch(ports)
	for p := range keep { // the ports added
		h.since[p] = seq
	}
}

// onPortHealth applies a port's change of health to its devices.
func (a *Agent) onPortHealth(ctx context.Context, ev porthealth.Event) {
	h := a.health
	if since, ok := h.since[ev.Port]; !ok || ev.Watch < since {
		return // its last device left since: forgotten (followPorts)
	}
	state := "healthy"
	if ev.Sick {
		state = "sick"
	}
	h.events.WithLabelValues(ev.Port, ev.Condition.String(), state).Inc()
	if ev.Sick {
		h.gauge.WithLabelValues(ev.Port, ev.Condition.String()).Set(1)
	} else {
		h.gauge.WithLabelValues(ev.Port, ev.Condition.String()).Set(0)
	}
	if h.sick[ev.Port] == nil {
		h.sick[ev.Port] = map[porthealth.Condition]bool{}
	}
	h.sick[ev.Port][ev.Condition] = ev.Sick
	a.evlog.Info("port health", "port", ev.Port, "condition", ev.Condition.String(), "state", state,
		"detail", ev.Detail, "onset", ev.Onset, "flaps", ev.Flaps, "capped", ev.Capped)
	a.apply(ctx, a.engine.PortHealth(ev.Port, h.reason(ev.Port), time.Now()))
}
