package switchagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/zoneadmin"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// Direct mode (no reflectors): the switch keeps the zone store itself, in
// its state directory, through the same zoneadmin piece as a reflector; its
// API takes zoning edits, and each commit is put in force by the loop
// before the API answers. Nothing is published: every host and target is
// on this switch.

// errDirectNotRunning answers zoning calls in direct mode before Run has
// opened the store or after it closed it.
var errDirectNotRunning = errors.New("switch agent: not running (the zone store is not open)")

// errNotInForce is returned with a commit the loop could not take (the
// agent stopped): it is in the store and in force at the next start.
var errNotInForce = errors.New("switch agent: committed; not yet in force (the agent is stopping)")

// directFabric is the fabric side of direct mode: the zone store, opened
// at the start, and its commits, which the loop puts in force; the local
// records go into the agent's device table instead of BGP.
type directFabric struct {
	a *Agent
	// admin is the zone store (nil until start opened it, and after stop):
	// the API commits through it.
	admin atomic.Pointer[zoneadmin.Admin]
	// commits carries each commit to the loop (committed), which puts the
	// store's configuration in force.
	commits chan fabricEvent
	// nextPrune is when the loop forgets the store's expired tombstones
	// next (loop).
	nextPrune time.Time
	format    atomic.Uint32 // the saved record format, kept for the next start
}

func newDirectFabric(a *Agent) *directFabric {
	return &directFabric{a: a, commits: make(chan fabricEvent)}
}

// start opens the zone store and publishes it to the API; its records are
// the zoning to start from.
func (d *directFabric) start(context.Context, zones.Records, bool) (zones.Records, error) {
	a := d.a
	admin, err := zoneadmin.Open(zoneadmin.Options{Path: a.opts.storeFile(), RouterID: a.self,
		HistorySize: a.opts.HistorySize, Logger: a.log, Hand: d.putInForce})
	if err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	d.admin.Store(admin)
	a.log.Info("direct mode: no reflectors, no BGP; this switch keeps the zone store", "store", a.opts.storeFile(),
		"records", len(admin.Store().Records()))
	return recordsOf(admin.Store().Records()), nil
}

// join applies the restored state; with no fabric to wait for, the view
// settles from the start.
func (d *directFabric) join(ctx context.Context, saved savedState, restored Output, _ bool) error {
	d.format.Store(uint32(cmp.Or(saved.Format, record.FormatDevices)))
	d.a.apply(ctx, restored)
	now := time.Now()
	d.a.sessionUp(now)
	d.nextPrune = now.Add(pruneInterval)
	return nil
}

func (d *directFabric) run() {}

// stop withdraws the store from the API and closes it.
func (d *directFabric) stop() {
	admin := d.admin.Swap(nil)
	if admin == nil {
		return
	}
	if err := admin.Close(); err != nil {
		d.a.log.Error("closing the zone store", "err", err)
	}
}

func (d *directFabric) healthy() error { return nil }

func (d *directFabric) records() <-chan bgp.RecordEvent            { return nil }
func (d *directFabric) onRecords(context.Context, bgp.RecordEvent) {}
func (d *directFabric) events() <-chan fabricEvent                 { return d.commits }

// handle (loop) puts a commit in force.
func (d *directFabric) handle(ctx context.Context, ev fabricEvent) {
	if ev.kind == committed {
		d.takeCommitted(ctx)
		close(ev.done)
	}
}

func (d *directFabric) nextTick() (time.Time, bool) { return d.nextPrune, !d.nextPrune.IsZero() }

// tick (loop) prunes the store's expired tombstones when due.
func (d *directFabric) tick(_ context.Context, now time.Time) {
	if d.nextPrune.IsZero() || now.Before(d.nextPrune) {
		return
	}
	d.nextPrune = now.Add(pruneInterval)
	d.pruneZoneStore(now)
}

// publish puts out's records in the device table (no BGP; the table is
// the API's device list).
func (d *directFabric) publish(_ context.Context, out Output) {
	for _, p := range out.Publish {
		rec := record.Device{Report: p.Record}
		d.a.table.Apply(nil, bgp.RecordEvent{Record: &rec})
	}
	for _, r := range out.Withdraw {
		gone := record.Device{Report: r}
		d.a.table.Apply(nil, bgp.RecordEvent{Key: gone.Key(), Withdrawn: true})
	}
}

func (d *directFabric) subscribe(context.Context, []string)    {}
func (d *directFabric) published() []table.PublishedDevice     { return nil }
func (d *directFabric) recordFormat() record.Format            { return record.Format(d.format.Load()) }
func (d *directFabric) reconfigure(Options) error              { return nil }
func (d *directFabric) backend(view switchBackend) api.Backend { return directBackend{view, d} }
func (d *directFabric) neighbors(context.Context) ([]bgp.NeighborStatus, error) {
	return nil, nil
}
func (d *directFabric) bfdManager() *bfd.Manager          { return nil }
func (d *directFabric) speakerStats() bgp.Stats           { return bgp.Stats{} }
func (d *directFabric) setStats() table.SetPublisherStats { return table.SetPublisherStats{} }

// refusals: none (no records are received), every reason at zero.
func (d *directFabric) refusals() map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range table.RefusalReasons() {
		out[r] = 0
	}
	return out
}

