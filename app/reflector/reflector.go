package reflector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/app/zoneadmin"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// ErrNotRunning is returned by the admin API before Run has started the
// reflector and after it stopped.
var ErrNotRunning = errors.New("reflector: not running")

// Config wires a Reflector. Only Options is required.
type Config struct {
	Options Options
	// NewSpeaker builds the BGP speaker from the options the reflector
	// derives (nil: bgp.NewGoBGP). Tests pass a bgp.FakeFabric's.
	NewSpeaker func(bgp.Options) (bgp.Speaker, error)
	// Registry receives the reflector's metrics (nil: none).
	Registry prometheus.Registerer
	// Now is the wall clock of the store and the replicator (nil: time.Now).
	Now func() time.Time
	// Events receives the fabric events (device records, session changes,
	// configuration merged from peer reflectors): the API's feed. Nil
	// discards them.
	Events EventPublisher
	Logger *slog.Logger
}

// Reflector is one route reflector of the fabric and its zone authority:
// it reflects the switch agents' records, keeps the zone configuration in a
// bbolt store, originates it as configuration records, adopts and persists
// newer versions from the other reflectors, and detects its own restarts
// for graceful restart.
//
// Goroutines (docs/design.md §8): one sync loop owns the replication decisions
// (the part assembler, what this reflector originates and withdraws); the
// replicator's watch hands it adopted parts over a bounded channel, and
// Commit hands it the keys a transaction changed, SetLosslessProfile the
// new profile. The speaker's record and neighbor watches and the BFD
// subscription each own their part of the fabric view the admin API reads
// (devices, session times) and publish its changes as events. The store
// and the replicator lock for themselves; no callback runs under a lock of
// ours.
type Reflector struct {
	opts Options
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	m    counters

	// life guards the state and the store's lifetime against the admin
	// API: readers hold it shared while they use the store.
	life  sync.RWMutex
	state lifeState
	ready chan struct{} // closed once started

	// Set by the start steps, read-only afterwards.
	restarting  bool
	prevState   string
	seeded      int // configuration parts originated at start
	routerID    inof.RouterID
	admin       *zoneadmin.Admin // the store and its commits
	store       *zones.Store     // admin's store
	speaker     bgp.Speaker
	bfd         *bfd.Manager
	bfdCancel   func()
	repl        *table.ConfigReplicator
	cancel      context.CancelFunc
	adopted     chan record.Config
	requests    chan reconcileRequest
	profileReqs chan profileRequest
	formatReqs  chan formatRequest
	loopDone    chan struct{}

	// Set by New, read-only afterwards.
	events         EventPublisher
	fabric         *fabricView
	clock          *inof.Clock // generations of the lossless profile
	peerReflectors map[netip.Addr]bool
	// sessionLog logs BGP changes (from the neighbor watch) and BFD
	// changes (from the BFD subscription).
	sessionLog *peering.SessionLog

	// Owned by the sync loop.
	asm      *configsync.Assembler
	jasm     *configsync.JournalAssembler
	reported map[zones.Version]bool // lost writes already reported (reportConflicts)

	// Who sent what (trust.go): the checks, the refusal counters, and the
	// quarantine loop fed by the Adj-RIB-In watch.
	origins        table.Origins
	refusals       *table.Refusals
	offences       chan offence
	quarantineDone chan struct{}
	quarantined    atomic.Int64 // clients in quarantine (metrics)

	// The lossless profile in effect: written by the sync loop (and the
	// start steps).
	profileMu sync.RWMutex
	profile   profileState

	// The record format in effect, written by the sync loop (and the
	// start steps); what each switch announced it reads, written by the
	// Adj-RIB-In watch (recordformat.go).
	formatMu    sync.RWMutex
	format      formatState
	switchesMu  sync.Mutex
	switchReads map[inof.RouterID]uint32
}

type lifeState uint8

const (
	stateNew lifeState = iota
	stateStarted
	stateStopped
)

// adoptQueue bounds the adopted parts waiting for the sync loop; a full
// queue makes the replicator's watch wait (its own queue then resyncs,
// losing nothing: each adopted part is handed over exactly once).
const adoptQueue = 1024

