package switchagent

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// Publish asks the daemon to publish one local record tagged with the route
// targets of Zones (see Tags).
type Publish struct {
	Record inof.Report
	Zones  []string
}

// PortNotice is a notice for a host on one access port.
type PortNotice struct {
	Port string
	Notice
}

// Output is what one input to the Engine asks the daemon to do, in order:
// publish and withdraw records, change subscriptions, then notify hosts.
type Output struct {
	Publish  []Publish
	Withdraw []inof.Report // records of these addresses
	// Subscriptions is the full set of zones to subscribe to when it
	// changed, nil otherwise.
	Subscriptions []string
	Notices       []PortNotice
	// Refused are the claims to a pinned NQN the pins began to refuse
	// (pins.go): to count, log and report; the engine already keeps them
	// out of every zone.
	Refused []Refusal
}

func (o *Output) merge(x Output) {
	o.Publish = append(o.Publish, x.Publish...)
	o.Withdraw = append(o.Withdraw, x.Withdraw...)
	if x.Subscriptions != nil {
		o.Subscriptions = x.Subscriptions
	}
	o.Notices = append(o.Notices, x.Notices...)
	o.Refused = append(o.Refused, x.Refused...)
}

// Engine is the switch agent's decision core, free of I/O: registrations on
// the access ports, the device records of the fabric and the zone
// configuration go in; records to publish, subscriptions and notifications
// for local hosts come out. The daemon calls it from one goroutine.
//
// Its view of the fabric: every device record (its own included, applied
// at once when it publishes) merged per address in Targets, and a zone
// index holding the addresses that are active. A local host may use the
// targets the index shows it.
type Engine struct {
	self    inof.RouterID
	local   *Local
	targets *Targets
	ix      *zones.Index
	hosts   *hostBook // the local hosts and what each was told
	subs    *zoneSubs // the zones subscribed to and the tally they come from
	// retiring holds remote devices whose record was retired for a zone
	// change while they were active (retirements.hold): they stay as they
	// were until their new epoch arrives or RetireGrace ends.
	retiring retirements
	pins     *pinJudge        // the records the pins refuse (pins.go)
	clock    func() time.Time // time.Now; tests set it
}

// RetireGrace is how long a remote device whose record was retired for a
// zone change (inactive with reason 4, then withdrawn: its switch moved it
// to a new epoch with other route targets) stays as it was, waiting for the
// new epoch. The retirement travels under the old route targets, which this
// switch may already hold, the new epoch under the new ones, which it may
// be subscribing to at that very moment; without the wait a host that sees
// the device before and after would be told "inactive, zone change" and
// then "active" (nvme-snsd deletes its controllers on reason 4).
const RetireGrace = 3 * time.Second

type retiringDevice struct {
	dev    inof.Device
	until  time.Time
	reason inof.Reason
}

// retirements holds the Engine's remote devices whose record was retired
// for a zone change while they were active (see hold): they stay as they
// were until their new epoch arrives or RetireGrace ends.
type retirements map[netip.Addr]retiringDevice

// hold reports whether addr's record was just retired for a zone change
// (inactive with reason 4, or withdrawn after that) while the device was
// active in ix, and keeps it as it was (in the index, unchanged for the
// hosts) until RetireGrace after clock's now ends: its switch moved it to
// a new epoch, which is on its way. A record of the device becoming active
// ends the wait (Engine.refreshFrom), and so does Engine.Tick at the
// deadline. Local devices never retire here: their epochs are the
// publisher's business.
func (rs retirements) hold(ix *zones.Index, addr netip.Addr, cur inof.Report, present bool, goneWhy inof.Reason,
	clock func() time.Time) bool {
	if present && cur.State == inof.StateActive {
		return false
	}
	reason := goneWhy
	if present {
		reason = cur.Reason
	}
	if reason != inof.ReasonZoneChange {
		return false
	}
	if r, ok := rs[addr]; ok {
		r.reason = reason
		rs[addr] = r
		return true
	}
	dev, was := ix.Device(addr)
	if !was {
		return false // it was not usable here: nothing to keep
	}
	rs[addr] = retiringDevice{dev: dev, until: clock().Add(RetireGrace), reason: reason}
	return true
}

