package switchagent

import (
	"cmp"
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
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/inof/configsync"
	"github.com/openinof/inof/inof/peering"
	"github.com/openinof/inof/inof/zoneadmin"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless"
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
}

// Agent is inofd --role switch: the access ports' registrations, the
// device records in BGP and the notifications to local hosts (package
// doc). Run drives it; one goroutine (the loop) owns the Engine.
type Agent struct {
	cfg  Config
	opts Options
	// mu guards the parts Run sets up (speaker, bfd, reg, ports, stray)
	// against the metrics collector and the watchers; after setup only a
	// reload changes ports, from the loop.
	mu  sync.Mutex
	log *slog.Logger
	// evlog is Config.EventLogger.
	evlog   *slog.Logger
	self    inof.RouterID
	met     *metrics
	speaker bgp.Speaker
	bfd     *bfd.Manager
	// bfdCancel ends the session log's BFD subscription.
	bfdCancel func()
	pub       *table.DevicePublisher // per-device records
	sets      *table.SetPublisher    // device set records
	// format is the record format the switch publishes in (the fabric's
	// setting, docs/records.md); owned by the loop.
	format record.Format
	// formatShown is format for the metrics.
	formatShown atomic.Uint32
	table       *table.DeviceTable
	changes     []table.DeviceChange // the loop's buffer for the table's changes
	batch       []bgp.RecordEvent    // the loop's buffer for the records queued (onRecords)
	view        *table.ConfigView
	asm         *configsync.Assembler
	// held gathers the notices of a batch's device records while holding
	// is set (onRecords): they are journalled in one write and sent once
	// the batch is judged.
	held    []PortNotice
	holding bool
	// origins and refusals check who sent each record (docs/security.md).
	origins        table.Origins
	refusals       *table.Refusals
	zrecs          zones.Records
	engine         *Engine
	reg            *l2proto.Registry
	ports          map[string]*accessPort // replaced whole (under mu) by a reload
	stray          *l2proto.StrayWatcher  // nil until watchStray opened it (or with Config.WatchStray)
	subs           *memberships           // zones subscribed to
	carried        *carriers              // route targets of the remote device records held (carriers.go)
	keptSubs       map[string]bool        // memberships kept past their linger for carried records
	dirty          bool                   // state to save
	saving         bool                   // a save is being written (statesave.go)
	saved          chan saveResult        // a written save's outcome, to the loop
	journal        *toldJournal           // notices since the last save (toldjournal.go)
	journalFailing bool                   // the last journal write failed (logged once)
	// configDue says zone records changed and the configuration they make
	// is not yet in force: it is rebuilt once the records already queued
	// are in (onRecords), or before the next device record, so a burst of zone records
	// (1,000 when a switch joins a fabric of 1,000 zones) costs one
	// rebuild instead of one per record, and every device record is still
	// judged under every zone record received before it.
	configDue bool
	// hold keeps the zone configuration received after a start out of
	// force until it is whole (confighold.go).
	hold configHold
	// eor carries the reflector whose End-of-RIB ends the wait of the
	// hold (pollEndOfRIB) to the loop.
	eor chan netip.Addr
	// nextSave is the earliest time the loop saves again (saveSpacing).
	nextSave time.Time
	// deadlinesDue is when the saved registration deadlines are a quarter
	// of the shortest TTL old: refreshes move them without changing
	// anything else, and a restart after a crash must not find them all
	// passed (zero: no registrations).
	deadlinesDue time.Time
	settled      atomic.Bool   // the first Resync after start has run
	configHeld   atomic.Bool   // the zone configuration received is held (confighold.go)
	running      atomic.Bool   // the loop runs
	ready        chan struct{} // closed when the loop first runs
	// sessionLog logs BGP changes (from the neighbor watch) and BFD
	// changes (from the BFD subscription).
	sessionLog *peering.SessionLog
	// config and profile are what the API reads: the zone configuration
	// in force and the lossless profile received (set by the loop).
	config  atomic.Pointer[zones.Config]
	profile atomic.Pointer[lossless.Profile]
	disc    *discoveryPart // the NVMe/TCP discovery controller; nil when off
	// admin is the zone store in direct mode (nil until Run opened it,
	// and always in a fabric): the API commits through it.
	admin atomic.Pointer[zoneadmin.Admin]
	// commits carries committed zoning (direct mode) to the loop, which
	// puts the store's configuration in force.
	commits chan chan struct{}

	records chan bgp.RecordEvent
	queries chan portQuery
	dims    chan dimEvent // hosts registered with the discovery controller
	// loopDone is closed when the loop returns: what still hands it work
	// (a discovery connection ending) gives up then.
	loopDone chan struct{}
	up       chan struct{} // a reflector session came up
	// reach carries, in order, whether the switch has a reflector session:
	// false when it lost the last one, true when one came up again.
	reach chan bool
	// upReflectors are the reflectors whose session is established (the
	// neighbor watch's own).
	upReflectors map[netip.Addr]bool
	// downs carries access ports without carrier to the loop, for the
	// restored registrations the registration table does not hold.
	downs  chan string
	reconf chan reconfRequest
	// Set by Run before anything starts: the context of its goroutines
	// and how to start one more (an access port added by a reload).
	runCtx  context.Context
	spawnIn func(ctx context.Context, name string, f func(context.Context) error)
}

