package discovery

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's counters, one Collector.
type metrics struct {
	accepted prometheus.Counter
	refused  *prometheus.CounterVec // reason: host, total, interface
	active   prometheus.Gauge
	errors   *prometheus.CounterVec // kind: malformed, digest, timeout
	connects *prometheus.CounterVec // result: ok, wrong-nqn, invalid
	commands *prometheus.CounterVec // status: success, error
	aens     prometheus.Counter
	dims     *prometheus.CounterVec // outcome: register, deregister, refused
	// entriesRefused counts log entries left out for an NQN nqnOK refuses.
	entriesRefused prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_discovery_connections_accepted_total",
			Help: "Host connections the discovery controller accepted."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_discovery_connections_refused_total",
			Help: "Host connections closed at once, by reason: a limit (host, total), or not from an access port's segment (interface)."}, []string{"reason"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "inof_discovery_connections",
			Help: "Host connections being served."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_discovery_errors_total",
			Help: "Connections ended or commands failed by transport errors, by kind."}, []string{"kind"}),
		connects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_discovery_connects_total",
			Help: "Fabrics Connect commands by result (ok, wrong-nqn, invalid)."}, []string{"result"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_discovery_commands_total",
			Help: "Admin and fabrics commands completed, by outcome (success, error)."}, []string{"outcome"}),
		aens: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_discovery_aens_total",
			Help: "Asynchronous event requests completed with the discovery log change notice."}),
		dims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_discovery_registrations_total",
			Help: "Discovery Information Management commands (TP 8010) by outcome (register, deregister, refused)."}, []string{"outcome"}),
		entriesRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_discovery_entries_refused_total",
			Help: "Discovery log entries left out because their NQN could carry connect options or control characters."}),
	}
	// Every labelled series at zero from the start, so that increase()
	// and the alerts see the first event (docs/operations.md, "Metrics").
	for vec, values := range map[*prometheus.CounterVec][]string{
		m.refused:  {"host", "total", "interface"},
		m.errors:   {"malformed", "digest", "timeout"},
		m.connects: {"ok", "wrong-nqn", "invalid"},
		m.commands: {"success", "error"},
		m.dims:     {"register", "deregister", "refused"},
	} {
		for _, v := range values {
			vec.WithLabelValues(v)
		}
	}
	return m
}

func (m *metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.accepted, m.refused, m.active, m.errors, m.connects, m.commands, m.aens, m.dims, m.entriesRefused}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.all() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.all() {
		c.Collect(ch)
	}
}
