package switchagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/porthealth"
	"github.com/openinof/inof/zones"
)

// Config wires an Agent. Only Options is required; the rest lets tests put
// in-memory parts in place of the real ones.
type Config struct {
	Options  Options
	Registry prometheus.Registerer // nil: no metrics
	Logger   *slog.Logger
	// EventLogger writes the lines about single device events ("device
	// registered", "device left", "notify"); inofd's writes at most
	// log.event_lines of them a second (daemon.Logging.Events). nil:
	// Logger.
	EventLogger *slog.Logger
	// Speaker replaces the GoBGP speaker built from Options (tests: the
	// fake fabric). The agent starts and stops it; direct mode has none.
	Speaker bgp.Speaker
	// OpenLink opens an access port (nil: an AF_PACKET socket).
	OpenLink func(port string) (l2proto.Link, error)
	// WatchLinks reports carrier changes until ctx ends (nil: a netlink
	// LinkWatcher).
	WatchLinks func(ctx context.Context, fn func(l2proto.LinkState)) error
	// WatchStray reports protocol frames on interfaces that are not access
	// ports until ctx ends (nil: an l2proto.StrayWatcher).
	WatchStray func(ctx context.Context, fn func(ifname string, frame []byte)) error
	// InterfaceAddrs returns an access port's addresses (nil: the
	// system's), announced for the discovery controller's referrals.
	InterfaceAddrs func(port string) ([]netip.Prefix, error)
	// HealthSource, when set, is the port health source in place of the
	// one port_health.source names (tests); port health then runs
	// whatever the source option says.
	HealthSource porthealth.Source
	// Events takes the agent's events for the API's feed (the refusals of
	// NQN pins, pins.go); nil: none.
	Events EventPublisher
}

// Agent is inofd --role switch: the access ports' registrations, the
// device records in BGP and the notifications to local hosts (package
// doc). Run drives it; one goroutine (the loop) owns the Engine and the
// state around it, and delegates to two sides:
//   - the fabric side (fabric.go): BGP toward the reflectors (bgpFabric)
//     or, in direct mode, the switch's own zone store (directFabric);
//   - the port side (ports.go): the registration table, the access ports'
//     readers and notifiers, the carrier and stray-frame watchers.
type Agent struct {
	opts Options
	log  *slog.Logger
	// evlog is Config.EventLogger.
	evlog *slog.Logger
	self  inof.RouterID
	met   *metrics
	fab   fabricSide
	ports *portSide
	// health watches the access ports' health; nil when off.
	health *portHealth
	pins   *pinReport     // the refusals of NQN pins (pins.go)
	disc   *discoveryPart // the NVMe/TCP discovery controller; nil when off
	tasks  *tasks         // the goroutines Run started (set by Run before any starts)
	engine *Engine
	// table holds the device records known: every switch's in a fabric
	// (the fabric side fills it), the local ones in direct mode; the API's
	// device list.
	table *table.DeviceTable
	// zoning is the zone configuration in the making: the zone records,
	// whether their configuration is due, the hold (confighold.go).
	zoning zoning
	// notices sends the engine's notices to the access ports, held back
	// during a batch of records (bgpFabric.onRecords).
	notices noticeSender
	save    *saver // the state file and the told journal (statesave.go)
	// settle fires Options.Settle after the first session came up (direct
	// mode: after the start); nil before and after.
	settle <-chan time.Time
	// config and profile are what the API reads: the zone configuration
	// in force and the lossless profile received (set by the loop).
	config  atomic.Pointer[zones.Config]
	profile atomic.Pointer[lossless.Profile]
	settled atomic.Bool   // the first Resync after start has run
	running atomic.Bool   // the loop runs
	ready   chan struct{} // closed when the loop first runs
	// loopDone is closed when the loop returns: what still hands it work
	// (a discovery connection ending, a commit) gives up then.
	loopDone chan struct{}
	reconf   chan reconfRequest
}

// noticeSender journals the engine's notices and then hands them to their
// ports' notifiers. While on (a batch of records, bgpFabric.onRecords) it
// gathers them instead: they are journalled in one write and sent once the
// batch is judged. Owned by the loop.
type noticeSender struct {
	save  *saver
	ports *portSide
	on    bool
	ns    []PortNotice
}

