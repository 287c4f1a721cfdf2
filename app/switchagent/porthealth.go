package switchagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/inof"
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
// a port make its devices inactive with reason 2 or 3. The times default
// to the lossless profile's default PFC watchdog.
type PortHealthOptions struct {
	// Source is where the counters come from: "sonic" (COUNTERS_DB),
	// "linux" (netlink and ethtool) or empty (off).
	Source string `yaml:"source"`
	// Redis is the SONiC Redis unix socket (sonic.DefaultSocket if empty).
	Redis string `yaml:"redis"`
	// PauseStat overrides the Linux driver's per-priority pause statistic
	// (e.g. rx_pause_prio_%d); "-" reads none.
	PauseStat string `yaml:"pause_stat"`
	// Interval is the poll interval.
	Interval time.Duration `yaml:"interval"`
	// Priorities are the lossless priorities watched.
	Priorities     []uint8       `yaml:"priorities"`
	StormDetection time.Duration `yaml:"storm_detection"`
	StormRecovery  time.Duration `yaml:"storm_recovery"`
	ErrorLimit     uint64        `yaml:"error_limit"`
	ErrorWindow    time.Duration `yaml:"error_window"`
	ErrorRecovery  time.Duration `yaml:"error_recovery"`
	MaxFlaps       int           `yaml:"max_flaps"`
	FlapWindow     time.Duration `yaml:"flap_window"`
}

// DefaultPortHealthOptions are port_health's defaults (source off).
func DefaultPortHealthOptions() PortHealthOptions {
	th := porthealth.DefaultThresholds()
	return PortHealthOptions{Interval: porthealth.DefaultInterval, Priorities: th.Priorities,
		StormDetection: th.StormDetection, StormRecovery: th.StormRecovery, ErrorLimit: th.ErrorLimit,
		ErrorWindow: th.ErrorWindow, ErrorRecovery: th.ErrorRecovery, MaxFlaps: th.MaxFlaps, FlapWindow: th.FlapWindow}
}

func (o PortHealthOptions) thresholds() porthealth.Thresholds {
	return porthealth.Thresholds{Priorities: o.Priorities, StormDetection: o.StormDetection, StormRecovery: o.StormRecovery,
		ErrorLimit: o.ErrorLimit, ErrorWindow: o.ErrorWindow, ErrorRecovery: o.ErrorRecovery, MaxFlaps: o.MaxFlaps, FlapWindow: o.FlapWindow}
}

// Validate checks the source and the thresholds.
func (o PortHealthOptions) Validate() error {
	switch o.Source {
	case HealthSourceNone:
		return nil
	case HealthSourceSONiC, HealthSourceLinux:
	default:
		return fmt.Errorf("port_health.source %q: use sonic, linux or leave it empty", o.Source)
	}
	if err := o.thresholds().Validate(o.Interval); err != nil {
		return fmt.Errorf("port_health: %w", err)
	}
	return nil
}

// portHealth runs the Monitor over the access ports and keeps, per port,
// which conditions are sick. Only the agent's loop touches sick.
type portHealth struct {
	mon    *porthealth.Monitor
	close  func() error
	sick   map[string]map[porthealth.Condition]bool
	events *prometheus.CounterVec
	gauge  *prometheus.GaugeVec
}

// newPortHealth opens the configured source; nil when port health is off.
func newPortHealth(o PortHealthOptions, log *slog.Logger, reg prometheus.Registerer) (*portHealth, error) {
	var src porthealth.Source
	var closeSrc func() error
	switch o.Source {
	case HealthSourceNone:
		return nil, nil
	case HealthSourceSONiC:
		s, err := sonic.Open(sonic.Options{Network: "unix", Addr: o.Redis, Priorities: o.Priorities})
		if err != nil {
			return nil, err
		}
		src, closeSrc = s, s.Close
	case HealthSourceLinux:
		s, err := linuxstats.Open(linuxstats.Options{Priorities: o.Priorities, PauseStat: o.PauseStat})
		if err != nil {
			return nil, err
		}
		src, closeSrc = s, s.Close
	default:
		return nil, fmt.Errorf("port_health.source %q", o.Source)
	}
	mon, err := porthealth.New(porthealth.Options{Source: src, Interval: o.Interval, Thresholds: o.thresholds(), Logger: log})
	if err != nil {
		return nil, errors.Join(err, closeSrc())
	}
	h := &portHealth{mon: mon, close: closeSrc, sick: map[string]map[porthealth.Condition]bool{},
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_switch_port_health_events_total",
			Help: "Access ports turning sick or healthy, per port, condition (pfc-storm, packet-errors) and state."},
			[]string{"port", "condition", "state"}),
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inof_switch_port_sick",
			Help: "1 while an access port is reported sick for the condition."}, []string{"port", "condition"})}
	if reg != nil {
		for _, c := range []prometheus.Collector{h.events, h.gauge} {
			if err := reg.Register(c); err != nil {
				return nil, errors.Join(fmt.Errorf("port health metrics: %w", err), closeSrc())
			}
		}
	}
	return h, nil
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

// start runs the Monitor over the access ports until the agent stops.
func (a *Agent) startPortHealth() {
	h := a.health
	if h == nil {
		return
	}
	h.mon.Watch(a.opts.AccessPorts)
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

// onPortHealth applies a port's change of health to its devices.
func (a *Agent) onPortHealth(ctx context.Context, ev porthealth.Event) {
	h := a.health
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
