package hostagent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/inof"
)

// metrics are the agent's Prometheus series, all in one registry the caller
// owns.
type metrics struct {
	registrations *prometheus.CounterVec // interface
	queries       *prometheus.CounterVec // interface
	received      *prometheus.CounterVec // interface, state
	acked         *prometheus.CounterVec // interface
	duplicates    *prometheus.CounterVec // interface
	ignored       *prometheus.CounterVec // reason
	drops         *prometheus.CounterVec // interface, reason
	nvme          *prometheus.CounterVec // op, result
	owned         prometheus.Gauge
	carrier       *prometheus.GaugeVec   // interface
	lossless      *prometheus.CounterVec // outcome
	failovers     *prometheus.CounterVec // reason, result
	failoverActed prometheus.Histogram   // notification read to the first action on the path
	stuck         *prometheus.CounterVec // op
	stuckNow      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "inof_host"
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	m := &metrics{
		registrations: cv("registrations_sent_total", "LLDP registrations sent.", "interface"),
		queries:       cv("zone_queries_sent_total", "Zone queries sent.", "interface"),
		received:      cv("notifications_received_total", "Complete notifications addressed to this host.", "interface", "state"),
		acked:         cv("notifications_acked_total", "Notifications ACKed.", "interface"),
		duplicates:    cv("notifications_duplicate_total", "Retransmitted notifications ACKed again but not acted on.", "interface"),
		ignored:       cv("notifications_ignored_total", "ACKed notifications with nothing to do (target role, host notification, bad state, unsupported protocol).", "reason"),
		drops:         cv("frames_dropped_total", "Received frames dropped, by reason.", "interface", "reason"),
		nvme:          cv("nvme_operations_total", "nvme-cli operations by result.", "op", "result"),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "controllers_owned",
			Help: "NVMe-oF controllers this agent created and still owns."}),
		carrier: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "carrier",
			Help: "1 when the interface has carrier."}, []string{"interface"}),
		lossless: cv("lossless_profiles_total", "Lossless profiles handled, by outcome: planned, applied, apply-failed, refused, fetch-failed.", "outcome"),
		failovers: cv("failovers_total", "Paths named by an inactive notification, by its reason and the result: failed over "+
			"(sibling, last-path) or not (kept, not-live, error).", "reason", "result"),
		failoverActed: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "failover_action_seconds",
			Help: "Time from reading an inactive notification to the first action that moves a failed-over path's I/O " +
				"(TCP abort or reset_controller): the agent's share of the I/O stall.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}), // 100 µs … 3.3 s
		stuck: cv("nvme_stuck_total", "NVMe jobs (nvme-cli or sysfs) still running after nvme.command_timeout, by operation.", "op"),
		stuckNow: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "nvme_stuck",
			Help: "NVMe jobs running now for longer than nvme.command_timeout."}),
	}
	for _, c := range []prometheus.Collector{m.registrations, m.queries, m.received, m.acked, m.duplicates,
		m.ignored, m.drops, m.nvme, m.owned, m.carrier, m.lossless, m.failovers, m.failoverActed, m.stuck, m.stuckNow} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every reason an inactive notification carries and every result, at
	// zero from the start (docs/operations.md, "Metrics").
	for r := inof.ReasonLinkDown; r.Valid(); r++ {
		for _, res := range failoverResults {
			m.failovers.WithLabelValues(r.String(), res)
		}
	}
	return m, nil
}

// failoverResults are the results of inof_host_failovers_total.
var failoverResults = []string{"sibling", "last-path", "kept", "not-live", "error"}

// failover counts one path (or, for "error" before any path, one job) of
// a failover for reason r.
func (m *metrics) failover(r inof.Reason, result string) {
	m.failovers.WithLabelValues(r.String(), result).Inc()
}

func (m *metrics) op(op string, err error) {
	r := "ok"
	if err != nil {
		r = "failed"
	}
	m.nvme.WithLabelValues(op, r).Inc()
}