// New checks the options and builds an agent.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Options.Validate(); err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EventLogger == nil {
		cfg.EventLogger = cfg.Logger
	}
	if cfg.OpenLink == nil {
		cfg.OpenLink = func(port string) (l2proto.Link, error) { return l2proto.ListenPacket(port) }
	}
	a := &Agent{opts: cfg.Options, log: cfg.Logger, evlog: cfg.EventLogger, self: cfg.Options.routerID(),
		table: table.NewDeviceTable(table.DeviceTableOptions{MaxDevices: cfg.Options.MaxDevices, Logger: cfg.Logger, Decoded: true}),
		save:  newSaver(cfg.Options, cfg.Logger), loopDone: make(chan struct{}),
		ready: make(chan struct{}), reconf: make(chan reconfRequest)}
	a.met = newMetrics(a)
	a.ports = newPortSide(a, cfg)
	a.notices = noticeSender{save: a.save, ports: a.ports}
	if cfg.Options.Direct() {
		a.fab = newDirectFabric(a)
	} else {
		a.fab = newBGPFabric(a, cfg.Speaker)
	}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(a.met); err != nil {
			return nil, fmt.Errorf("switchagent: metrics: %w", err)
		}
	}
	var err error
	if a.pins, err = newPinReport(cfg); err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	if a.health, err = newPortHealth(cfg.Options.PortHealth, cfg.HealthSource, cfg.Logger, cfg.Registry); err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	if a.disc, err = newDiscovery(a, cfg); err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	return a, nil
}

// Run runs the agent until ctx ends or a part fails. It saves its state
// and stops the speaker gracefully before it returns (peers keep its
// records for the restart time, so a restart is invisible to hosts).
func (a *Agent) Run(ctx context.Context) error {
	saved, loaded, err := loadState(a.opts.stateFile())
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	if saved.Told, err = a.save.openJournal(saved); err != nil {
		return err
	}
	defer a.save.journal.close()
	zrecs, err := saved.zoneRecords()
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	now := time.Now()
	restarting := loaded && a.opts.GracefulRestart.Enabled && now.Sub(saved.Saved) < a.opts.GracefulRestart.RestartTime
	a.log.Info("switch agent starting", "router_id", a.opts.RouterID, "restarting", restarting,
		"restored_records", len(saved.Local), "access_ports", a.opts.AccessPorts, "direct", a.opts.Direct())
	if zrecs, err = a.fab.start(ctx, zrecs, restarting); err != nil {
		return err
	}
	defer a.fab.stop()
	a.zoning.recs = zrecs
	a.config.Store(zrecs.Config())
	closed := startsClosed(a.opts, loaded, saved)
	inForce := zrecs.Config()
	if closed {
		inForce = closedZoning()
	}
	if a.engine, err = NewEngine(a.self, a.opts.HoldDown, inForce); err != nil {
		return err
	}
	a.disc.init(inForce)
	restored := a.engine.Restore(saved.Local, saved.Told, saved.expiries(now), now)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.tasks = newTasks(runCtx)
	defer a.tasks.wg.Wait()
	defer cancel() // runs before wg.Wait

	if err := a.fab.join(ctx, saved, restored, closed); err != nil {
		return err
	}
	if err := a.ports.open(); err != nil {
		return err
	}
	a.ports.run()
	a.startPortHealth()
	a.disc.run(a.tasks.spawn)
	a.fab.run()

	err = a.loop(runCtx)
	close(a.loopDone)
	cancel()
	saveErr := a.saveNow(true)
	if err == nil {
		err = saveErr
	}
	a.log.Info("switch agent stopping", "clean", err == nil)
	return err
}

// tasks are the goroutines Run starts; Run waits for them all.
type tasks struct {
	ctx  context.Context // Run's: ends when the agent stops
	wg   sync.WaitGroup
	errs chan error
}

func newTasks(ctx context.Context) *tasks { return &tasks{ctx: ctx, errs: make(chan error, 8)} }

// spawnIn runs f until ctx (the tasks' own or one below it) ends; an
// error while ctx lives ends the agent.
func (t *tasks) spawnIn(ctx context.Context, name string, f func(context.Context) error) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := f(ctx); err != nil && ctx.Err() == nil {
			select {
			case t.errs <- fmt.Errorf("switchagent: %s: %w", name, err):
			default: // the loop is ending on an earlier error
			}
		}
	}()
}

// spawn runs f until the agent stops.
func (t *tasks) spawn(name string, f func(context.Context) error) { t.spawnIn(t.ctx, name, f) }

