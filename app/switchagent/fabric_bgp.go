package switchagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// bgpFabric is the fabric side of a switch with reflectors: its BGP
// speaker (and BFD), the publishers of its device records, its zone
// memberships, and the intake of the records it receives (whose senders it
// checks, and whose configuration it assembles).
type bgpFabric struct {
	a *Agent
	// given is Config.Speaker (nil: a GoBGP speaker built from Options).
	given bgp.Speaker
	// mu guards speaker, bfd and pubs against the metrics collector and
	// the API; they are set once, by start.
	mu      sync.Mutex
	speaker bgp.Speaker
	bfd     *bfd.Manager
	// bfdCancel ends the session log's BFD subscription.
	bfdCancel func()
	pubs      *publishers
	members   *zoneMemberships
	// sessionLog logs BGP changes (from the neighbor watch) and BFD
	// changes (from the BFD subscription).
	sessionLog *peering.SessionLog
	// upReflectors are the reflectors whose session is established (the
	// neighbor watch's own).
	upReflectors map[netip.Addr]bool
	recs         chan bgp.RecordEvent
	// ev carries, in order, sessions coming up, the loss of the last one
	// (the neighbor watch waits, bounded by ctx) and a reflector's
	// End-of-RIB (pollEndOfRIB).
	ev chan fabricEvent
	// The loop's: the newest copy of each configuration record part, the
	// assembler of zone records, the checks of who sent each record
	// (docs/security.md), and its buffers for the table's changes and the
	// records queued (onRecords).
	view    *table.ConfigView
	asm     *configsync.Assembler
	origins table.Origins
	refused *table.Refusals
	changes []table.DeviceChange
	batch   []bgp.RecordEvent
}

func newBGPFabric(a *Agent, given bgp.Speaker) *bgpFabric {
	f := &bgpFabric{a: a, given: given, upReflectors: map[netip.Addr]bool{},
		recs: make(chan bgp.RecordEvent, 1024), ev: make(chan fabricEvent, 16),
		view: table.NewConfigView(), asm: configsync.NewAssembler(0),
		origins: table.Origins{Role: bgp.RoleClient, ASN: a.opts.ASN},
		refused: table.NewRefusals(a.log)}
	f.sessionLog = &peering.SessionLog{Log: a.log, Kind: func(netip.Addr) string { return "reflector" }}
	return f
}

// start builds (unless given), starts and prepares the speaker; the zoning
// to start from is the one saved.
func (f *bgpFabric) start(ctx context.Context, saved zones.Records, restarting bool) (zones.Records, error) {
	a := f.a
	noteUnusedStore(a.opts, a.log)
	sp, mgr := f.given, (*bfd.Manager)(nil)
	if sp == nil {
		o := a.opts
		if o.BFD.Enabled {
			mgr = bfd.NewManager(bfd.ManagerOptions{Logger: a.log, RealTime: true})
		}
		g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: o.ASN, RouterID: netip.MustParseAddr(o.RouterID),
			ListenPort: -1, TTLSecurity: o.TTLSecurity, BFD: mgr, BFDConfirm: o.BFD.Confirmation(), Logger: a.log,
			GracefulRestart: o.GracefulRestart.Speaker(restarting)})
		if err != nil {
			if mgr != nil {
				mgr.Close()
			}
			return nil, fmt.Errorf("switchagent: %w", err)
		}
		sp = g
	}
	f.mu.Lock()
	f.speaker, f.bfd = sp, mgr
	f.mu.Unlock()
	if mgr != nil {
		f.bfdCancel = mgr.Subscribe().Each(f.sessionLog.BFD)
	}
	if err := sp.Start(ctx); err != nil {
		return nil, fmt.Errorf("switchagent: start BGP: %w", err)
	}
	pubs, err := newPublishers(sp, a.self, a.opts, a.log)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.pubs = pubs
	f.mu.Unlock()
	f.members = newZoneMemberships(sp, a.opts.ASN, a.log)
	return saved, nil
}

// stopFlush bounds the wait for device set records still to go out when
// the agent stops.
const stopFlush = 2 * time.Second

func (f *bgpFabric) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), stopFlush)
	f.pubs.close(ctx)
	cancel()
	f.speaker.Stop()
	if f.bfd != nil {
		f.bfdCancel()
		f.bfd.Close()
	}
}

