package switchagent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/l2proto"
)

// metrics is the agent's Prometheus collector. Counters the loop owns are
// prometheus counters; the rest is read from the parts at scrape time.
type metrics struct {
	a              *Agent
	drops          *l2proto.DropCounter
	delivered      prometheus.Histogram
	queriesDropped prometheus.Counter
	notifyRefused  prometheus.Counter
	badConfig      prometheus.Counter

	registrations, refused, records, recordsRefused, untrusted, notifications, sessions, bfdSessions, dropped *prometheus.Desc
}

func newMetrics(a *Agent) *metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("inof_switch_"+name, help, labels, nil)
	}
	return &metrics{a: a, drops: l2proto.NewDropCounter(a.log, 0),
		delivered: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "inof_switch_notification_ack_seconds",
			Help:    "Time from handing a notification to the notifier to its ACK.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		queriesDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_switch_zone_queries_dropped_total",
			Help: "Zone queries dropped because the agent was behind."}),
		notifyRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_switch_notifications_refused_total",
			Help: "Notifications the notifier refused (queue full or stopped)."}),
		badConfig: prometheus.NewCounter(prometheus.CounterOpts{Name: "inof_switch_config_records_refused_total",
			Help: "Configuration records that could not be assembled."}),
		registrations:  d("registrations", "Devices registered on the access ports."),
		refused:        d("registrations_refused_total", "Registrations refused by the table bounds."),
		records:        d("device_records", "Device records known (all switches, this one included)."),
		recordsRefused: d("device_records_refused_total", "Device records refused at the device table's bound (max_devices)."),
		untrusted: d("records_refused_total", "Records refused because their sender does not own them (docs/security.md), by reason.",
			"reason"),
		notifications: d("notifications_total", "Notifications by outcome, summed over the access ports.", "outcome"),
		sessions:      d("bgp_sessions", "BGP sessions to the reflectors by state.", "state"),
		bfdSessions:   d("bfd_sessions", "BFD sessions by state.", "state"),
		dropped:       d("frames_dropped_total", "Frames dropped on the access ports by reason.", "reason"),
	}
}

// notified records a notifier result (called by the notifiers).
func (m *metrics) notified(r l2proto.Result) {
	if r.Err == nil {
		m.delivered.Observe(r.Latency.Seconds())
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.registrations, m.refused, m.records, m.recordsRefused, m.untrusted, m.notifications, m.sessions, m.bfdSessions, m.dropped} {
		ch <- d
	}
	for _, c := range []prometheus.Collector{m.delivered, m.queriesDropped, m.notifyRefused, m.badConfig} {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	a := m.a
	a.mu.Lock()
	reg, ports, speaker, mgr := a.reg, a.ports, a.speaker, a.bfd
	a.mu.Unlock()
	for _, c := range []prometheus.Collector{m.delivered, m.queriesDropped, m.notifyRefused, m.badConfig} {
		c.Collect(ch)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	if reg != nil {
		st := reg.Stats()
		gauge(m.registrations, float64(st.Entries))
		counter(m.refused, float64(st.Refused))
	}
	gauge(m.records, float64(a.table.Len()))
	counter(m.recordsRefused, float64(a.table.Stats().Refused))
	for reason, v := range a.refusals.Counts() {
		counter(m.untrusted, float64(v), reason)
	}
	var sum l2proto.NotifierStats
	for _, p := range ports {
		st := p.nt.Stats()
		sum.Sent += st.Sent
		sum.Retransmits += st.Retransmits
		sum.Delivered += st.Delivered
		sum.GaveUp += st.GaveUp
		sum.Superseded += st.Superseded
	}
	for outcome, v := range map[string]uint64{"sent": sum.Sent, "retransmitted": sum.Retransmits, "acked": sum.Delivered,
		"gave_up": sum.GaveUp, "superseded": sum.Superseded} {
		counter(m.notifications, float64(v), outcome)
	}
	if speaker != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if ns, err := speaker.Neighbors(ctx); err == nil {
			by := map[string]int{}
			for _, n := range ns {
				by[n.State.String()]++
			}
			for st, n := range by {
				gauge(m.sessions, float64(n), st)
			}
		}
	}
	if mgr != nil {
		by := map[string]int{}
		for _, s := range mgr.Sessions() {
			by[s.State.String()]++
		}
		for st, n := range by {
			gauge(m.bfdSessions, float64(n), st)
		}
	}
	for reason, v := range m.drops.Counts() {
		counter(m.dropped, float64(v), reason)
	}
}