type accessPort struct {
	name string
	link l2proto.Link
	nt   *l2proto.Notifier
	sp   *l2proto.SwitchPort
	stop context.CancelFunc // ends the port's goroutines (startPort)
	done chan struct{}      // closed when they have ended
}

type portQuery struct {
	port string
	q    l2proto.ZoneQuery
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
	a := &Agent{cfg: cfg, opts: cfg.Options, log: cfg.Logger, evlog: cfg.EventLogger, self: cfg.Options.routerID(),
		table: table.NewDeviceTable(table.DeviceTableOptions{MaxDevices: cfg.Options.MaxDevices, Logger: cfg.Logger}), view: table.NewConfigView(),
		asm: configsync.NewAssembler(0), subs: newMemberships(), carried: newCarriers(), keptSubs: map[string]bool{},
		origins:  table.Origins{Role: bgp.RoleClient, ASN: cfg.Options.ASN},
		refusals: table.NewRefusals(cfg.Logger),
		records:  make(chan bgp.RecordEvent, 1024), queries: make(chan portQuery, 256),
		dims: make(chan dimEvent, 256), loopDone: make(chan struct{}), saved: make(chan saveResult, 1),
		up: make(chan struct{}, 1), reach: make(chan bool, 16), upReflectors: map[netip.Addr]bool{}, eor: make(chan netip.Addr, 1), downs: make(chan string, 64),
		ready: make(chan struct{}), reconf: make(chan reconfRequest), commits: make(chan chan struct{})}
	a.sessionLog = &peering.SessionLog{Log: a.log, Kind: func(netip.Addr) string { return "reflector" }}
	a.met = newMetrics(a)
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(a.met); err != nil {
			return nil, fmt.Errorf("switchagent: metrics: %w", err)
		}
	}
	if err := a.newDiscovery(); err != nil {
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
	journal, told, bad, err := openToldJournal(a.opts.toldJournalFile(), saved.ToldGen)
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	defer journal.close()
	a.journal = journal
	if len(told) > 0 || bad > 0 {
		a.log.Info("notifications since the last save replayed from the journal", "notices", len(told), "torn", bad)
		saved.Told = replayTold(saved.Told, told)
	}
	zrecs, err := saved.zoneRecords()
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	if a.opts.Direct() {
		admin, err := a.openZoneStore()
		if err != nil {
			return err
		}
		defer a.closeZoneStore(admin)
		zrecs = recordsOf(admin.Store().Records())
	} else {
		a.noteUnusedStore()
	}
	a.zrecs = zrecs
	a.config.Store(zrecs.Config())
	closed := startsClosed(a.opts, loaded, saved)
	inForce := zrecs.Config()
	if closed {
		inForce = closedZoning()
	}
	if a.engine, err = NewEngine(a.self, a.opts.HoldDown, inForce); err != nil {
		return err
	}
	a.discoveryInit(inForce)
	now := time.Now()
	restarting := loaded && a.opts.GracefulRestart.Enabled && now.Sub(saved.Saved) < a.opts.GracefulRestart.RestartTime
	a.log.Info("switch agent starting", "router_id", a.opts.RouterID, "restarting", restarting,
		"restored_records", len(saved.Local), "access_ports", a.opts.AccessPorts, "direct", a.opts.Direct())
	restored := a.engine.Restore(saved.Local, saved.Told, saved.expiries(now), now)

	if !a.opts.Direct() {
		if err := a.startSpeaker(ctx, restarting); err != nil {
			return err
		}
		defer a.stopSpeaker()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait
	errs := make(chan error, 8)
	// spawnIn runs f until pctx (runCtx or below it) ends; an error while
	// pctx lives ends the agent.
	a.spawnIn = func(pctx context.Context, name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(pctx); err != nil && pctx.Err() == nil {
				select {
				case errs <- fmt.Errorf("switchagent: %s: %w", name, err):
				default: // the loop is ending on an earlier error
				}
			}
		}()
	}
	a.runCtx = runCtx
	spawn := func(name string, f func(context.Context) error) { a.spawnIn(runCtx, name, f) }

	a.setFormat(cmp.Or(saved.Format, record.FormatDevices))
	if !a.opts.Direct() {
		a.startConfigHold(runCtx, closed)
	}
	if a.opts.Direct() {
		a.apply(ctx, restored)
		a.up <- struct{}{} // no fabric to wait for: settle from the start
	} else if err := a.startFabric(ctx, runCtx, saved, restored); err != nil {
		return err
	}
	reg, err := l2proto.NewRegistry(l2proto.RegistryConfig{})
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	ports := map[string]*accessPort{}
	for _, name := range a.opts.AccessPorts {
		p, err := a.openPort(reg, name, slices.Contains(a.opts.LegacyV0Ports, name))
		if err != nil {
			for _, q := range ports {
				q.link.Close()
			}
			return err
		}
		ports[name] = p
	}
	a.mu.Lock()
	a.reg, a.ports = reg, ports
	a.mu.Unlock()
	spawn("registry", a.reg.Run)
	for _, p := range ports {
		a.startPort(p)
	}
	spawn("link watcher", a.watchLinks)
	a.runDiscovery(spawn)
	spawn("stray frames", a.watchStray)
	if a.speaker != nil {
		spawn("speaker", func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return nil
			case <-a.speaker.Done():
				return fmt.Errorf("speaker stopped: %w", a.speaker.Err())
			}
		})
	}

	err = a.loop(runCtx, errs)
	close(a.loopDone)
	cancel()
	saveErr := a.save(true)
	if err == nil {
		err = saveErr
	}
	a.log.Info("switch agent stopping", "clean", err == nil)
	return err
}

