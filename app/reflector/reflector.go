package reflector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
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
// It delegates to named collaborators, each with one job:
//   - run (run.go): what Run's start steps set up (the store, the restart
//     marker, the speaker, BFD, the replicator) and its stop tears down;
//     only Run writes it, the admin API reaches it through started.
//   - syncLoop (sync.go): one goroutine that owns the replication
//     decisions (the part assemblers, what this reflector originates and
//     withdraws); the replicator's watch hands it adopted parts over a
//     bounded channel, Commit the keys a transaction changed,
//     SetLosslessProfile and SetRecordFormat the new settings.
//   - settings (settings.go): the lossless profile and the record format
//     in effect, persisted in the state directory, and what each switch
//     announced it reads; the sync loop writes, the admin API reads.
//   - quarantine (trust.go): who sent what, the refusals, and the
//     quarantine loop fed by the Adj-RIB-In watch.
//   - fabricView (backend.go): the devices and session times the
//     speaker's record and neighbor watches and the BFD subscription
//     write and the admin API reads, each change published as an event.
//
// Goroutines (docs/design.md §8): the sync loop, the quarantine loop, the
// speaker's watches and the BFD subscription. The store and the
// replicator lock for themselves; no callback runs under a lock of ours.
type Reflector struct {
	opts   Options
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	m      *counters
	events EventPublisher

	fabric   *fabricView
	settings *settings
	trust    *quarantine

	// life guards the state and the run against the admin API: readers
	// hold it shared while they use what the run set up.
	life  sync.RWMutex
	state lifeState
	run   *run          // set by Run's start; nil before
	ready chan struct{} // closed once started
}

type lifeState uint8

const (
	stateNew lifeState = iota
	stateStarted
	stateStopped
)

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
	o := &cfg.Options
	peerReflectors := map[netip.Addr]bool{}
	for _, n := range o.neighbors() {
		if n.PeerReflector {
			peerReflectors[n.Address] = true
		}
	}
	r := &Reflector{opts: cfg.Options, cfg: cfg, log: cfg.Logger, now: cfg.Now, m: newCounters(), events: cfg.Events,
		fabric:   newFabricView(cfg.Options.MaxDevices, peerReflectors, cfg.Events, cfg.Now, cfg.Logger),
		settings: newSettings(o, inof.NewClock(cfg.Now)),
		ready:    make(chan struct{})}
	r.trust = newQuarantine(table.Origins{Role: bgp.RoleReflector, ASN: o.ASN,
		PeerReflector: func(a netip.Addr) bool { return peerReflectors[a] }}, o.Trust.Quarantine, cfg.Events, cfg.Now, cfg.Logger)
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
	rn, err := r.start(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-rn.sync.done: // the speaker failed
	}
	return r.stop(rn)
}

// Ready is closed once Run has started the reflector: the store is open,
// the stored configuration originated, the neighbors added. The admin API
// answers ErrNotRunning before.
func (r *Reflector) Ready() <-chan struct{} { return r.ready }

// start runs the start steps of a new run under the life lock; ctx
// bounds them.
func (r *Reflector) start(ctx context.Context) (_ *run, err error) {
	r.life.Lock()
	defer r.life.Unlock()
	if r.state != stateNew {
		return nil, errors.New("reflector: already run (a Reflector runs once)")
	}
	r.state = stateStopped // unless every step succeeds
	rn := newRun(r)
	if err := rn.start(ctx); err != nil {
		return nil, err
	}
	r.run = rn
	r.state = stateStarted
	close(r.ready)
	o := &r.opts
	r.log.Info("reflector started", "router_id", o.RouterID, "asn", o.ASN, "restarting", rn.restarting,
		"previous_run", rn.prevState, "records", len(rn.store.Records()), "parts_originated", rn.seeded,
		"clients", len(o.Clients), "reflectors", len(o.Reflectors))
	return rn, nil
}

// stop shuts a started run down (see Run).
func (r *Reflector) stop(rn *run) error {
	// The loop ends first, so that Commit calls waiting for it return and
	// release their shared lock.
	rn.stopLoops()
	rn.stopSpeaker()
	r.life.Lock()
	defer r.life.Unlock()
	err := rn.close()
	r.state = stateStopped
	r.log.Info("reflector stopped", "clean", err == nil)
	return err
}

// Healthy returns nil while the reflector runs and its speaker is alive
// (for /healthz).
func (r *Reflector) Healthy() error {
	rn, release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	return rn.healthy()
}

// started holds the reflector's life shared while Run has it started and
// returns the run, for a caller that uses what the start steps set up
// (the store, the speaker, BFD, the sync loop); release ends the hold.
// Before the start and after the stop it holds nothing and returns
// ErrNotRunning. It is the one check of the start-up state, which only
// Run changes (start, stop).
func (r *Reflector) started() (rn *run, release func(), err error) {
	r.life.RLock()
	if r.state != stateStarted {
		r.life.RUnlock()
		return nil, nil, ErrNotRunning
	}
	return r.run, r.life.RUnlock, nil
}

// Restarting reports whether this run started as a graceful restart (the
// previous run did not stop cleanly).
func (r *Reflector) Restarting() bool {
	r.life.RLock()
	defer r.life.RUnlock()
	return r.run != nil && r.run.restarting
}
