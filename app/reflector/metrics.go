package reflector

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/zones"
)

// counters are the reflector's own counts; the rest of its metrics are read
// from the speaker, the replicator, the store and BFD at scrape time.
type counters struct {
	commits          atomic.Uint64
	recordsAdopted   atomic.Uint64 // complete records from peers that won (store, lossless profile)
	applyErrors      atomic.Uint64
	malformedParts   atomic.Uint64
	storePruned      atomic.Uint64
	assemblerEvicted atomic.Uint64
	// commitLatency is how long commits took, by phase: write (validate
	// and write the store transaction) and originate (hand the records to
	// BGP), as the commit log line's write= and originate= say.
	commitLatency  *prometheus.HistogramVec
	journalAdopted atomic.Uint64 // journal entries taken from peers
	conflicts      atomic.Uint64 // concurrent writes of one record found in the journal
}

func newCounters() *counters {
	return &counters{commitLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ns + "_config_commit_seconds",
		Help:    "Duration of local configuration commits by phase: write (validate and write the store), originate (into BGP).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"phase"})}
}

// observeCommit counts a commit and its latencies (zoneadmin.Options.Observe).
func (m *counters) observeCommit(write, originate time.Duration) {
	m.commits.Add(1)
	m.commitLatency.WithLabelValues("write").Observe(write.Seconds())
	m.commitLatency.WithLabelValues("originate").Observe(originate.Seconds())
}

const ns = "inof_reflector"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(ns+"_"+name, help, labels, nil)
}

var (
	descUp             = desc("up", "1 while the reflector runs and its BGP speaker is alive.")
	descRestarting     = desc("graceful_restart_restarting", "1 if this run started as a graceful restart (a previous run left its restart marker).")
	descSessions       = desc("sessions", "BGP neighbors by kind (client, reflector) and session state.", "kind", "state")
	descReceived       = desc("neighbor_records_received", "Opaque records accepted from each neighbor (Adj-RIB-In).", "neighbor", "kind")
	descPublished      = desc("bgp_records_published_total", "Records this speaker originated (configuration copies).")
	descWithdrawn      = desc("bgp_records_withdrawn_total", "Withdraws this speaker originated.")
	descMalformed      = desc("bgp_records_malformed_total", "Malformed records received (treated as withdrawn).")
	descResyncs        = desc("bgp_watch_resyncs_total", "Watches resynchronised after falling behind.")
	descConfigRecords  = desc("config_records", "Stored configuration records by kind (settings, zone, alias, pin) and deletion.", "kind", "deleted")
	descCommits        = desc("config_commits_total", "Local commits that changed something.")
	descAdoptedParts   = desc("config_parts_adopted_total", "Newer configuration parts taken from peer reflectors and re-originated.")
	descAdopted        = desc("config_records_adopted_total", "Complete records from peer reflectors that won (in the zone store, and the lossless profile).")
	descRefused        = desc("config_parts_refused_total", "Configuration parts refused: by generation (future, expired) or because a neighbor that is not a peer reflector sent them (not-peer).", "reason")
	descClockAhead     = desc("generation_clock_ahead_seconds", "How far the zone store's generation clock is ahead of the wall clock (0 if not); beyond 300 s the peer reflectors refuse this reflector's changes.")
	descStoreRefused   = desc("store_refused_total", "Records the store refused by generation (future, expired).", "reason")
	descApplyErrors    = desc("config_apply_errors_total", "Records from peer reflectors the store refused.")
	descMalformedParts = desc("config_parts_malformed_total", "Configuration parts the assembler refused.")
	descEvicted        = desc("config_assembler_evicted_total", "Incomplete versions dropped by the assembler's memory bound.")
	descStale          = desc("config_stale_parts_withdrawn_total", "Parts withdrawn because their record shrank or lost to a newer version.")
	descPruned         = desc("config_tombstones_pruned_total", "Expired tombstones forgotten, by where (store, bgp).", "where")
	descDevRefused     = desc("device_records_refused_total", "Device records the fabric view refused at its bound (max_devices).")
	descPinRefused     = desc("pin_refusals_total", "Device records claiming a pinned NQN on a switch port outside its pin (each refused claim once; the switches keep such devices out of every zone).")
	descUntrusted      = desc("records_refused_total", "Records refused because their sender does not own them (docs/security.md), by reason.", "reason")
	descQuarantined    = desc("quarantined_clients", "Clients in quarantine: all their records refused.")
	descBFD            = desc("bfd_sessions", "BFD sessions by state.", "state")
	descBFDDrops       = desc("bfd_packets_dropped_total", "BFD packets dropped, by reason.", "reason")
	descBFDChanges     = desc("bfd_transitions_total", "BFD session state changes, by the state entered (a rising count into down: flapping).", "state")
	descSwitchDowns    = desc("bfd_switch_downs_total", "BFD downs of switches whose session stood, by outcome: confirmed (declared gone: session shut, records withdrawn, hosts told reason 7) or unconfirmed (BFD back within the hold: nothing withdrawn).", "outcome")
	descDampened       = desc("bfd_switch_dampened_total", "Times a flapping switch's session was held down after BFD came back (exponential hold-down).")
	descConfigured     = desc("neighbors_configured", "BGP neighbors configured, by kind (client, reflector).", "kind")
	descJournal        = desc("journal_entries", "Journal entries (history and audit) the store keeps.")
	descJournalAdopted = desc("journal_entries_adopted_total", "Journal entries taken from peer reflectors.")
	descConflicts      = desc("config_conflicts_total", "Concurrent writes of one record on the same base found in the journal (one edit lost to last-writer-wins).")
)