// startFabric republishes the saved records, subscribes to the
// configuration, applies what the restore decided, watches the speaker's
// records and sessions (until runCtx ends) and adds the reflectors.
func (a *Agent) startFabric(ctx, runCtx context.Context, saved savedState, restored Output) error {
	a.republish(ctx, saved.ownRecords(a.self, a.log))
	// Tell the reflectors what this switch reads (docs/records.md, rolling
	// upgrade).
	if err := a.speaker.Publish(ctx, &record.Switch{Switch: a.self, Reads: record.SwitchReadsDeviceSets}, record.SwitchInfoRT); err != nil {
		return fmt.Errorf("switchagent: announcing what the switch reads: %w", err)
	}
	if err := a.speaker.Subscribe(ctx, record.ConfigRT(a.opts.ASN)); err != nil {
		return fmt.Errorf("switchagent: subscribe to configuration: %w", err)
	}
	if a.disc != nil {
		// The other switches' discovery controllers, for referrals.
		if err := a.speaker.Subscribe(ctx, record.DiscoveryRT); err != nil {
			return fmt.Errorf("switchagent: subscribe to discovery controllers: %w", err)
		}
	}
	a.apply(ctx, restored)
	if err := a.speaker.WatchRecords(runCtx, func(ev bgp.RecordEvent) {
		select {
		case a.records <- ev:
		case <-runCtx.Done():
		}
	}); err != nil {
		return fmt.Errorf("switchagent: watch records: %w", err)
	}
	if err := a.speaker.WatchNeighbors(runCtx, func(ev bgp.NeighborEvent) {
		a.sessionLog.BGP(ev)
		had := len(a.upReflectors) > 0
		if ev.State == bgp.StateEstablished {
			a.upReflectors[ev.Address] = true
			select {
			case a.up <- struct{}{}:
			default:
			}
		} else {
			delete(a.upReflectors, ev.Address)
		}
		if has := len(a.upReflectors) > 0; has != had {
			select {
			case a.reach <- has:
			case <-runCtx.Done():
			}
		}
	}); err != nil {
		return fmt.Errorf("switchagent: watch neighbors: %w", err)
	}
	return a.addReflectors(ctx)
}

