package reflector

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/zoneadmin"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// run is the start-up state of one Run: what its start steps set up and
// its stop tears down. Run builds it and alone writes it; once started,
// the admin API reads it through Reflector.started, and the fields are
// read-only until the stop.
type run struct {
	r *Reflector // the options and the collaborators New built

	restarting bool
	prevState  string
	seeded     int // configuration parts originated at start
	routerID   inof.RouterID
	admin      *zoneadmin.Admin // the store and its commits
	store      *zones.Store     // admin's store
	speaker    bgp.Speaker
	bfd        *bfd.Manager
	bfdCancel  func()
	repl       *table.ConfigReplicator
	sync       *syncLoop
	cancel     context.CancelFunc // ends the loops and the watches
	trustDone  chan struct{}      // closed when the quarantine loop ends
}

func newRun(r *Reflector) *run {
	rn := &run{r: r, trustDone: make(chan struct{})}
	rn.sync = newSyncLoop(rn)
	return rn
}

// undoStack holds what the start steps done so far must undo on failure.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// start runs the start steps in order; one that fails undoes the ones
// before it.
func (rn *run) start(ctx context.Context) (err error) {
	var undo undoStack
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	for _, step := range []func(context.Context, *undoStack) error{
		rn.openStore, rn.markRunning, rn.startSpeaker, rn.originateStored, rn.addNeighbors, rn.startSync,
	} {
		if err := step(ctx, &undo); err != nil {
			return err
		}
	}
	return nil
}

// openStore opens the zone store and loads the persisted settings. Its
// file lock keeps a second reflector off this state directory before it
// can touch the marker.
func (rn *run) openStore(_ context.Context, undo *undoStack) error {
	r := rn.r
	o := &r.opts
	rn.routerID = inof.MustParseRouterID(o.RouterID)
	admin, err := zoneadmin.Open(zoneadmin.Options{Path: o.StorePath(), RouterID: rn.routerID, HistorySize: o.HistorySize,
		Now: r.now, Logger: r.log, Hand: rn.sync.originate, Observe: r.m.observeCommit})
	if err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	rn.admin, rn.store = admin, admin.Store()
	undo.push(func() { rn.admin.Close() })
	return r.settings.load()
}

// markRunning reads the restart marker and sets it to "running". A
// marker of any kind means a previous run: this run is a graceful restart
// (a clean stop too: with RFC 8538 the switches keep its routes stale, and
// a switch's peers settle withdraws only from a speaker that says it
// restarted, settlingSince in bgp/gobgp_restart.go). A marker that cannot be read counts
// as a crash.
func (rn *run) markRunning(_ context.Context, undo *undoStack) error {
	r := rn.r
	path := r.opts.StatePath()
	prev, err := readMarker(path)
	if err != nil {
		r.log.Warn("unreadable restart marker; assuming a crash", "err", err)
		prev = stateRunning
	}
	rn.prevState = prev
	rn.restarting = prev != ""
	if err := writeMarker(path, stateRunning, r.now()); err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	undo.push(func() {
		// As it was: a first start that failed leaves no marker (the next
		// one is a first start too), another the one it found.
		var err error
		if prev == "" {
			err = os.Remove(path)
		} else {
			err = writeMarker(path, prev, r.now())
		}
		if err != nil {
			r.log.Error("restoring the restart marker", "err", err)
		}
	})
	return nil
}

// startSpeaker starts BFD (when a neighbor uses it), the speaker and the
// configuration replicator on it.
func (rn *run) startSpeaker(ctx context.Context, undo *undoStack) error {
	r := rn.r
	o := &r.opts
	so := o.speakerOptions(rn.restarting)
	so.Logger = r.log
	if o.usesBFD() {
		rn.bfd = bfd.NewManager(bfd.ManagerOptions{Logger: r.log, RealTime: true})
		so.BFD = rn.bfd
		undo.push(rn.bfd.Close)
	}
	sp, err := r.cfg.NewSpeaker(so)
	if err != nil {
		return fmt.Errorf("reflector: speaker: %w", err)
	}
	rn.speaker = sp
	if err := rn.speaker.Start(ctx); err != nil {
		return fmt.Errorf("reflector: speaker: %w", err)
	}
	undo.push(rn.speaker.Stop)
	rn.repl, err = table.NewConfigReplicator(table.ReplicatorOptions{Speaker: rn.speaker, RouterID: rn.routerID,
		RT: record.ConfigRT(o.ASN), OnAdopt: rn.sync.onAdopt, Now: r.now, Logger: r.log})
	if err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	return nil
}

