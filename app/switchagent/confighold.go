package switchagent

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/zones"
)

// zoning is the zone configuration the loop keeps until it goes in force:
// the zone records received (or, direct, committed), whether the
// configuration they make is due, and the hold. Owned by the loop; held is
// also read by the API and the metrics.
type zoning struct {
	recs zones.Records
	// due says zone records changed and the configuration they make is not
	// yet in force: it is rebuilt once the records already queued are in
	// (bgpFabric.onRecords), or before the next device record, so a burst
	// of zone records (1,000 when a switch joins a fabric of 1,000 zones)
	// costs one rebuild instead of one per record, and every device record
	// is still judged under every zone record received before it.
	due bool
	// hold keeps the zone configuration received after a start out of
	// force until it is whole.
	hold configHold
	held atomic.Bool // the zone configuration received is held
}

// configHold keeps the zone configuration a starting agent receives out of
// force until it is whole (docs/switch-agent.md, "Configuration on
// return"). A switch that comes back receives every configuration record
// at once, in the order of the reflector's table, mixed with device
// records and split over several batches; a device record judged between
// two configuration records is judged under a zoning no edit made (found
// by the soak: a host was told a target active that neither the old nor
// the new zoning let it see). Held, the records go on being taken in (the
// zone records they make), but the zoning in force stays the saved one
// until the reflector's End-of-RIB: then the whole new configuration goes
// in force at once, and every device record was judged under a complete
// zoning, the old one or the new one. Owned by the loop.
type configHold struct {
	on bool // zone records are held
	// needEOR: the hold ends only after a reflector's End-of-RIB (graceful
	// restart on; without it no speaker sends one and the hold ends
	// configQuiet after the session came up and the last zone record).
	needEOR bool
	bound   time.Duration // Options.ConfigHold
	// upAt is when the first reflector session came up, eorAt when a
	// reflector's End-of-RIB was seen, lastRecord when the last zone
	// record changed the zoning held; zero until then.
	upAt, eorAt, lastRecord time.Time
	// saved is the zoning in force when the hold began: the state file
	// keeps it while the hold lasts (a crash must not restore a mix).
	saved zones.Records
	// unknown: no zoning was saved (a first start, or a state file lost),
	// so none is known: while held, the engine has closedZoning (nothing
	// is visible) and the state file says the zoning is unknown.
	unknown bool
	// objects are the zone store objects whose records changed the zoning
	// held, in the order they did (each once): the log says they changed
	// when they go in force.
	objects []string
	// ahead are the memberships taken before the hold ends (subscribeAhead),
	// aheadDue that the zoning held or the local devices changed since,
	// aheadNext the earliest time they are taken again.
	ahead     []string
	aheadDue  bool
	aheadNext time.Time
	// stop ends the End-of-RIB poll (pollEndOfRIB).
	stop context.CancelFunc
}

// configQuiet is how long after the End-of-RIB (and after the last zone
// record that arrived) the hold still lasts. The records the reflector sent
// before its End-of-RIB may still be on their way through the speaker's
// watch when the End-of-RIB is seen (it is read from the session's state,
// not from the watch); and a reflector that had not read this switch's
// memberships when the session came up (a start that is not a graceful
// restart) sends its End-of-RIB first and the configuration right after.
const configQuiet = 250 * time.Millisecond

// eorPoll is how often the speaker is asked whether a reflector has sent
// End-of-RIB while the hold waits for one.
const eorPoll = 25 * time.Millisecond

// newConfigHold starts a hold of at most bound after the first session
// comes up (none when bound is 0), of zoning in force, or of none known.
func newConfigHold(bound time.Duration, needEOR bool, zoning zones.Records, unknown bool) configHold {
	if bound <= 0 {
		return configHold{}
	}
	return configHold{on: true, needEOR: needEOR, bound: bound, saved: maps.Clone(zoning), unknown: unknown}
}