// startSpeaker builds (unless given), starts and prepares the speaker.
func (a *Agent) startSpeaker(ctx context.Context, restarting bool) error {
	sp, mgr := a.cfg.Speaker, (*bfd.Manager)(nil)
	if sp == nil {
		o := a.opts
		if o.BFD.Enabled {
			mgr = bfd.NewManager(bfd.ManagerOptions{Logger: a.log, RealTime: true})
		}
		g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: o.ASN, RouterID: netip.MustParseAddr(o.RouterID),
			ListenPort: -1, TTLSecurity: o.TTLSecurity, BFD: mgr, Logger: a.log,
			GracefulRestart: o.GracefulRestart.Speaker(restarting)})
		if err != nil {
			if mgr != nil {
				mgr.Close()
			}
			return fmt.Errorf("switchagent: %w", err)
		}
		sp = g
	}
	a.mu.Lock()
	a.speaker, a.bfd = sp, mgr
	a.mu.Unlock()
	if mgr != nil {
		a.bfdCancel = mgr.Subscribe().Each(a.sessionLog.BFD)
	}
	if err := a.speaker.Start(ctx); err != nil {
		return fmt.Errorf("switchagent: start BGP: %w", err)
	}
	clock := inof.NewClock(nil) // one for both: a switch-over keeps epochs, later moves go above them
	pub, err := table.NewDevicePublisher(table.DevicePublisherOptions{Speaker: a.speaker, Clock: clock})
	if err != nil {
		return err
	}
	sets, err := table.NewSetPublisher(table.SetPublisherOptions{Speaker: a.speaker, Switch: a.self, Clock: clock, Logger: a.log,
		MinInterval: a.opts.SetInterval})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.pub, a.sets = pub, sets
	a.mu.Unlock()
	return nil
}

// stopFlush bounds the wait for device set records still to go out when
// the agent stops.
const stopFlush = 2 * time.Second

func (a *Agent) stopSpeaker() {
	ctx, cancel := context.WithTimeout(context.Background(), stopFlush)
	if err := a.sets.Flush(ctx); err != nil {
		a.log.Warn("device set records not all sent before the stop", "err", err)
	}
	cancel()
	a.sets.Close()
	a.speaker.Stop()
	if a.bfd != nil {
		a.bfdCancel()
		a.bfd.Close()
	}
}

func (a *Agent) addReflectors(ctx context.Context) error {
	o := a.opts
	local := netip.Addr{}
	if o.LocalAddress != "" {
		local = netip.MustParseAddr(o.LocalAddress)
	}
	for _, r := range o.Reflectors {
		n := bgp.Neighbor{Address: netip.MustParseAddr(r.Address), Port: r.Port, LocalAddress: local,
			Password: o.Password, TTLSecurity: o.TTLSecurity}
		n.BFD = o.BFD.Neighbor()
		if err := a.speaker.AddNeighbor(ctx, n); err != nil {
			return fmt.Errorf("switchagent: reflector %s: %w", r.Address, err)
		}
	}
	return nil
}

