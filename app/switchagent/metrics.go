package switchagent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
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

	up, registrations, refused, records, recordsRefused, untrusted, notifications, sessions, bfdSessions, bfdChanges, dropped *prometheus.Desc
	reflectorDowns                                                                                                            *prometheus.Desc
	format, setChanges, setUpdates, configHeld                                                                                *prometheus.Desc
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
		up:             d("up", "1 while the switch agent runs and its BGP speaker is alive, or runs in direct mode (as /healthz)."),
		registrations:  d("registrations", "Devices registered on the access ports."),
		refused:        d("registrations_refused_total", "Registrations refused by the table bounds."),
		records:        d("device_records", "Device records known (all switches, this one included)."),
		recordsRefused: d("device_records_refused_total", "Device records refused at the device table's bound (max_devices)."),
		untrusted: d("records_refused_total", "Records refused because their sender does not own them (docs/security.md), by reason.",
			"reason"),
		notifications: d("notifications_total", "Notifications by outcome, summed over the access ports: sent (every send, "+
			"retransmissions included), retransmitted, send-failed (the port refused the frame; sent again on the timer), "+
			"acked, gave-up, superseded.", "outcome"),
		sessions:    d("bgp_sessions", "BGP sessions to the reflectors by state.", "state"),
		bfdSessions: d("bfd_sessions", "BFD sessions by state.", "state"),
		bfdChanges:  d("bfd_transitions_total", "BFD session state changes, by the state entered (a rising count into down: flapping).", "state"),
		reflectorDowns: d("bfd_reflector_downs_total", "BFD downs towards a reflector whose session stood, by outcome: confirmed "+
			"(the reflector dropped: its routes, or its session when no other reflector serves) or unconfirmed (its kernel "+
			"answered echo and BFD came back within the hold: session and routes kept).", "outcome"),
		dropped: d("frames_dropped_total", "Frames dropped on the access ports by reason.", "reason"),
		format:  d("record_format", "1 for the record format the switch publishes in (per-device, sets), 0 for the other.", "format"),
		setChanges: d("device_set_changes_total", "Changes made to this switch's device set records (devices published, "+
			"withdrawn, retired, merged); divided by inof_switch_device_set_updates_total it is the changes one UPDATE carried."),
		setUpdates: d("device_set_updates_total", "Device set records sent (UPDATEs), withdraws of emptied shards excluded."),
		configHeld: d("zone_config_held", "1 while the zone configuration received is held out of force (after a start or the loss of "+
			"every reflector session, until the reflectors' table is whole), 0 otherwise."),
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
	for _, d := range []*prometheus.Desc{m.up, m.registrations, m.refused, m.records, m.recordsRefused, m.untrusted, m.notifications,
		m.sessions, m.bfdSessions, m.bfdChanges, m.reflectorDowns, m.dropped, m.format, m.setChanges, m.setUpdates, m.configHeld} {
		ch <- d
	}
	for _, c := range []prometheus.Collector{m.delivered, m.queriesDropped, m.notifyRefused, m.badConfig} {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	a := m.a
	reg, notified := a.ports.stats()
	mgr := a.fab.bfdManager()
	for _, c := range []prometheus.Collector{m.delivered, m.queriesDropped, m.notifyRefused, m.badConfig} {
		c.Collect(ch)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	up := 0.0
	if a.Healthy() == nil {
		up = 1
	}
	gauge(m.up, up)
	// Every labelled series is there from the start, zero until counted.
	gauge(m.registrations, float64(reg.Entries))
	counter(m.refused, float64(reg.Refused))
	gauge(m.records, float64(a.table.Len()))
	for _, f := range []record.Format{record.FormatDevices, record.FormatSets} {
		v := 0.0
		if a.fab.recordFormat() == f {
			v = 1
		}
		gauge(m.format, v, f.String())
	}
	sst := a.fab.setStats()
	counter(m.setChanges, float64(sst.Changes))
	counter(m.setUpdates, float64(sst.Updates))
	held := 0.0
	if a.ConfigHeld() {
		held = 1
	}
	gauge(m.configHeld, held)
	counter(m.recordsRefused, float64(a.table.Stats().Refused))
	for reason, v := range a.fab.refusals() {
		counter(m.untrusted, float64(v), reason)
	}
	sum := notified
	for outcome, v := range map[string]uint64{"sent": sum.Sent, "retransmitted": sum.Retransmits, "send-failed": sum.SendFailed,
		"acked": sum.Delivered, "gave-up": sum.GaveUp, "superseded": sum.Superseded} {
		counter(m.notifications, float64(v), outcome)
	}
	sessions := map[string]int{}
	for _, s := range bgp.SessionStates() {
		sessions[s.String()] = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ns, err := a.fab.neighbors(ctx); err == nil {
		for _, n := range ns {
			sessions[n.State.String()]++
		}
	}
	for st, n := range sessions {
		gauge(m.sessions, float64(n), st)
	}
	if a.opts.BFD.Enabled {
		by, changes := map[string]int{}, map[string]uint64{}
		for _, s := range bfd.States() {
			by[s.String()], changes[s.String()] = 0, 0
		}
		if mgr != nil {
			for _, s := range mgr.Sessions() {
				by[s.State.String()]++
			}
			for s, v := range mgr.Transitions() {
				changes[s.String()] = v
			}
		}
		for st, n := range by {
			gauge(m.bfdSessions, float64(n), st)
		}
		for st, v := range changes {
			counter(m.bfdChanges, float64(v), st)
		}
		st := a.fab.speakerStats()
		counter(m.reflectorDowns, float64(st.BFDConfirmed), "confirmed")
		counter(m.reflectorDowns, float64(st.BFDUnconfirmed), "unconfirmed")
	}
	drops := map[string]uint64{"not-access-port": 0}
	for _, r := range l2proto.DropReasons() {
		drops[r] = 0
	}
	for reason, v := range m.drops.Counts() {
		drops[reason] = v
	}
	for reason, v := range drops {
		counter(m.dropped, float64(v), reason)
	}
}