// Ready is closed once the agent serves: its speaker runs, the reflectors
// are configured, the access ports are open and its loop runs.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Healthy reports whether the agent runs: its loop is up and its speaker
// has not stopped (for /healthz).
func (a *Agent) Healthy() error {
	if !a.running.Load() {
		return errors.New("switch agent not running")
	}
	return a.fab.healthy()
}

// loop owns the engine: every input goes through it, one at a time.
func (a *Agent) loop(ctx context.Context) error {
	a.running.Store(true)
	defer a.running.Store(false)
	close(a.ready)
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	save := time.NewTicker(minSaveSpacing)
	defer save.Stop()
	for {
		if next, ok := a.nextTick(); ok {
			tick.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-a.tasks.errs:
			return err
		case ev := <-a.fab.records():
			a.fab.onRecords(ctx, ev)
		case ev := <-a.fab.events():
			a.fab.handle(ctx, ev)
		case ev, ok := <-a.ports.registrations():
			if ok {
				a.onRegistration(ctx, ev)
			}
		case q := <-a.ports.queries:
			a.onQuery(ctx, q)
		case ev := <-a.health.eventsC():
			a.onPortHealth(ctx, ev)
		case ev := <-a.disc.registrations():
			a.onDIM(ctx, ev)
		case req := <-a.reconf:
			req.done <- a.reconfigure(req.next)
		case now := <-tick.C:
			a.fab.tick(ctx, now)
			a.endHoldIfDue(ctx, now)
			a.apply(ctx, a.engine.Tick(now))
		case <-a.settle:
			a.settle = nil
			a.log.Info("fabric view settled; comparing what hosts were told")
			a.apply(ctx, a.engine.Resync())
			a.settled.Store(true)
		case now := <-save.C:
			if a.save.due(now) {
				a.startSave(now)
			}
		case r := <-a.save.saved:
			a.save.finish(r)
		}
		a.subscribeAhead(ctx, time.Now())
	}
}

// nextTick returns when the loop's timer is due next: the engine's, the
// fabric side's or the hold's.
func (a *Agent) nextTick() (time.Time, bool) {
	next, ok := a.engine.NextTick()
	for _, d := range [...]func() (time.Time, bool){a.fab.nextTick, a.zoning.hold.dueAt, a.zoning.hold.aheadAt} {
		if due, has := d(); has && (!ok || due.Before(next)) {
			next, ok = due, true
		}
	}
	return next, ok
}

// sessionUp (loop) notes that a reflector session came up (direct mode:
// the start): the hold's bound starts, and the settle time if it has not.
func (a *Agent) sessionUp(now time.Time) {
	a.zoning.hold.sessionUp(now)
	if !a.settled.Load() && a.settle == nil {
		a.settle = time.After(a.opts.Settle)
	}
}

func (a *Agent) onRegistration(ctx context.Context, ev l2proto.Event) {
	e := ev.Entry
	switch ev.Kind {
	case l2proto.Registered, l2proto.Updated:
		a.evlog.Info("device registered", "port", e.AccessPort, "device", e.Device, "event", ev.Kind.String())
		a.apply(ctx, a.engine.Register(e.Report, time.Now()))
	case l2proto.Removed:
		a.evlog.Info("device left", "port", e.AccessPort, "device", e.Device, "reason", ev.Reason.String())
		a.apply(ctx, a.engine.Unregister(e.AccessPort, e.Device.Addr, ev.Reason, time.Now()))
	case l2proto.PortDown:
		// The registrations restored from the state file, which the table
		// does not hold, leave too.
		a.apply(ctx, a.engine.PortDown(e.AccessPort, time.Now()))
	}
}

// onQuery answers a zone query, only for a host registered on the port the
// query came in on (a host cannot make the switch resend another host's
// notifications). A host sends its LLDPDU and then its query at once; the
// query may overtake the registration event, so the registration table
// (which took the LLDPDU before the query was read) is asked. A query
// right after the LLDPDU that registered the host is not answered twice
// (Engine.StartQuery).
func (a *Agent) onQuery(ctx context.Context, q portQuery) {
	e, ok := a.ports.lookup(q.port, q.q.Host)
	if !ok {
		a.met.drops.DropReason(q.port, "query-unregistered-host",
			fmt.Errorf("zone query for %s, which is not registered on %s", q.q.Host, q.port))
		return
	}
	a.apply(ctx, a.engine.Register(e.Report, time.Now()))
	if !e.Refreshed {
		// The host's first LLDPDU and then this query: its registration
		// told it every usable target, unless it was known before.
		a.apply(ctx, a.engine.StartQuery(q.q.Host))
		return
	}
	a.apply(ctx, a.engine.ZoneQuery(q.q.Host))
}