// closedZoning is the zoning in force while a switch that knows none holds
// the one it receives: no zones and no default zone, so no device sees
// another. A switch that has never received the fabric's zoning must not
// judge devices under the empty one, under which (the default zone on)
// every unzoned pair is visible: a host zoned away from a target would be
// told it active until the configuration arrived. Records are published
// with their route targets as under the empty zoning (the default zone's
// for every device); the switch subscribes to the zones the held zoning
// will want (subscribeAhead).
func closedZoning() *zones.Config {
	return zones.NewConfig(zones.Settings{DefaultZoneEnabled: false, HardZoning: true})
}

// startsClosed reports whether an agent starts with closedZoning: it holds
// the configuration (not direct, a hold configured) and knows no zoning
// (no state file, or one saved while the zoning was unknown).
func startsClosed(o Options, loaded bool, saved savedState) bool {
	return !o.Direct() && o.ConfigHold > 0 && (!loaded || saved.ZoningUnknown)
}

// sessionUp starts the bound at the first session.
func (h *configHold) sessionUp(now time.Time) {
	if h.on && h.upAt.IsZero() {
		h.upAt = now
	}
}

// endOfRIB notes a reflector's End-of-RIB.
func (h *configHold) endOfRIB(now time.Time) {
	if h.on && h.eorAt.IsZero() {
		h.eorAt = now
	}
}

// record notes a zone record, of object, that changed the zoning held.
func (h *configHold) record(now time.Time, object string) {
	if !h.on {
		return
	}
	h.lastRecord = now
	h.aheadDue = h.unknown // the zoning held changed
	if !slices.Contains(h.objects, object) {
		h.objects = append(h.objects, object)
	}
}

// aheadSpacing is the least time between two rounds of subscribeAhead,
// which builds the held configuration (O(zones)): zone records that arrive
// one batch at a time must not each pay for it. A round that took longer
// waits four times its cost, so that it never takes more than a fifth of
// the loop.
const aheadSpacing = 25 * time.Millisecond

// aheadAt returns when subscribeAhead is due, false if it is not. Nothing
// is due before the first zone record: the zoning held would be the empty
// one, whose memberships (the default zone's) the real zoning may not want.
func (h *configHold) aheadAt() (time.Time, bool) {
	return h.aheadNext, h.on && h.aheadDue && !h.lastRecord.IsZero()
}

// localChanged notes that the local devices changed: the memberships
// taken ahead are due again.
func (h *configHold) localChanged() {
	if h.on && h.unknown {
		h.aheadDue = true
	}
}

// due returns when the hold ends, as far as known now, and why; false
// while no session has come up.
func (h *configHold) due() (time.Time, string, bool) {
	if !h.on || h.upAt.IsZero() {
		return time.Time{}, "", false
	}
	at, why := h.upAt.Add(h.bound), "bound"
	if h.needEOR && h.eorAt.IsZero() {
		return at, why, true
	}
	quiet := h.upAt
	for _, t := range []time.Time{h.eorAt, h.lastRecord} {
		if t.After(quiet) {
			quiet = t
		}
	}
	if q := quiet.Add(configQuiet); q.Before(at) {
		at, why = q, "end-of-rib"
		if !h.needEOR {
			why = "quiet"
		}
	}
	return at, why, true
}

// zoning returns the zone records whose configuration is in force: the
// saved ones while the hold lasts, else recs.
func (h *configHold) zoning(recs zones.Records) zones.Records {
	if h.on {
		return h.saved
	}
	return recs
}

// dueAt returns when the hold ends, as far as known now; false while no
// session has come up.
func (h *configHold) dueAt() (time.Time, bool) {
	at, _, ok := h.due()
	return at, ok
}

// startConfigHold starts the hold of the zoning in force (closed: of none
// known) and, if it waits for End-of-RIB, poll, which reports it (until
// the agent stops or the hold ends).
func (a *Agent) startConfigHold(closed bool, poll func(context.Context) error) {
	a.zoning.hold = newConfigHold(a.opts.ConfigHold, a.opts.GracefulRestart.Enabled, a.zoning.recs, closed)
	a.zoning.held.Store(a.zoning.hold.on)
	if closed {
		a.zoning.due = true // the zoning received goes in force at the end, changed or not
		a.log.Info("no zoning known yet: no device sees another until the reflectors' configuration is in force")
	}
	if !a.zoning.hold.on || !a.zoning.hold.needEOR {
		return
	}
	ctx, cancel := context.WithCancel(a.tasks.ctx)
	a.zoning.hold.stop = cancel
	a.tasks.spawnIn(ctx, "end-of-rib poll", poll)
}