// originateStored originates the stored configuration and the settings
// before any neighbor connects, so that every session starts with all of
// it.
func (rn *run) originateStored(ctx context.Context, _ *undoStack) error {
	for _, rec := range rn.store.Records() {
		parts, err := configsync.Records(rec)
		if err != nil {
			return fmt.Errorf("reflector: stored %s: %w", rec.Key, err)
		}
		for _, p := range parts {
			if _, err := rn.repl.Put(ctx, p); err != nil {
				return fmt.Errorf("reflector: originating stored %s: %w", rec.Key, err)
			}
			rn.seeded++
		}
	}
	n, err := rn.sync.reconcileJournal(ctx)
	rn.seeded += n
	if err != nil {
		return err
	}
	for _, s := range rn.r.settings.records() {
		if _, err := rn.repl.Put(ctx, s.rec); err != nil {
			return fmt.Errorf("reflector: originating the %s: %w", s.what, err)
		}
		rn.seeded++
	}
	return nil
}

// addNeighbors adds the peer reflectors and the clients.
func (rn *run) addNeighbors(ctx context.Context, _ *undoStack) error {
	for _, n := range rn.r.opts.neighbors() {
		if err := rn.speaker.AddNeighbor(ctx, n); err != nil {
			return fmt.Errorf("reflector: %w", err)
		}
	}
	return nil
}

// startSync starts the sync loop, the quarantine loop, the replication
// and the watches that feed the fabric view.
func (rn *run) startSync(_ context.Context, undo *undoStack) error {
	r := rn.r
	lctx, cancel := context.WithCancel(context.Background())
	rn.cancel = cancel
	go rn.sync.loop(lctx)
	go func() { defer close(rn.trustDone); r.trust.loop(lctx, rn.speaker) }()
	undo.push(rn.stopLoops)
	if err := rn.repl.Run(lctx); err != nil {
		return fmt.Errorf("reflector: replication: %w", err)
	}
	// The best table feeds the fabric view; what a client does not own
	// is counted by the Adj-RIB-In watch and withdrawn once its sender
	// is quarantined.
	r.fabric.pins = rn.store.Pins
	if err := rn.speaker.WatchRecords(lctx, func(ev bgp.RecordEvent) {
		if r.trust.owned(ev) {
			r.fabric.onRecord(ev)
		}
	}); err != nil {
		return fmt.Errorf("reflector: watching records: %w", err)
	}
	if err := rn.speaker.WatchReceived(lctx, func(ev bgp.RecordEvent) {
		if r.trust.check(ev) {
			r.settings.noteSwitch(ev)
		}
	}, record.TypeDevice, record.TypeConfig, record.TypeDeviceSet, record.TypeSwitch, record.TypeDiscovery); err != nil {
		return fmt.Errorf("reflector: watching what neighbors send: %w", err)
	}
	if err := rn.speaker.WatchNeighbors(lctx, r.fabric.onNeighbor); err != nil {
		return fmt.Errorf("reflector: watching sessions: %w", err)
	}
	if rn.bfd != nil {
		rn.bfdCancel = rn.bfd.Subscribe().Each(r.fabric.onBFD)
	}
	return nil
}

// stopLoops ends the sync and quarantine loops and the watches and waits
// for the loops.
func (rn *run) stopLoops() {
	rn.cancel()
	<-rn.sync.done
	<-rn.trustDone
}

// stopSpeaker stops the speaker (peers see a Cease) and BFD of a run
// whose loops ended.
func (rn *run) stopSpeaker() {
	rn.speaker.Stop()
	if rn.bfd != nil {
		rn.bfdCancel()
		rn.bfd.Close()
	}
}

// close closes the store of a stopped run and, if the speaker had not
// failed, marks the stop clean.
func (rn *run) close() error {
	var errs []error
	if err := rn.speaker.Err(); err != nil {
		errs = append(errs, fmt.Errorf("reflector: speaker failed: %w", err))
	}
	if err := rn.admin.Close(); err != nil {
		errs = append(errs, fmt.Errorf("reflector: close store: %w", err))
	}
	if len(errs) == 0 {
		if err := writeMarker(rn.r.opts.StatePath(), stateClean, rn.r.now()); err != nil {
			errs = append(errs, fmt.Errorf("reflector: %w", err))
		}
	}
	return errors.Join(errs...)
}

// healthy reports whether the speaker and the sync loop still run.
func (rn *run) healthy() error {
	select {
	case <-rn.speaker.Done():
		if err := rn.speaker.Err(); err != nil {
			return fmt.Errorf("BGP speaker stopped: %w", err)
		}
		return errors.New("BGP speaker stopped")
	case <-rn.sync.done:
		return errors.New("reflector stopped")
	default:
		return nil
	}
}