// join starts the configuration hold, republishes the saved records,
// subscribes to the configuration, applies what the restore decided,
// watches the speaker's records and sessions (until the agent stops) and
// adds the reflectors.
func (f *bgpFabric) join(ctx context.Context, saved savedState, restored Output, closed bool) error {
	a := f.a
	f.pubs.setFormat(cmp.Or(saved.Format, record.FormatDevices))
	a.startConfigHold(closed, f.pollEndOfRIB)
	f.pubs.republish(ctx, saved.ownRecords(a.self, a.log))
	// Tell the reflectors what this switch reads (docs/records.md, rolling
	// upgrade).
	if err := f.speaker.Publish(ctx, &record.Switch{Switch: a.self, Reads: record.SwitchReadsDeviceSets}, record.SwitchInfoRT); err != nil {
		return fmt.Errorf("switchagent: announcing what the switch reads: %w", err)
	}
	if err := f.speaker.Subscribe(ctx, record.ConfigRT(a.opts.ASN)); err != nil {
		return fmt.Errorf("switchagent: subscribe to configuration: %w", err)
	}
	if a.disc != nil {
		// The other switches' discovery controllers, for referrals.
		if err := f.speaker.Subscribe(ctx, record.DiscoveryRT); err != nil {
			return fmt.Errorf("switchagent: subscribe to discovery controllers: %w", err)
		}
	}
	a.apply(ctx, restored)
	runCtx := a.tasks.ctx
	if err := f.speaker.WatchRecords(runCtx, func(ev bgp.RecordEvent) {
		select {
		case f.recs <- ev:
		case <-runCtx.Done():
		}
	}); err != nil {
		return fmt.Errorf("switchagent: watch records: %w", err)
	}
	if err := f.speaker.WatchNeighbors(runCtx, func(ev bgp.NeighborEvent) { f.onNeighbor(runCtx, ev) }); err != nil {
		return fmt.Errorf("switchagent: watch neighbors: %w", err)
	}
	return f.addReflectors(ctx)
}

// onNeighbor (the neighbor watch) logs a session change and hands the loop
// each session that comes up and the loss of the last one, in order.
func (f *bgpFabric) onNeighbor(ctx context.Context, ev bgp.NeighborEvent) {
	f.sessionLog.BGP(ev)
	had := len(f.upReflectors) > 0
	var out fabricEvent
	if ev.State == bgp.StateEstablished {
		f.upReflectors[ev.Address] = true
		out = fabricEvent{kind: sessionUp, addr: ev.Address}
	} else {
		delete(f.upReflectors, ev.Address)
		if !had || len(f.upReflectors) > 0 {
			return
		}
		out = fabricEvent{kind: allLost}
	}
	select {
	case f.ev <- out:
	case <-ctx.Done():
	}
}

func (f *bgpFabric) addReflectors(ctx context.Context) error {
	o := f.a.opts
	local := netip.Addr{}
	if o.LocalAddress != "" {
		local = netip.MustParseAddr(o.LocalAddress)
	}
	for _, r := range o.Reflectors {
		n := bgp.Neighbor{Address: netip.MustParseAddr(r.Address), Port: r.Port, LocalAddress: local,
			Password: o.Password, TTLSecurity: o.TTLSecurity}
		n.BFD = o.BFD.Neighbor()
		if err := f.speaker.AddNeighbor(ctx, n); err != nil {
			return fmt.Errorf("switchagent: reflector %s: %w", r.Address, err)
		}
	}
	return nil
}

// run watches the speaker (its end ends the agent) and announces the
// discovery controller.
func (f *bgpFabric) run() {
	t := f.a.tasks
	t.spawn("speaker", func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-f.speaker.Done():
			return fmt.Errorf("speaker stopped: %w", f.speaker.Err())
		}
	})
	if d := f.a.disc; d != nil {
		t.spawn("discovery announcement", func(ctx context.Context) error {
			return d.advertise(ctx, f.speaker, f.a.ports.names)
		})
	}
}

// healthy reports whether the speaker runs.
func (f *bgpFabric) healthy() error {
	f.mu.Lock()
	sp := f.speaker
	f.mu.Unlock()
	if sp == nil {
		return errors.New("BGP speaker not started")
	}
	select {
	case <-sp.Done():
		return fmt.Errorf("BGP speaker stopped: %v", sp.Err())
	default:
	}
	return nil
}