// New validates the options; call Run.
func New(cfg Config) (*Reflector, error) {
	if err := cfg.Options.Validate(); err != nil {
		return nil, fmt.Errorf("reflector: invalid options: %w", err)
	}
	if cfg.NewSpeaker == nil {
		cfg.NewSpeaker = func(o bgp.Options) (bgp.Speaker, error) { return bgp.NewGoBGP(o) }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Events == nil {
		cfg.Events = discardEvents{}
	}
	r := &Reflector{opts: cfg.Options, cfg: cfg, log: cfg.Logger, now: cfg.Now, asm: configsync.NewAssembler(0), jasm: configsync.NewJournalAssembler(0),
		events: cfg.Events, fabric: newFabricView(cfg.Options.MaxDevices, cfg.Logger), clock: inof.NewClock(cfg.Now),
		peerReflectors: map[netip.Addr]bool{}, ready: make(chan struct{}), m: newCounters(),
		refusals: table.NewRefusals(cfg.Logger), offences: make(chan offence, offenceQueue)}
	r.sessionLog = &peering.SessionLog{Log: r.log, Kind: r.neighborKind}
	for _, n := range cfg.Options.neighbors() {
		if n.PeerReflector {
			r.peerReflectors[n.Address] = true
		}
	}
	r.origins = table.Origins{Role: bgp.RoleReflector, ASN: cfg.Options.ASN,
		PeerReflector: func(a netip.Addr) bool { return r.peerReflectors[a] }}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(newCollector(r)); err != nil {
			return nil, fmt.Errorf("reflector: metrics: %w", err)
		}
	}
	return r, nil
}

// Run runs the reflector until ctx ends or its speaker fails. It starts in
// steps (openStore, markRunning, startSpeaker, originateStored,
// addNeighbors, startSync) and, when it ends, stops in the reverse order:
// the sync loop, the speaker (peers see a Cease), BFD, the store; then the
// marker says "clean". If the speaker failed on its own, the marker stays
// "running" (the next start restarts gracefully) and Run returns the
// speaker's error. A step that fails undoes the ones before it. A
// Reflector runs once.
func (r *Reflector) Run(ctx context.Context) error {
	if err := r.start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-r.loopDone: // the speaker failed
	}
	return r.stop()
}

// Ready is closed once Run has started the reflector: the store is open,
// the stored configuration originated, the neighbors added. The admin API
// answers ErrNotRunning before.
func (r *Reflector) Ready() <-chan struct{} { return r.ready }

// undoStack holds what the start steps done so far must undo on failure.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// start runs the start steps under the life lock; ctx bounds them.
func (r *Reflector) start(ctx context.Context) (err error) {
	r.life.Lock()
	defer r.life.Unlock()
	if r.state != stateNew {
		return errors.New("reflector: already run (a Reflector runs once)")
	}
	r.state = stateStopped // unless every step succeeds
	var undo undoStack
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	for _, step := range []func(context.Context, *undoStack) error{
		r.openStore, r.markRunning, r.startSpeaker, r.originateStored, r.addNeighbors, r.startSync,
	} {
		if err := step(ctx, &undo); err != nil {
			return err
		}
	}
	r.state = stateStarted
	close(r.ready)
	o := &r.opts
	r.log.Info("reflector started", "router_id", o.RouterID, "asn", o.ASN, "restarting", r.restarting,
		"previous_run", r.prevState, "records", len(r.store.Records()), "parts_originated", r.seeded,
		"clients", len(o.Clients), "reflectors", len(o.Reflectors))
	return nil
}

// openStore opens the zone store. Its file lock keeps a second reflector
// off this state directory before it can touch the marker.
func (r *Reflector) openStore(_ context.Context, undo *undoStack) error {
	o := &r.opts
	r.routerID = inof.MustParseRouterID(o.RouterID)
	admin, err := zoneadmin.Open(zoneadmin.Options{Path: o.StorePath(), RouterID: r.routerID, HistorySize: o.HistorySize,
		Now: r.now, Logger: r.log, Hand: r.originate, Observe: r.observeCommit})
	if err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	r.admin, r.store = admin, admin.Store()
	undo.push(func() { r.admin.Close() })
	if err := r.loadProfile(); err != nil {
		return err
	}
	return r.loadFormat()
}