// collector reads the reflector's state at scrape time.
type collector struct{ r *Reflector }

func newCollector(r *Reflector) prometheus.Collector { return collector{r} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descRestarting, descSessions, descReceived, descPublished,
		descWithdrawn, descMalformed, descResyncs, descConfigRecords, descCommits, descAdoptedParts, descAdopted,
		descRefused, descStoreRefused, descClockAhead, descApplyErrors, descMalformedParts, descEvicted, descStale, descPruned,
		descDevRefused, descPinRefused, descUntrusted, descQuarantined, descBFD, descBFDDrops, descBFDChanges, descSwitchDowns, descDampened, descConfigured,
		descJournal, descJournalAdopted, descConflicts} {
		ch <- d
	}
	c.r.m.commitLatency.Describe(ch)
}

// scrapeTimeout bounds the speaker query of one scrape.
const scrapeTimeout = 2 * time.Second

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	r.m.commitLatency.Collect(ch)
	rn, release, err := r.started()
	started := err == nil
	if started {
		defer release()
	}
	gauge(descUp, b2f(started && rn.healthy() == nil))
	counter(descCommits, r.m.commits.Load())
	counter(descAdopted, r.m.recordsAdopted.Load())
	counter(descApplyErrors, r.m.applyErrors.Load())
	counter(descMalformedParts, r.m.malformedParts.Load())
	counter(descEvicted, r.m.assemblerEvicted.Load())
	counter(descPruned, r.m.storePruned.Load(), "store")
	configured := map[string]int{"client": 0, "reflector": 0}
	for _, n := range r.opts.neighbors() {
		configured[neighborKind(n)]++
	}
	for k, n := range configured {
		gauge(descConfigured, float64(n), k)
	}
	// Before the reflector has started, the series of its parts are there
	// with zero values, so that rates and alerts see them from the start.
	var (
		st  bgp.Stats
		rs  table.ReplicatorStats
		sr  zones.Refused
		dev table.DeviceTableStats
	)
	counter(descJournalAdopted, r.m.journalAdopted.Load())
	counter(descConflicts, r.m.conflicts.Load())
	journal := 0
	if started {
		journal = len(rn.store.JournalVersions())
		gauge(descRestarting, b2f(rn.restarting))
		st, rs, sr, dev = rn.speaker.Stats(), rn.repl.Stats(), rn.store.RefusedCounts(), r.fabric.devices.Stats()
	}
	gauge(descJournal, float64(journal))
	ahead := time.Duration(0)
	if started {
		ahead = rn.store.ClockAhead()
	}
	gauge(descClockAhead, ahead.Seconds())
	counter(descPublished, st.Published)
	counter(descWithdrawn, st.Withdrawn)
	counter(descMalformed, st.Malformed)
	counter(descResyncs, st.Resyncs)
	counter(descAdoptedParts, rs.Adopted)
	counter(descRefused, rs.Future, "future")
	counter(descRefused, rs.Expired, "expired")
	counter(descRefused, rs.NotPeer, "not-peer")
	counter(descStale, rs.Withdrawn)
	counter(descPruned, rs.Pruned, "bgp")
	counter(descDevRefused, dev.Refused)
	counter(descPinRefused, r.fabric.refused.count.Load())
	for reason, v := range r.trust.refusals.Counts() {
		counter(descUntrusted, v, reason)
	}
	gauge(descQuarantined, float64(r.trust.quarantined.Load()))
	counter(descStoreRefused, sr.Future, "future")
	counter(descStoreRefused, sr.Expired, "expired")
	type kd struct{ kind, deleted string }
	recs := map[kd]int{}
	for _, k := range []zones.Kind{zones.KindSettings, zones.KindZone, zones.KindAlias, zones.KindPin} {
		recs[kd{k.String(), "false"}], recs[kd{k.String(), "true"}] = 0, 0
	}
	if started {
		for _, rec := range rn.store.Records() {
			recs[kd{rec.Kind.String(), boolString(rec.Deleted)}]++
		}
	}
	for k, n := range recs {
		gauge(descConfigRecords, float64(n), k.kind, k.deleted)
	}
	type ks struct{ kind, state string }
	sessions := map[ks]int{}
	for kind := range configured {
		for _, state := range bgp.SessionStates() {
			sessions[ks{kind, state.String()}] = 0
		}
	}
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		defer cancel()
		if ns, err := rn.speaker.Neighbors(ctx); err == nil {
			for _, n := range ns {
				kind := neighborKind(n.Neighbor)
				sessions[ks{kind, n.State.String()}]++
				gauge(descReceived, float64(n.Received), n.Address.String(), kind)
			}
		}
	}
	for k, v := range sessions {
		gauge(descSessions, float64(v), k.kind, k.state)
	}
	if r.opts.usesBFD() {
		states := map[string]int{}
		for _, s := range bfd.States() {
			states[s.String()] = 0
		}
		drops := map[string]uint64{}
		for _, reason := range bfd.DropReasons() {
			drops[reason] = 0
		}
		changes := map[string]uint64{}
		for _, s := range bfd.States() {
			changes[s.String()] = 0
		}
		if started && rn.bfd != nil {
			for _, s := range rn.bfd.Sessions() {
				states[s.State.String()]++
			}
			for reason, v := range rn.bfd.Drops() {
				drops[reason] = v
			}
			for s, v := range rn.bfd.Transitions() {
				changes[s.String()] = v
			}
		}
		for s, v := range changes {
			counter(descBFDChanges, v, s)
		}
		counter(descSwitchDowns, st.BFDConfirmed, "confirmed")
		counter(descSwitchDowns, st.BFDUnconfirmed, "unconfirmed")
		counter(descDampened, st.BFDDampened)
		for s, v := range states {
			gauge(descBFD, float64(v), s)
		}
		for reason, v := range drops {
			counter(descBFDDrops, v, reason)
		}
	}
}

func neighborKind(n bgp.Neighbor) string {
	if n.PeerReflector {
		return "reflector"
	}
	return "client"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