// applyConfig puts the zone configuration the records make in force.
func (a *Agent) applyConfig(ctx context.Context) {
	a.zoning.due = false
	cfg := a.zoning.recs.Config()
	a.config.Store(cfg)
	pins := zones.PinsChanged(a.engine.ix.Config(), cfg)
	a.apply(ctx, a.engine.Config(cfg))
	if a.disc.setConfig(cfg) {
		a.disc.rejudge(a.engine, pins)
		a.subscribe(ctx, a.engine.subs.set) // discovery wants every zone of cfg
	}
}

// apply carries out what the engine decided.
func (a *Agent) apply(ctx context.Context, out Output) {
	if len(out.Publish)+len(out.Withdraw)+len(out.Notices) > 0 || out.Subscriptions != nil {
		a.save.dirty = true
	}
	if len(out.Publish)+len(out.Withdraw) > 0 {
		a.zoning.hold.localChanged() // the memberships taken ahead follow the local devices
	}
	a.pins.report(a.self, out.Refused)
	a.fab.publish(ctx, out)
	a.disc.apply(a.engine, out)
	if out.Subscriptions != nil {
		a.subscribe(ctx, out.Subscriptions)
	}
	a.notices.take(out.Notices)
	a.followPorts()
}

// take sends ns, or gathers them while on.
func (s *noticeSender) take(ns []PortNotice) {
	if s.on {
		s.ns = append(s.ns, ns...)
		return
	}
	s.send(ns)
}

// hold holds the notices back until sendHeld (a batch of records).
func (s *noticeSender) hold() { s.on = true }

// sendHeld sends the notices held since hold, in one journal write.
func (s *noticeSender) sendHeld() {
	s.on = false
	s.send(s.ns)
	clear(s.ns)
	s.ns = s.ns[:0]
}

// send journals ns in one write and then hands them to their ports'
// notifiers, in order.
func (s *noticeSender) send(ns []PortNotice) {
	s.save.journalNotices(ns)
	for _, n := range ns {
		s.ports.notify(n)
	}
}

// everyZone stands for the one AnyRT membership that replaces the zones'
// own when the switch wants every zone; no zone has this name.
const everyZone = ""

// subscribe brings the memberships to those the local devices want (want:
// zones, by Subscriptions' rules under the configuration in force), with
// the memberships taken ahead while the configuration is held
// (subscribeAhead). The fabric side announces new ones at once and
// withdraws those no longer wanted MembershipLinger later.
func (a *Agent) subscribe(ctx context.Context, want []string) {
	ms := a.memberships(a.config.Load(), want)
	if a.zoning.hold.on && len(a.zoning.hold.ahead) > 0 {
		ms = slices.Concat(ms, a.zoning.hold.ahead)
	}
	a.fab.subscribe(ctx, ms)
}

// memberships returns the memberships that hold the zones want under cfg
// (with every zone when the discovery controller runs, discoveryPart.zones):
// one per zone or, when they are every zone of cfg and the default zone,
// the single AnyRT membership (it delivers the same records, at a fraction
// of GoBGP's cost; the zoning rules still decide who sees what).
func (a *Agent) memberships(cfg *zones.Config, want []string) []string {
	want = a.disc.zones(cfg, want)
	if coversEveryZone(cfg, want) {
		return []string{everyZone}
	}
	return want
}

// membershipName is how the logs name membership z: its zone, or "every
// zone" for AnyRT.
func membershipName(z string) string {
	if z == everyZone {
		return "every zone"
	}
	return z
}

// coversEveryZone reports whether want holds the default zone and every
// custom zone of cfg (at least one).
func coversEveryZone(cfg *zones.Config, want []string) bool {
	if cfg == nil {
		return false
	}
	all := cfg.ZoneNames()
	if len(all) == 0 || len(want) < len(all)+1 {
		return false
	}
	set := make(map[string]bool, len(want))
	for _, z := range want {
		set[z] = true
	}
	if !set[zones.DefaultZone] {
		return false
	}
	for _, z := range all {
		if !set[z] {
			return false
		}
	}
	return true
}