func (a *Agent) openPort(reg *l2proto.Registry, name string, legacyV0 bool) (*accessPort, error) {
	link, err := a.cfg.OpenLink(name)
	if err != nil {
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	nt, err := l2proto.NewNotifier(l2proto.NotifierConfig{Link: link, LegacyV0: legacyV0,
		OnResult: a.met.notified, Logger: a.log})
	if err != nil {
		link.Close()
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	sp, err := l2proto.NewSwitchPort(l2proto.SwitchPortConfig{Link: link, Registry: reg, Notifier: nt,
		Drops: a.met.drops, Logger: a.log, Limits: a.opts.AccessLimits.portLimits(),
		OnQuery: func(port string, q l2proto.ZoneQuery) {
			select {
			case a.queries <- portQuery{port, q}:
			default:
				a.met.queriesDropped.Inc()
			}
		}})
	if err != nil {
		link.Close()
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	return &accessPort{name: name, link: link, nt: nt, sp: sp}, nil
}

func (a *Agent) watchLinks(ctx context.Context) error {
	watch := a.cfg.WatchLinks
	if watch == nil {
		w, err := l2proto.NewLinkWatcher(a.log)
		if err != nil {
			return err
		}
		watch = w.Run
	}
	err := watch(ctx, func(s l2proto.LinkState) {
		if !s.Running && a.isAccessPort(s.Name) {
			a.reg.LinkDown(s.Name) // the registry's events carry it on
			// Restored registrations are not in the registry. A full queue
			// loses nothing for long: every re-subscription's dump reports
			// the port down again.
			select {
			case a.downs <- s.Name:
			default:
			}
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Ready is closed once the agent serves: its speaker runs, the reflectors
// are configured, the access ports are open and its loop runs.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Healthy reports whether the agent runs: its loop is up and its speaker
// has not stopped (for /healthz).
func (a *Agent) Healthy() error {
	if !a.running.Load() {
		return errors.New("switch agent not running")
	}
	a.mu.Lock()
	sp := a.speaker
	a.mu.Unlock()
	if sp == nil {
		return nil // direct mode
	}
	select {
	case <-sp.Done():
		return fmt.Errorf("BGP speaker stopped: %v", sp.Err())
	default:
	}
	return nil
}

// watchStray counts and drops the registration and notification frames
// that arrive on interfaces that are not access ports (the access ports
// are an allow-list).
func (a *Agent) watchStray(ctx context.Context) error {
	watch := a.cfg.WatchStray
	if watch == nil {
		w, err := l2proto.ListenStray(a.opts.AccessPorts)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.stray = w
		a.mu.Unlock()
		watch = w.Run
	}
	return watch(ctx, func(ifname string, _ []byte) {
		if a.isAccessPort(ifname) {
			return // added by a reload after the watcher started
		}
		a.met.drops.DropReason(ifname, "not-access-port",
			fmt.Errorf("registration or notification frame on %s, which is not an access port", ifname))
	})
}

// loop owns the engine: every input goes through it, one at a time.
func (a *Agent) loop(ctx context.Context, errs <-chan error) error {
	a.running.Store(true)
	defer a.running.Store(false)
	close(a.ready)
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	var settle <-chan time.Time
	settled := false
	save := time.NewTicker(minSaveSpacing)
	defer save.Stop()
	var prune <-chan time.Time // direct mode: the zone store's expired tombstones
	if a.opts.Direct() {
		p := time.NewTicker(pruneInterval)
		defer p.Stop()
		prune = p.C
	}
	for {
		next, ok := a.engine.NextTick()
		if due, dropping := a.subs.next(); dropping && (!ok || due.Before(next)) {
			next, ok = due, true
		}
		if due, _, held := a.hold.due(); held && (!ok || due.Before(next)) {
			next, ok = due, true
		}
		if due, ahead := a.hold.aheadAt(); ahead && (!ok || due.Before(next)) {
			next, ok = due, true
		}
		if ok {
			tick.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case ev := <-a.records:
			a.onRecords(ctx, ev)
		case ev, ok := <-a.reg.Events():
			if ok {
				a.onRegistration(ctx, ev)
			}
		case ev := <-a.dims:
			a.onDIM(ctx, ev)
		case q := <-a.queries:
			a.onQuery(ctx, q)
		case port := <-a.downs:
			a.apply(ctx, a.engine.PortDown(port, time.Now()))
		case req := <-a.reconf:
			req.done <- a.reconfigure(req.next)
		case done := <-a.commits:
			a.takeCommitted(ctx)
			close(done)
		case now := <-prune:
			a.pruneZoneStore(now)
		case now := <-tick.C:
			a.unsubscribeDue(ctx, now)
			a.endHoldIfDue(ctx, now)
			a.apply(ctx, a.engine.Tick(now))
		case has := <-a.reach:
			a.holdWhileAway(has, time.Now())
		case <-a.up:
			a.hold.sessionUp(time.Now())
			if !settled && settle == nil {
				settle = time.After(a.opts.Settle)
			}
		case r := <-a.eor:
			a.log.Info("reflector sent End-of-RIB; zone configuration held a little longer", "reflector", r,
				"quiet", configQuiet.String())
			a.hold.endOfRIB(time.Now())
		case <-settle:
			settle, settled = nil, true
			a.log.Info("fabric view settled; comparing what hosts were told")
			a.apply(ctx, a.engine.Resync())
			a.settled.Store(true)
		case now := <-save.C:
			stale := !a.deadlinesDue.IsZero() && !now.Before(a.deadlinesDue)
			if (a.dirty || stale) && !a.saving && !now.Before(a.nextSave) {
				a.startSave(now)
			}
		case r := <-a.saved:
			a.finishSave(r)
		}
		a.subscribeAhead(ctx, time.Now())
	}
}

func (a *Agent) onRegistration(ctx context.Context, ev l2proto.Event) {
	e := ev.Entry
	switch ev.Kind {
	case l2proto.Registered, l2proto.Updated:
		a.evlog.Info("device registered", "port", e.Port, "device", e.Device, "event", ev.Kind.String())
		a.apply(ctx, a.engine.Register(e.Port, e.Device, e.Since, time.Now()))
	case l2proto.Removed:
		a.evlog.Info("device left", "port", e.Port, "device", e.Device, "reason", ev.Reason.String())
		a.apply(ctx, a.engine.Unregister(e.Port, e.Device.Addr, ev.Reason, time.Now()))
	}
}

// onQuery answers a zone query, only for a host registered on the port the
// query came in on (a host cannot make the switch resend another host's
// notifications). A host sends its LLDPDU and then its query at once; the
// query may overtake the registration event, so the registration table
// (which took the LLDPDU before the query was read) is asked.
func (a *Agent) onQuery(ctx context.Context, q portQuery) {
	e, ok := a.reg.Lookup(q.port, q.q.Host)
	if !ok {
		a.met.drops.DropReason(q.port, "query-unregistered-host",
			fmt.Errorf("zone query for %s, which is not registered on %s", q.q.Host, q.port))
		return
	}
	a.apply(ctx, a.engine.Register(e.Port, e.Device, e.Since, time.Now()))
	a.apply(ctx, a.engine.ZoneQuery(q.q.Host))
}

// onRecords handles ev and the records queued behind it: first those that
// are not device records, in order, and the configuration they make put in
// force (unless held, confighold.go), then the device records, in order.
// A switch that connects (or comes back) receives every configuration
// record at once, in the order of the reflector's table, not of the edits;
// a device record judged between two of them was judged under a zoning no
// edit made (two edits while leaf2 restarted, one moving a target into a
// zone and one taking a host out of an alias of that zone: the host was
// told the target active, and inactive 3 ms later;
// TestPrivSoakRestartTakesWholeZoning). Taking the batch's configuration
// first covers the records that arrive together; the hold, those that
// arrive after the device record. The notices of the device records are
// journalled in one write and sent once the batch is judged (a write per
// changed device was ~6 % of a receiving leaf's CPU under churn).
func (a *Agent) onRecords(ctx context.Context, ev bgp.RecordEvent) {
	batch := append(a.batch[:0], ev)
	for n := len(a.records); n > 0; n-- {
		batch = append(batch, <-a.records)
	}
	for _, ev := range batch {
		if !isDeviceEvent(ev) {
			a.onRecord(ctx, ev)
		}
	}
	if a.configReady() {
		a.applyConfig(ctx)
	}
	a.holding = true
	for _, ev := range batch {
		if isDeviceEvent(ev) {
			a.onRecord(ctx, ev)
		}
	}
	a.holding = false
	a.sendNotices(a.held)
	clear(a.held)
	a.held = a.held[:0]
	clear(batch) // drop the records they point to
	a.batch = batch[:0]
}

func (a *Agent) onRecord(ctx context.Context, ev bgp.RecordEvent) {
	if reason := a.origins.Check(ev); reason != "" {
		// What the tables hold for the key stays: the reflector withdraws
		// the refused record when it quarantines its sender.
		a.refusals.Refuse(reason, ev)
		return
	}
	if isDeviceEvent(ev) {
		a.carried.apply(ev)
		a.changes = a.table.Apply(a.changes[:0], ev)
		if len(a.changes) > 0 && a.configReady() {
			a.applyConfig(ctx)
		}
		for _, ch := range a.changes {
			if ch.Record != nil {
				a.apply(ctx, a.engine.Record(ch.Record.Report))
			} else {
				a.apply(ctx, a.engine.Gone(ch.ID.Switch, ch.ID.Addr))
			}
			a.discoveryTouch(ch.ID.Addr)
		}
		clear(a.changes) // drop the records they point to
		return
	}
	if isDiscoveryEvent(ev) {
		a.onDiscoveryRecord(ev)
		return
	}
	newest, ok, changed := a.view.Apply(ev)
	if !ok || !changed {
		return
	}
	switch configsync.KindOf(newest).Owner() {
	case configsync.OwnerZoneStore:
		a.onZoneRecord(newest)
	case configsync.OwnerLossless:
		a.onProfile(newest)
	case configsync.OwnerRecordFormat:
		a.onRecordFormat(ctx, newest)
	}
	// Any other kind is of a newer release: ignored.
}

// isDeviceEvent reports whether ev is about a device or device set record.
func isDeviceEvent(ev bgp.RecordEvent) bool {
	if len(ev.Key) == 0 {
		return false
	}
	t := record.Type(ev.Key[0])
	return t == record.TypeDevice || t == record.TypeDeviceSet
}

// onZoneRecord takes the newest version of one zone store object's part.
func (a *Agent) onZoneRecord(c record.Config) {
	rec, complete, err := a.asm.Add(c)
	switch {
	case err != nil:
		a.met.badConfig.Inc()
		a.log.Warn("configuration record refused", "err", err)
	case complete && a.zrecs.Apply(rec):
		a.configDue = true
		if a.hold.on {
			// Logged as changed when the hold ends: tests and operators read
			// "changed" as in force.
			a.log.Info("zone configuration held", "object", rec.Key.String())
			a.hold.record(time.Now(), rec.Key.String())
			return
		}
		a.log.Info("zone configuration changed", "object", rec.Key.String())
	}
}

// onProfile takes the newest version of the fabric's lossless profile.
func (a *Agent) onProfile(c record.Config) {
	p, err := lossless.Decode(c.Payload)
	if err != nil {
		a.met.badConfig.Inc()
		a.log.Warn("lossless profile refused", "err", err)
		return
	}
	a.profile.Store(&p)
	a.log.Info("lossless profile received", "generation", c.Gen)
}

// applyConfig puts the zone configuration the records make in force.
func (a *Agent) applyConfig(ctx context.Context) {
	a.configDue = false
	cfg := a.zrecs.Config()
	a.config.Store(cfg)
	a.apply(ctx, a.engine.Config(cfg))
	a.discoveryConfig(ctx, cfg)
}

// apply carries out what the engine decided.
func (a *Agent) apply(ctx context.Context, out Output) {
	if len(out.Publish)+len(out.Withdraw)+len(out.Notices) > 0 || out.Subscriptions != nil {
		a.dirty = true
	}
	if len(out.Publish)+len(out.Withdraw) > 0 {
		a.hold.localChanged() // the memberships taken ahead follow the local devices
	}
	if a.pub == nil {
		a.publishDirect(out)
	} else {
		// One engine step's changes (a port's devices gone down together)
		// go out together, none behind another's set interval.
		pub := a.publisher()
		pub.Batch(func() { a.publish(ctx, pub, out) })
	}
	a.discoveryApply(out)
	if out.Subscriptions != nil && a.speaker != nil {
		a.subscribe(ctx, out.Subscriptions)
	}
	if a.holding {
		a.held = append(a.held, out.Notices...)
		return
	}
	a.sendNotices(out.Notices)
}

// sendNotices journals ns in one write and then hands them to their ports'
// notifiers, in order.
func (a *Agent) sendNotices(ns []PortNotice) {
	a.journalNotices(ns)
	for _, n := range ns {
		a.notify(n)
	}
}

// publish hands out's records to pub.
func (a *Agent) publish(ctx context.Context, pub devicePublishing, out Output) {
	for _, p := range out.Publish {
		r := p.Record
		rec := record.Device{Report: r.Report(a.self), AccessPort: r.Port, Since: r.Since}
		rts := make([]record.RouteTarget, 0, len(p.Zones))
		for _, z := range p.Zones {
			rts = append(rts, record.ZoneRT(a.opts.ASN, z))
		}
		if err := pub.Publish(ctx, rec, rts...); err != nil {
			a.log.Error("publishing device record", "device", r.Device.String(), "err", err)
		}
	}
	for _, r := range out.Withdraw {
		if err := pub.Withdraw(ctx, record.DeviceID{Switch: a.self, Addr: r.Device.Addr}); err != nil {
			a.log.Error("withdrawing device record", "device", r.Device.String(), "err", err)
		}
	}
}

// publishDirect puts out's records in the device table (direct mode: no
// BGP; the table is the API's device list).
func (a *Agent) publishDirect(out Output) {
	for _, p := range out.Publish {
		r := p.Record
		rec := record.Device{Report: r.Report(a.self), AccessPort: r.Port, Since: r.Since}
		a.table.Apply(nil, bgp.RecordEvent{Record: &rec})
	}
	for _, r := range out.Withdraw {
		gone := record.Device{Report: r.Report(a.self)}
		a.table.Apply(nil, bgp.RecordEvent{Key: gone.Key(), Withdrawn: true})
	}
}

// journalNotices journals notices before they are sent; a failure is
// logged when it starts and when it ends.
func (a *Agent) journalNotices(ns []PortNotice) {
	err := a.journal.record(ns)
	switch {
	case err != nil && !a.journalFailing:
		a.log.Error("notifications not journalled: a crash before the next save may leave hosts uncorrected", "err", err)
	case err == nil && a.journalFailing && len(ns) > 0:
		a.log.Info("notifications journalled again")
	default:
		return
	}
	a.journalFailing = err != nil
}

// everyZone stands in a.subs for the one AnyRT membership that replaces
// the zones' own when the switch wants every zone; no zone has this name.
const everyZone = ""

// subscribe brings the memberships to those the local devices want (want:
// zones, by Subscriptions' rules under the configuration in force), with
// the memberships taken ahead while the configuration is held
// (subscribeAhead). New ones are announced at once; those no longer wanted
// go MembershipLinger later (unsubscribeDue).
func (a *Agent) subscribe(ctx context.Context, want []string) {
	ms := a.memberships(a.config.Load(), want)
	if a.hold.on && len(a.hold.ahead) > 0 {
		ms = slices.Concat(ms, a.hold.ahead)
	}
	for _, z := range a.subs.want(ms, time.Now()) {
		if err := a.speaker.Subscribe(ctx, a.membershipRT(z)); err != nil {
			a.log.Error("subscribing to zone", "zone", membershipName(z), "err", err)
			continue
		}
		a.subs.announced(z)
	}
}

// memberships returns the memberships that hold the zones want under cfg
// (with every zone when the discovery controller runs, discoveryZones):
// one per zone or, when they are every zone of cfg and the default zone,
// the single AnyRT membership (it delivers the same records, at a fraction
// of GoBGP's cost; the zoning rules still decide who sees what).
func (a *Agent) memberships(cfg *zones.Config, want []string) []string {
	want = a.discoveryZones(cfg, want)
	if coversEveryZone(cfg, want) {
		return []string{everyZone}
	}
	return want
}

// unsubscribeDue withdraws the memberships whose linger ended by now.
func (a *Agent) unsubscribeDue(ctx context.Context, now time.Time) {
	due := a.subs.due(now)
	if len(due) == 0 {
		return
	}
	var kept []record.RouteTarget
	for _, z := range a.subs.kept() {
		kept = append(kept, a.membershipRT(z))
	}
	for _, z := range due {
		if d, ok := a.carried.needs(a.membershipRT(z), kept, a.engine.Used); ok {
			if !a.keptSubs[z] {
				a.log.Info("keeping a zone membership: a record hosts here use still carries only its route target (its switch has not re-tagged it yet)",
					"zone", membershipName(z), "device", d)
			}
			a.keptSubs[z] = true
			a.subs.retry(z, now)
			continue
		}
		if err := a.speaker.Unsubscribe(ctx, a.membershipRT(z)); err != nil {
			a.log.Error("unsubscribing from zone", "zone", membershipName(z), "err", err)
			a.subs.retry(z, now)
			continue
		}
		delete(a.keptSubs, z)
		a.subs.withdrawn(z)
	}
}

// membershipName is how the logs name membership z: its zone, or "every
// zone" for AnyRT.
func membershipName(z string) string {
	if z == everyZone {
		return "every zone"
	}
	return z
}

// membershipRT is the route target of zone z's membership.
func (a *Agent) membershipRT(z string) record.RouteTarget {
	if z == everyZone {
		return record.AnyRT
	}
	return record.ZoneRT(a.opts.ASN, z)
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

func (a *Agent) notify(n PortNotice) {
	if n.Port == dimPort {
		return // a registered discovery host hears through its AENs
	}
	p := a.ports[n.Port]
	if p == nil {
		a.log.Error("notice for a port that is not an access port", "port", n.Port, "host", n.Host)
		return
	}
	t := n.Target
	_, err := p.nt.Notify(l2proto.Notification{Target: t.Addr, Host: n.Host, State: n.State, Reason: n.Reason,
		Role: t.Role, Protocol: t.Protocol, Port: t.Port, NQN: t.NQN})
	if err != nil {
		a.met.notifyRefused.Inc()
		a.log.Warn("notification refused", "port", n.Port, "host", n.Host, "target", t.Addr, "err", err)
		return
	}
	a.evlog.Info("notify", "port", n.Port, "host", n.Host, "target", t.Addr, "state", n.State.String(), "reason", n.Reason.String())
}