// holdWhileAway starts a hold, of the zoning in force, when the switch
// loses its last reflector session; its bound starts when one comes up
// again (sessionUp). The reflector that comes back sends its
// table as after a start, configuration records mixed with device records
// over several batches (found by the soak, seed 2359243392859386603 step
// 35: leaf1's uplink down and up while an alias and a zone were edited;
// back, it put zone zA's new record in force alone and told hd2/1 two
// targets active, and inactive 2 ms later when the alias's record came).
// Starting at the loss, the hold is on before any record of the return
// arrives (neighbor and record events come on different watches).
func (a *Agent) holdWhileAway(poll func(context.Context) error) {
	if a.zoning.hold.on || a.opts.ConfigHold <= 0 {
		return
	}
	a.log.Info("every reflector session lost: zone configuration held until one is back with its whole table")
	a.startConfigHold(false, poll)
}

// subscribeAhead, while a switch that knew no zoning holds the one it
// receives, takes the memberships that zoning will want, so that the device
// records arrive during the hold instead of after it (a new switch's table
// fills a hold earlier). Nothing received is visible before the hold ends
// (closedZoning), so records taken early change nothing a host is told;
// a switch that holds a zoning it had in force does not do this, since
// records of zones it did not want would be judged under that zoning. What
// the zoning in force at the end does not want lingers and goes
// (endHoldIfDue). Called by the loop after every event; it does something
// once the zoning held or the local devices changed, at most every
// aheadSpacing.
func (a *Agent) subscribeAhead(ctx context.Context, now time.Time) {
	if at, due := a.zoning.hold.aheadAt(); !due || now.Before(at) {
		return
	}
	a.zoning.hold.aheadDue = false
	defer func() { a.zoning.hold.aheadNext = time.Now().Add(max(aheadSpacing, 4*time.Since(now))) }()
	cfg := a.zoning.recs.Config()
	a.zoning.hold.ahead = a.memberships(cfg, a.engine.SubscriptionsUnder(cfg))
	a.subscribe(ctx, a.engine.subs.set)
}

// endHoldIfDue ends the hold once it is due: the zoning the records make
// goes in force whole.
func (a *Agent) endHoldIfDue(ctx context.Context, now time.Time) {
	at, why, ok := a.zoning.hold.due()
	if !ok || now.Before(at) {
		return
	}
	heldFor := now.Sub(a.zoning.hold.upAt).String()
	a.log.Info("zone configuration no longer held", "why", why, "held_for", heldFor, "changed", a.zoning.due)
	if a.zoning.hold.stop != nil {
		a.zoning.hold.stop()
	}
	objects, ahead := a.zoning.hold.objects, a.zoning.hold.ahead
	a.zoning.hold = configHold{}
	a.save.dirty = true // the state file keeps the zoning in force
	if a.zoning.due {
		a.applyConfig(ctx)
	}
	if len(ahead) > 0 {
		// The memberships the zoning in force wants (applyConfig subscribed
		// only if they changed); any other taken ahead lingers and goes.
		a.subscribe(ctx, a.engine.subs.set)
	}
	a.zoning.held.Store(false) // once in force: the engine judged every record under it
	// Said after the fact, as for a record taken while nothing is held:
	// "changed" means in force.
	for _, o := range objects {
		a.log.Info("zone configuration changed", "object", o, "held_for", heldFor)
	}
}

// ConfigHeld reports whether the zone configuration the agent receives is
// held out of force (after a start or the loss of every reflector session,
// until the reflectors' End-of-RIB; docs/switch-agent.md, "Configuration on
// return"). The metric inof_switch_zone_config_held says the same.
func (a *Agent) ConfigHeld() bool { return a.zoning.held.Load() }

// ready reports whether zone records changed and their configuration may
// go in force now (no hold).
func (z *zoning) ready() bool { return z.due && !z.hold.on }