// due returns, sorted, the devices whose wait ended at now.
func (rs retirements) due(now time.Time) []netip.Addr {
	var due []netip.Addr
	for a, r := range rs {
		if !now.Before(r.until) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, netip.Addr.Compare)
	return due
}

// next returns when the first wait ends, false if none is held.
func (rs retirements) next() (time.Time, bool) {
	var next time.Time
	ok := false
	for _, r := range rs {
		if !ok || r.until.Before(next) {
			next, ok = r.until, true
		}
	}
	return next, ok
}

// NewEngine returns an engine for the switch with router-id self, starting
// with configuration cfg (nil: no zones, default settings).
func NewEngine(self inof.RouterID, holdDown time.Duration, cfg *zones.Config) (*Engine, error) {
	if cfg == nil {
		cfg = zones.NewConfig(zones.DefaultSettings())
	}
	ix, err := zones.NewIndex(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	targets := NewTargets()
	return &Engine{self: self, local: NewLocal(holdDown), targets: targets, ix: ix, hosts: newHostBook(),
		subs: newZoneSubs(), retiring: retirements{}, pins: newPinJudge(targets), clock: time.Now}, nil
}

// Register handles a registration (new, or changed content) of r.Device on
// r.AccessPort since r.Since; the record it becomes is r as this switch
// reports it.
func (e *Engine) Register(r inof.Report, now time.Time) Output {
	r.Switch = e.self
	return e.applyLocal(e.local.Register(r, now))
}

// Unregister handles the end of a registration: link down, IP change or
// age-out.
func (e *Engine) Unregister(port string, addr netip.Addr, reason inof.Reason, now time.Time) Output {
	return e.applyLocal(e.local.Unregister(port, addr, reason, now))
}

// PortHealth handles an access port turning sick (reason 2 or 3) or
// healthy (inof.ReasonNone): its devices are published inactive with the
// reason, or active again (Local.PortHealth).
func (e *Engine) PortHealth(port string, reason inof.Reason, now time.Time) Output {
	return e.applyLocal(e.local.PortHealth(port, reason, now))
}

// PortsChanged returns the access ports that carry a registered device
// when that set changed since the last call (Local.PortsChanged).
func (e *Engine) PortsChanged() ([]string, bool) { return e.local.PortsChanged() }

// PortDown handles carrier loss on an access port for the registrations
// the registration table does not hold: those restored from the state file
// and not refreshed since (the table reports its own as Unregister).
func (e *Engine) PortDown(port string, now time.Time) Output {
	return e.applyLocal(e.local.PortDown(port, now))
}

// Tick ages out restored registrations whose deadline passed, withdraws
// the local records whose hold-down ended and tells hosts about retired
// devices whose new epoch did not come within RetireGrace.
func (e *Engine) Tick(now time.Time) Output {
	out := e.applyLocal(e.local.Expire(now))
	for _, a := range e.retiring.due(now) {
		r := e.retiring[a]
		delete(e.retiring, a)
		out.merge(e.refreshFrom(a, r.reason, false))
	}
	return out
}

// NextTick says when Tick has work next.
func (e *Engine) NextTick() (time.Time, bool) {
	next, ok := e.local.NextExpiry()
	if at, held := e.retiring.next(); held && (!ok || at.Before(next)) {
		next, ok = at, true
	}
	return next, ok
}

// applyLocal turns Local's actions into output and applies them to the
// engine's own view at once (the records come back from BGP later; applying
// them again changes nothing).
func (e *Engine) applyLocal(as []Action) Output {
	var out Output
	for _, a := range as {
		r := a.Record
		if a.Withdraw {
			out.Withdraw = append(out.Withdraw, r)
			out.merge(e.Gone(e.self, r.Device.Addr))
			e.subs.tally.set(r.Device.Addr, nil, false)
			continue
		}
		greet := false
		if r.State == inof.StateActive && r.Device.Role.IsHost() {
			_, had := e.hosts.port[r.Device.Addr]
			// A host that first registers (or returns after leaving) is
			// told every usable target at once, as a zone query would
			// tell it: its own query may have gone out before this
			// switch listened, and nvme-snsd queries once per
			// registration. A host restored from the state file was
			// told before the restart: it is not greeted again.
			greet = e.hosts.away[r.Device.Addr] || (!had && !e.hosts.plan.Known(r.Device.Addr))
			e.hosts.port[r.Device.Addr] = r.AccessPort
			delete(e.hosts.away, r.Device.Addr)
			delete(e.hosts.sick, r.Device.Addr) // recovered: refresh tells it what it may use
		}
		_, registered := e.hosts.port[r.Device.Addr]
		switch {
		case r.State == inof.StateActive:
		case registered && portSick(r):
			// A local host on a sick port, still registered: refresh tells
			// it every target through the port is inactive with the
			// port's reason, so it fails over to its other NIC.
			e.hosts.sick[r.Device.Addr] = r.Reason
		default:
			// The device left: a host among them is told nothing from now
			// on, above all not its own departure read as zone changes of
			// every target it saw (it cannot hear them, and nvme-snsd
			// would delete its controllers when its link comes back).
			e.hosts.leave(r.Device.Addr)
		}
		out.merge(e.Record(r))
		if greet {
			out.Notices = append(out.Notices, e.hosts.notices(e.hosts.plan.Answer(r.Device.Addr, e.usable(r.Device.Addr), e.why(netip.Addr{}, 0)))...)
			e.hosts.greeted[r.Device.Addr] = true
		}
		zs := e.memberZones(r)
		e.subs.tally.set(r.Device.Addr, zs, holdsZones(r))
		out.Publish = append(out.Publish, Publish{Record: r, Zones: Tags(zs)})
	}
	out.Subscriptions = e.subs.resubscribe(e.ix.Config())
	return out
}

// portSick reports whether local record r is inactive because its ports
// are sick (reason 2 or 3, Local.PortHealth): its registration stays.
func portSick(r inof.Report) bool {
	return r.State == inof.StateInactive && (r.Reason == inof.ReasonPFCStorm || r.Reason == inof.ReasonPacketErr)
}

// holdsZones reports whether local record r keeps its zones subscribed:
// while active, and while inactive on a sick port (still registered, it
// will be active again without a new subscription).
func holdsZones(r inof.Report) bool { return r.State == inof.StateActive || portSick(r) }

// retally counts the zones of the active local devices afresh (after the
// configuration changed).
func (e *Engine) retally() {
	e.subs.tally = tallyOf(e.local.Published(), e.ix.Config(), e.ix.ZonesOf)
}

// SubscriptionsUnder returns the zones the engine would subscribe to
// (Subscriptions' rules) if cfg were in force, its local devices as they
// are; it changes nothing.
func (e *Engine) SubscriptionsUnder(cfg *zones.Config) []string {
	ix, _ := zones.NewIndex(cfg, nil) // no devices: nothing to refuse
	subs, _ := tallyOf(e.local.Published(), cfg, ix.ZonesOf).subscriptions(cfg.Settings, cfg.ZoneNames)
	return subs
}

// Record handles a device record that was published or changed anywhere in
// the fabric (this switch's own included).
func (e *Engine) Record(r inof.Report) Output {
	before, _ := e.targets.Get(r.Device.Addr)
	e.targets.Put(r)
	after, _ := e.targets.Get(r.Device.Addr)
	if sameView(before, after) {
		return Output{}
	}
	return e.refresh(after.Device.Addr, inof.ReasonNone)
}

// Gone handles the withdrawal of switch sw's record of addr.
func (e *Engine) Gone(sw inof.RouterID, addr netip.Addr) Output {
	reason, ok := e.targets.Remove(sw, addr)
	if !ok {
		reason = inof.ReasonNone
	}
	if _, present := e.targets.Get(addr); !present && sw == e.self {
		e.hosts.forget(addr)
	}
	return e.refresh(addr, reason)
}

// refresh puts the merged state of addr into the index and tells the local
// hosts whose view of it changed. goneWhy, if set, is the reason for hosts
// that lose it because its record went away.
func (e *Engine) refresh(addr netip.Addr, goneWhy inof.Reason) Output {
	return e.refreshFrom(addr, goneWhy, true)
}

// refreshFrom is refresh; mayWait lets a retired device wait for its new
// epoch (retirements.hold).
func (e *Engine) refreshFrom(addr netip.Addr, goneWhy inof.Reason, mayWait bool) Output {
	cur, present := e.targets.Get(addr)
	if mayWait && e.retiring.hold(e.ix, addr, cur, present, goneWhy, e.clock) {
		return Output{}
	}
	delete(e.retiring, addr)
	var out Output
	cfg := e.ix.Config()
	cur = e.pins.allowed(cfg, addr, cur, present)
	refused := e.pins.judge(cfg, addr, cur, present, &out)
	if present && cur.State == inof.StateActive && !refused {
		if err := e.ix.Put(cur.Device); err != nil {
			// An invalid device never becomes usable; it was validated by
			// the record codec, so this is a bug upstream.
			e.ix.Remove(addr)
		}
	} else {
		e.ix.Remove(addr)
	}
	why := e.why(addr, goneWhy)
	if _, local := e.hosts.port[addr]; local && e.hosts.plan.Known(addr) {
		// A local host whose own record changed (its NQN, say) may now be
		// in other zones: look at everything it sees. One on a sick port
		// may use nothing through it, for the port's reason.
		hostWhy := why
		if reason, sick := e.hosts.sick[addr]; sick {
			hostWhy = func(netip.Addr) inof.Reason { return reason }
		}
		out.Notices = append(out.Notices, e.hosts.notices(e.hosts.plan.Reconcile(addr, e.usable(addr), hostWhy))...)
	}
	usableTarget := present && cur.State == inof.StateActive && cur.Device.Role.IsTarget() && !refused
	for _, host := range e.hosts.concerned(e.ix, addr, usableTarget) {
		usable := usableTarget && e.ix.CanSee(host, addr)
		dev := cur.Device
		if !present {
			dev = inof.Device{Addr: addr}
		}
		out.Notices = append(out.Notices, e.hosts.notices(e.hosts.plan.Update(host, dev, usable, why))...)
	}
	if !present {
		e.hosts.plan.Drop(addr)
	}
	return out
}

// why returns the reason function for notifications about addr; goneWhy
// overrides it for addr when set.
func (e *Engine) why(addr netip.Addr, goneWhy inof.Reason) func(netip.Addr) inof.Reason {
	return func(a netip.Addr) inof.Reason {
		if a == addr && goneWhy != inof.ReasonNone {
			return goneWhy
		}
		return e.targets.Why(a, inof.ReasonBFDDown)
	}
}

// Config handles a new zone configuration: hosts that gain or lose targets
// are told (reason zone change), local records whose zones changed are
// published again with their new route targets, and the subscriptions
// follow.
func (e *Engine) Config(cfg *zones.Config) Output {
	old := e.ix
	e.ix = old.WithConfig(cfg)
	var out Output
	e.rejudge(zones.PinsChanged(old.Config(), cfg), &out)
	delta := zones.Diff(old, e.ix)
	// WithConfig keeps the devices: every change is the configuration's.
	why := func(netip.Addr) inof.Reason { return inof.ReasonZoneChange }
	for _, host := range e.hosts.sorted() {
		changes := delta.For(host) // unordered: notify losses first, each by address
		slices.SortFunc(changes, func(a, b zones.Change) int {
			if a.Visible != b.Visible {
				if a.Visible {
					return 1
				}
				return -1
			}
			return a.Target.Addr.Compare(b.Target.Addr)
		})
		for _, c := range changes {
			out.Notices = append(out.Notices, e.hosts.notices(e.hosts.plan.Update(host, c.Target, c.Visible, why))...)
		}
	}
	for _, r := range e.local.Published() {
		if !slices.Equal(old.Zones(r.Device.Addr), e.ix.Zones(r.Device.Addr)) {
			out.Publish = append(out.Publish, Publish{Record: r, Zones: Tags(e.memberZones(r))})
		}
	}
	e.retally()
	out.Subscriptions = e.subs.resubscribe(e.ix.Config())
	return out
}

// ZoneQuery answers a local host's zone query with every target it may use
// (the host may have restarted and forgotten what it was told).
func (e *Engine) ZoneQuery(host netip.Addr) Output {
	if _, ok := e.hosts.port[host]; !ok {
		return Output{}
	}
	delete(e.hosts.greeted, host)
	return Output{Notices: e.hosts.notices(e.hosts.plan.Answer(host, e.usable(host), e.why(netip.Addr{}, 0)))}
}

// StartQuery answers the zone query a local host sent right after the
// LLDPDU that registered it, with no LLDPDU between (a host's start: its
// LLDPDU, then its query). If that registration told it every usable
// target (a host's first registration does), the query asks for nothing
// new and only what changed since is sent, which the events already did:
// the host hears each target once. Otherwise it is ZoneQuery.
func (e *Engine) StartQuery(host netip.Addr) Output {
	if !e.hosts.greeted[host] {
		return e.ZoneQuery(host)
	}
	delete(e.hosts.greeted, host)
	return Output{Notices: e.hosts.notices(e.hosts.plan.Reconcile(host, e.usable(host), e.why(netip.Addr{}, 0)))}
}

// Resync compares what every local host was told with what it may use now
// and notifies the differences. The daemon calls it once its view of the
// fabric is complete after a restart (End-of-RIB or a settle time): a
// target that went away while the agent was down is reported then, since
// no event will report it.
func (e *Engine) Resync() Output {
	var out Output
	why := e.why(netip.Addr{}, 0)
	for _, host := range e.hosts.sorted() {
		if e.hosts.plan.Known(host) {
			out.Notices = append(out.Notices, e.hosts.notices(e.hosts.plan.Reconcile(host, e.usable(host), why))...)
		}
	}
	return out
}

// usable returns the targets host may use now: none through a sick port.
func (e *Engine) usable(host netip.Addr) map[netip.Addr]inof.Device {
	out := map[netip.Addr]inof.Device{}
	if _, sick := e.hosts.sick[host]; sick {
		return out
	}
	for t := range e.ix.Targets(host) {
		out[t.Addr] = t
	}
	return out
}

// RestoredExpiries returns the deadlines of the restored registrations no
// LLDPDU has refreshed yet (for the state file, beside the registration
// table's own).
func (e *Engine) RestoredExpiries() map[RegistrationKey]time.Time { return e.local.RestoredExpiries() }

// Published returns the local records as published (for the state file).
func (e *Engine) Published() []inof.Report { return e.local.Published() }

// Used reports whether a local host was told target addr is active.
func (e *Engine) Used(addr netip.Addr) bool {
	used := false
	e.hosts.plan.ToldOf(addr, func(netip.Addr) { used = true })
	return used
}

// Told returns what each local host was told is active (for the state
// file).
func (e *Engine) Told() map[netip.Addr][]inof.Device {
	out := map[netip.Addr][]inof.Device{}
	for _, h := range e.hosts.plan.Hosts() {
		out[h] = e.hosts.plan.Told(h)
	}
	return out
}

// Restore loads the state saved before a restart: the local records (they
// are republished as they were; active ones age out at their
// registration's deadline in expires, or go with carrier loss, unless an
// LLDPDU refreshes them) and what each host was told, so that the first
// events after the restart notify only real changes.
//
// Records saved by older releases name no switch: they are this one's.
func (e *Engine) Restore(published []inof.Report, told map[netip.Addr][]inof.Device,
	expires map[RegistrationKey]time.Time, now time.Time) Output {
	for i := range published {
		published[i].Switch = e.self
	}
	e.local.Restore(published, expires, now)
	var out Output
	for _, r := range published {
		if r.State == inof.StateActive && r.Device.Role.IsHost() {
			e.hosts.port[r.Device.Addr] = r.AccessPort
		}
		e.targets.Put(r)
		if r.State == inof.StateActive && !e.pins.judge(e.ix.Config(), r.Device.Addr, r, true, &out) {
			_ = e.ix.Put(r.Device)
		}
		out.Publish = append(out.Publish, Publish{Record: r, Zones: Tags(e.memberZones(r))})
	}
	for h, ds := range told {
		if _, ok := e.hosts.port[h]; ok {
			e.hosts.plan.Restore(h, ds)
		}
	}
	e.retally()
	e.subs.resubscribe(e.ix.Config())
	out.Subscriptions = e.subs.set // always: the speaker starts with none
	return out
}