// markRunning reads the restart marker and sets it to "running". A
// marker of any kind means a previous run: this run is a graceful restart
// (a clean stop too: with RFC 8538 the switches keep its routes stale, and
// a switch's peers settle withdraws only from a speaker that says it
// restarted, bgp.GoBGP.settlingSince). A marker that cannot be read counts
// as a crash.
func (r *Reflector) markRunning(_ context.Context, undo *undoStack) error {
	o := &r.opts
	prev, err := readMarker(o.StatePath())
	if err != nil {
		r.log.Warn("unreadable restart marker; assuming a crash", "err", err)
		prev = stateRunning
	}
	r.prevState = prev
	r.restarting = r.prevState != ""
	if err := writeMarker(o.StatePath(), stateRunning, r.now()); err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	undo.push(func() {
		// As it was: a first start that failed leaves no marker (the next
		// one is a first start too), another the one it found.
		var err error
		if r.prevState == "" {
			err = os.Remove(o.StatePath())
		} else {
			err = writeMarker(o.StatePath(), r.prevState, r.now())
		}
		if err != nil {
			r.log.Error("restoring the restart marker", "err", err)
		}
	})
	return nil
}

// startSpeaker starts BFD (when a neighbor uses it), the speaker and the
// configuration replicator on it.
func (r *Reflector) startSpeaker(ctx context.Context, undo *undoStack) error {
	o := &r.opts
	so := o.speakerOptions(r.restarting)
	so.Logger = r.log
	if o.usesBFD() {
		r.bfd = bfd.NewManager(bfd.ManagerOptions{Logger: r.log, RealTime: true})
		so.BFD = r.bfd
		undo.push(r.bfd.Close)
	}
	sp, err := r.cfg.NewSpeaker(so)
	if err != nil {
		return fmt.Errorf("reflector: speaker: %w", err)
	}
	r.speaker = sp
	if err := r.speaker.Start(ctx); err != nil {
		return fmt.Errorf("reflector: speaker: %w", err)
	}
	undo.push(r.speaker.Stop)
	r.repl, err = table.NewConfigReplicator(table.ReplicatorOptions{Speaker: r.speaker, RouterID: r.routerID,
		RT: record.ConfigRT(o.ASN), OnAdopt: r.onAdopt, Now: r.now, Logger: r.log})
	if err != nil {
		return fmt.Errorf("reflector: %w", err)
	}
	return nil
}

// originateStored originates the stored configuration and the lossless
// profile before any neighbor connects, so that every session starts with
// all of it.
func (r *Reflector) originateStored(ctx context.Context, _ *undoStack) error {
	for _, rec := range r.store.Records() {
		parts, err := configsync.Records(rec)
		if err != nil {
			return fmt.Errorf("reflector: stored %s: %w", rec.Key, err)
		}
		for _, p := range parts {
			if _, err := r.repl.Put(ctx, p); err != nil {
				return fmt.Errorf("reflector: originating stored %s: %w", rec.Key, err)
			}
			r.seeded++
		}
	}
	n, err := r.reconcileJournal(ctx)
	r.seeded += n
	if err != nil {
		return err
	}
	if r.profile.rec.Gen != 0 {
		if _, err := r.repl.Put(ctx, r.profile.rec); err != nil {
			return fmt.Errorf("reflector: originating the lossless profile: %w", err)
		}
		r.seeded++
	}
	if r.format.rec.Gen != 0 {
		if _, err := r.repl.Put(ctx, r.format.rec); err != nil {
			return fmt.Errorf("reflector: originating the record format: %w", err)
		}
		r.seeded++
	}
	return nil
}

// addNeighbors adds the peer reflectors and the clients.
func (r *Reflector) addNeighbors(ctx context.Context, _ *undoStack) error {
	for _, n := range r.opts.neighbors() {
		if err := r.speaker.AddNeighbor(ctx, n); err != nil {
			return fmt.Errorf("reflector: %w", err)
		}
	}
	return nil
}