func (f *bgpFabric) records() <-chan bgp.RecordEvent { return f.recs }
func (f *bgpFabric) events() <-chan fabricEvent      { return f.ev }

// handle (loop) takes a session event.
func (f *bgpFabric) handle(_ context.Context, ev fabricEvent) {
	a, now := f.a, time.Now()
	switch ev.kind {
	case sessionUp:
		a.sessionUp(now)
	case allLost:
		a.holdWhileAway(f.pollEndOfRIB)
	case endOfRIB:
		a.log.Info("reflector sent End-of-RIB; zone configuration held a little longer", "reflector", ev.addr,
			"quiet", configQuiet.String())
		a.zoning.hold.endOfRIB(now)
	}
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
func (f *bgpFabric) onRecords(ctx context.Context, ev bgp.RecordEvent) {
	a := f.a
	batch := append(f.batch[:0], ev)
	for n := len(f.recs); n > 0; n-- {
		batch = append(batch, <-f.recs)
	}
	for _, ev := range batch {
		if !isDeviceEvent(ev) {
			f.onRecord(ctx, ev)
		}
	}
	if a.zoning.ready() {
		a.applyConfig(ctx)
	}
	a.notices.hold()
	for _, ev := range batch {
		if isDeviceEvent(ev) {
			f.onRecord(ctx, ev)
		}
	}
	a.notices.sendHeld()
	clear(batch) // drop the records they point to
	f.batch = batch[:0]
}

func (f *bgpFabric) onRecord(ctx context.Context, ev bgp.RecordEvent) {
	a := f.a
	if reason := f.origins.Check(ev); reason != "" {
		// What the tables hold for the key stays: the reflector withdraws
		// the refused record when it quarantines its sender.
		f.refused.Refuse(reason, ev)
		return
	}
	if isDeviceEvent(ev) {
		f.members.carried.apply(ev)
		f.changes = a.table.Apply(f.changes[:0], ev)
		if len(f.changes) > 0 && a.zoning.ready() {
			a.applyConfig(ctx)
		}
		for _, ch := range f.changes {
			if ch.ID.Switch == a.self {
				// This switch's own record, back from the speaker's table:
				// the engine judged it when it decided it (Engine.applyLocal).
				// Judged again it would be at best nothing and at worst
				// an older copy taking the place of the newer one.
				continue
			}
			if ch.Record != nil {
				a.apply(ctx, a.engine.Record(ch.Record.Report))
			} else {
				a.apply(ctx, a.engine.Gone(ch.ID.Switch, ch.ID.Addr))
			}
			a.disc.touch(a.engine, ch.ID.Addr)
		}
		clear(f.changes) // drop the records they point to
		return
	}
	if isDiscoveryEvent(ev) {
		a.disc.onRecord(ev)
		return
	}
	newest, ok, changed := f.view.Apply(ev)
	if !ok || !changed {
		return
	}
	switch configsync.KindOf(newest).Owner() {
	case configsync.OwnerZoneStore:
		f.onZoneRecord(newest)
	case configsync.OwnerLossless:
		f.onProfile(newest)
	case configsync.OwnerRecordFormat:
		if f.pubs.onRecordFormat(ctx, newest, a.met.badConfig) {
			a.save.dirty = true
		}
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
func (f *bgpFabric) onZoneRecord(c record.Config) {
	a := f.a
	rec, complete, err := f.asm.Add(c)
	switch {
	case err != nil:
		a.met.badConfig.Inc()
		a.log.Warn("configuration record refused", "err", err)
	case complete && a.zoning.recs.Apply(rec):
		a.zoning.due = true
		if a.zoning.hold.on {
			// Logged as changed when the hold ends: tests and operators read
			// "changed" as in force.
			a.log.Info("zone configuration held", "object", rec.Key.String())
			a.zoning.hold.record(time.Now(), rec.Key.String())
			return
		}
		a.log.Info("zone configuration changed", "object", rec.Key.String())
	}
}

// onProfile takes the newest version of the fabric's lossless profile.
func (f *bgpFabric) onProfile(c record.Config) {
	p, err := lossless.Decode(c.Payload)
	if err != nil {
		f.a.met.badConfig.Inc()
		f.a.log.Warn("lossless profile refused", "err", err)
		return
	}
	f.a.profile.Store(&p)
	f.a.log.Info("lossless profile received", "generation", c.Gen)
	f.a.followProfile(p)
}

// nextTick is when a membership no longer wanted is due to go.
func (f *bgpFabric) nextTick() (time.Time, bool) { return f.members.subs.next() }

// tick withdraws the memberships whose linger ended by now.
func (f *bgpFabric) tick(ctx context.Context, now time.Time) {
	f.members.unsubscribeDue(ctx, now, f.a.engine.Used)
}

// publish hands out's records to the publisher of the format in force;
// one engine step's changes (a port's devices gone down together) go out
// together, none behind another's set interval.
func (f *bgpFabric) publish(ctx context.Context, out Output) {
	f.pubs.publish(ctx, out)
}

func (f *bgpFabric) subscribe(ctx context.Context, ms []string) { f.members.subscribe(ctx, ms) }

func (f *bgpFabric) published() []table.PublishedDevice { return f.pubs.published() }

func (f *bgpFabric) recordFormat() record.Format {
	f.mu.Lock()
	pubs := f.pubs
	f.mu.Unlock()
	if pubs == nil {
		return record.FormatDevices
	}
	return pubs.shownFormat()
}

// reconfigure gives the reflector sessions next's BFD timers.
func (f *bgpFabric) reconfigure(next Options) error {
	if f.bfd == nil || !next.BFD.Enabled || next.LocalAddress == "" {
		return nil
	}
	local := netip.MustParseAddr(next.LocalAddress)
	nb := next.BFD.Neighbor()
	t := bfd.Timers{DesiredMinTx: nb.DesiredMinTx, RequiredMinRx: nb.RequiredMinRx, DetectMult: nb.DetectMult}
	var errs []error
	for _, r := range f.a.opts.Reflectors {
		k := bfd.SessionKey{Local: local, Peer: netip.MustParseAddr(r.Address)}
		if _, ok := f.bfd.Session(k); !ok {
			continue
		}
		if err := f.bfd.SetTimers(k, t); err != nil {
			errs = append(errs, fmt.Errorf("switchagent: BFD %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// errSpeakerNotRunning answers for the sessions before the speaker started.
var errSpeakerNotRunning = errors.New("switch agent not running")

func (f *bgpFabric) backend(view switchBackend) api.Backend { return view }

// neighbors returns the sessions to the reflectors.
func (f *bgpFabric) neighbors(ctx context.Context) ([]bgp.NeighborStatus, error) {
	sp := f.running()
	if sp == nil {
		return nil, errSpeakerNotRunning
	}
	return sp.Neighbors(ctx)
}

// running is the speaker once started, nil before.
func (f *bgpFabric) running() bgp.Speaker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.speaker
}

func (f *bgpFabric) bfdManager() *bfd.Manager {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bfd
}

func (f *bgpFabric) speakerStats() bgp.Stats {
	if sp := f.running(); sp != nil {
		return sp.Stats()
	}
	return bgp.Stats{}
}

func (f *bgpFabric) setStats() table.SetPublisherStats {
	f.mu.Lock()
	pubs := f.pubs
	f.mu.Unlock()
	if pubs == nil {
		return table.SetPublisherStats{}
	}
	return pubs.sets.Stats()
}

func (f *bgpFabric) refusals() map[string]uint64 { return f.refused.Counts() }

// pollEndOfRIB hands the loop, once, a reflector whose session is
// established and that has sent End-of-RIB for the opaque family; it asks
// the speaker every eorPoll until then or until ctx ends.
func (f *bgpFabric) pollEndOfRIB(ctx context.Context) error {
	t := time.NewTicker(eorPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		ns, err := f.speaker.Neighbors(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			f.a.log.Warn("asking for the reflectors' End-of-RIB", "err", err)
			continue
		}
		for _, n := range ns {
			if n.State == bgp.StateEstablished && n.EndOfRIB {
				select {
				case f.ev <- fabricEvent{kind: endOfRIB, addr: n.Address}:
				case <-ctx.Done():
				}
				return nil
			}
		}
	}
}