// noteUnusedStore logs a zone store left in the state directory by direct
// mode once the switch has reflectors: the reflectors' zoning is in force.
func noteUnusedStore(o Options, log *slog.Logger) {
	if _, err := os.Stat(o.storeFile()); err == nil {
		log.Warn("zone store of an earlier direct mode not used: the reflectors' zoning is in force "+
			"(move it away once it is on a reflector: inofctl backup, inofd restore)", "store", o.storeFile())
	}
}

// recordsOf makes the zone records the engine's configuration comes from.
func recordsOf(rs []zones.Record) zones.Records {
	out := zones.Records{}
	for _, r := range rs {
		out.Apply(r)
	}
	return out
}

// putInForce (zoneadmin.Options.Hand) has the loop take what was committed
// and waits for it, bounded by ctx.
func (d *directFabric) putInForce(ctx context.Context, _ []zones.Key) error {
	done := make(chan struct{})
	select {
	case d.commits <- fabricEvent{kind: committed, done: done}:
	case <-d.a.loopDone:
		return errNotInForce
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNotInForce, ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("switch agent: committed; still being put in force: %w", ctx.Err())
	case <-d.a.loopDone:
		return errNotInForce
	}
}

// takeCommitted (loop) takes the store's records and puts the
// configuration they make in force: hosts are told what they gain and
// lose (reason 4).
func (d *directFabric) takeCommitted(ctx context.Context) {
	admin := d.admin.Load()
	if admin == nil {
		return
	}
	a := d.a
	changed := false
	for _, r := range admin.Store().Records() {
		if a.zoning.recs.Apply(r) {
			a.log.Info("zone configuration changed", "object", r.Key.String())
			changed = true
		}
	}
	if changed {
		a.save.dirty = true
		a.applyConfig(ctx)
	}
}

// pruneInterval is how often direct mode forgets the zone store's
// tombstones past their lifetime (a reflector's prune_interval default).
const pruneInterval = time.Hour

// pruneZoneStore (loop) forgets the tombstones past their lifetime, in the
// store and in the records the configuration is built from.
func (d *directFabric) pruneZoneStore(now time.Time) {
	admin := d.admin.Load()
	if admin == nil {
		return
	}
	n, err := admin.Store().Prune()
	if err != nil {
		d.a.log.Error("pruning the zone store", "err", err)
	}
	if d.a.zoning.recs.Prune(now) > 0 {
		d.a.save.dirty = true
	}
	if n > 0 {
		d.a.log.Info("expired tombstones pruned", "store", n)
	}
}

// directBackend is the API's backend in direct mode: the switch's own
// view, with zoning read-write and the journal of its store.
type directBackend struct {
	switchBackend
	d *directFabric
}

func (b directBackend) zoneAdmin() (*zoneadmin.Admin, error) {
	if admin := b.d.admin.Load(); admin != nil {
		return admin, nil
	}
	return nil, errDirectNotRunning
}

// Config implements api.Backend: the store's configuration.
func (b directBackend) Config() *zones.Config {
	if admin, err := b.zoneAdmin(); err == nil {
		return admin.Config()
	}
	return b.switchBackend.Config()
}

// Commit implements api.Backend: a commit to the switch's store, in force
// when it returns.
func (b directBackend) Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	admin, err := b.zoneAdmin()
	if err != nil {
		return nil, err
	}
	recs, err := admin.Commit(ctx, edit)
	if err != nil {
		return recs, fmt.Errorf("switch agent: %w", err)
	}
	return recs, nil
}

// Sessions implements api.Backend: none in direct mode.
func (directBackend) Sessions(context.Context) ([]api.Session, error) { return nil, nil }

// SetLosslessProfile implements api.Backend: refused; in direct mode the
// fabric's profile is the default.
func (directBackend) SetLosslessProfile(context.Context, lossless.Profile) error {
	return errors.New("switch agent: direct mode serves the default lossless profile; setting one needs a reflector")
}

// Journal implements api.JournalBackend.
func (b directBackend) Journal(context.Context) ([]zones.Entry, error) {
	admin, err := b.zoneAdmin()
	if err != nil {
		return nil, err
	}
	return admin.Journal()
}

// ConfigAt implements api.JournalBackend.
func (b directBackend) ConfigAt(_ context.Context, v zones.Version) (*zones.Config, bool, error) {
	admin, err := b.zoneAdmin()
	if err != nil {
		return nil, false, err
	}
	return admin.ConfigAt(v)
}

// Conflicts implements api.JournalBackend: one writer has none, but the
// store answers all the same.
func (b directBackend) Conflicts(context.Context) ([]zones.Conflict, error) {
	admin, err := b.zoneAdmin()
	if err != nil {
		return nil, err
	}
	return admin.Conflicts()
}

// Backup implements api.JournalBackend: the store, to restore on a
// reflector when the switch joins a fabric (inofd restore).
func (b directBackend) Backup(_ context.Context, w io.Writer) (int64, error) {
	admin, err := b.zoneAdmin()
	if err != nil {
		return 0, err
	}
	return admin.Backup(w)
}

// HistorySize implements api.JournalBackend.
func (b directBackend) HistorySize() int { return b.a.opts.HistorySize }
