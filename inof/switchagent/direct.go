package switchagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openinof/inof/inof/api"
	"github.com/openinof/inof/inof/zoneadmin"
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

// openZoneStore opens the direct mode's zone store and publishes it to the API.
func (a *Agent) openZoneStore() (*zoneadmin.Admin, error) {
	admin, err := zoneadmin.Open(zoneadmin.Options{Path: a.opts.storeFile(), RouterID: a.self,
		HistorySize: a.opts.HistorySize, Logger: a.log, Hand: a.putInForce})
	if err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	a.admin.Store(admin)
	a.log.Info("direct mode: no reflectors, no BGP; this switch keeps the zone store", "store", a.opts.storeFile(),
		"records", len(admin.Store().Records()))
	return admin, nil
}

// closeZoneStore withdraws the store from the API and closes it.
func (a *Agent) closeZoneStore(admin *zoneadmin.Admin) {
	a.admin.Store(nil)
	if err := admin.Close(); err != nil {
		a.log.Error("closing the zone store", "err", err)
	}
}

// noteUnusedStore logs a zone store left in the state directory by direct
// mode once the switch has reflectors: the reflectors' zoning is in force.
func (a *Agent) noteUnusedStore() {
	if _, err := os.Stat(a.opts.storeFile()); err == nil {
		a.log.Warn("zone store of an earlier direct mode not used: the reflectors' zoning is in force "+
			"(move it away once it is on a reflector: inofctl backup, inofd restore)", "store", a.opts.storeFile())
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
func (a *Agent) putInForce(ctx context.Context, _ []zones.Key) error {
	done := make(chan struct{})
	select {
	case a.commits <- done:
	case <-a.loopDone:
		return errNotInForce
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNotInForce, ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("switch agent: committed; still being put in force: %w", ctx.Err())
	case <-a.loopDone:
		return errNotInForce
	}
}

// takeCommitted (loop) takes the store's records and puts the
// configuration they make in force: hosts are told what they gain and
// lose (reason 4).
func (a *Agent) takeCommitted(ctx context.Context) {
	admin := a.admin.Load()
	if admin == nil {
		return
	}
	changed := false
	for _, r := range admin.Store().Records() {
		if a.zrecs.Apply(r) {
			a.log.Info("zone configuration changed", "object", r.Key.String())
			changed = true
		}
	}
	if changed {
		a.dirty = true
		a.applyConfig(ctx)
	}
}

// pruneInterval is how often direct mode forgets the zone store's
// tombstones past their lifetime (a reflector's prune_interval default).
const pruneInterval = time.Hour

// pruneZoneStore (loop) forgets the tombstones past their lifetime, in the
// store and in the records the configuration is built from.
func (a *Agent) pruneZoneStore(now time.Time) {
	admin := a.admin.Load()
	if admin == nil {
		return
	}
	n, err := admin.Store().Prune()
	if err != nil {
		a.log.Error("pruning the zone store", "err", err)
	}
	if a.zrecs.Prune(now) > 0 {
		a.dirty = true
	}
	if n > 0 {
		a.log.Info("expired tombstones pruned", "store", n)
	}
}

// directBackend is the API's backend in direct mode: the switch's own
// view, with zoning read-write and the journal of its store.
type directBackend struct{ switchBackend }

func (b directBackend) zoneAdmin() (*zoneadmin.Admin, error) {
	if admin := b.a.admin.Load(); admin != nil {
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