// startSync starts the sync loop, the replication and the watches that
// feed the fabric view.
func (r *Reflector) startSync(_ context.Context, undo *undoStack) error {
	lctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.adopted = make(chan record.Config, adoptQueue)
	r.requests = make(chan reconcileRequest)
	r.profileReqs = make(chan profileRequest)
	r.formatReqs = make(chan formatRequest)
	r.loopDone = make(chan struct{})
	r.quarantineDone = make(chan struct{})
	go r.loop(lctx)
	go r.quarantineLoop(lctx)
	undo.push(func() { cancel(); <-r.loopDone; <-r.quarantineDone })
	if err := r.repl.Run(lctx); err != nil {
		return fmt.Errorf("reflector: replication: %w", err)
	}
	if err := r.speaker.WatchRecords(lctx, r.onRecord); err != nil {
		return fmt.Errorf("reflector: watching records: %w", err)
	}
	if err := r.speaker.WatchReceived(lctx, r.onReceived, record.TypeDevice, record.TypeConfig, record.TypeDeviceSet, record.TypeSwitch, record.TypeDiscovery); err != nil {
		return fmt.Errorf("reflector: watching what neighbors send: %w", err)
	}
	if err := r.speaker.WatchNeighbors(lctx, r.onNeighbor); err != nil {
		return fmt.Errorf("reflector: watching sessions: %w", err)
	}
	if r.bfd != nil {
		r.bfdCancel = r.bfd.Subscribe().Each(r.onBFD)
	}
	return nil
}

// stop shuts a started reflector down (see Run).
func (r *Reflector) stop() error {
	// The loop ends first, so that Commit calls waiting for it return and
	// release their shared lock.
	r.cancel()
	<-r.loopDone
	<-r.quarantineDone
	r.speaker.Stop()
	if r.bfd != nil {
		r.bfdCancel()
		r.bfd.Close()
	}
	r.life.Lock()
	defer r.life.Unlock()
	var errs []error
	if err := r.speaker.Err(); err != nil {
		errs = append(errs, fmt.Errorf("reflector: speaker failed: %w", err))
	}
	if err := r.admin.Close(); err != nil {
		errs = append(errs, fmt.Errorf("reflector: close store: %w", err))
	}
	if len(errs) == 0 {
		if err := writeMarker(r.opts.StatePath(), stateClean, r.now()); err != nil {
			errs = append(errs, fmt.Errorf("reflector: %w", err))
		}
	}
	r.state = stateStopped
	err := errors.Join(errs...)
	r.log.Info("reflector stopped", "clean", len(errs) == 0)
	return err
}

// Healthy returns nil while the reflector runs and its speaker is alive
// (for /healthz).
func (r *Reflector) Healthy() error {
	release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	return r.speakerHealthy()
}

// started holds the reflector's life shared while Run has it started, for
// a caller that uses what the start steps set up (the store, the speaker,
// BFD, the sync loop); release ends the hold. Before the start and after
// the stop it holds nothing and returns ErrNotRunning. It is the one check
// of the start-up state, which only Run changes (start, stop).
func (r *Reflector) started() (release func(), err error) {
	r.life.RLock()
	if r.state != stateStarted {
		r.life.RUnlock()
		return nil, ErrNotRunning
	}
	return r.life.RUnlock, nil
}

// speakerHealthy reports whether the speaker and the sync loop still run
// (the caller holds started).
func (r *Reflector) speakerHealthy() error {
	select {
	case <-r.speaker.Done():
		if err := r.speaker.Err(); err != nil {
			return fmt.Errorf("BGP speaker stopped: %w", err)
		}
		return errors.New("BGP speaker stopped")
	case <-r.loopDone:
		return errors.New("reflector stopped")
	default:
		return nil
	}
}

// Restarting reports whether this run started as a graceful restart (the
// previous run did not stop cleanly).
func (r *Reflector) Restarting() bool {
	r.life.RLock()
	defer r.life.RUnlock()
	return r.restarting
}
