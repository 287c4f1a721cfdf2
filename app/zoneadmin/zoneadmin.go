// Package zoneadmin is the zone authority's half of the admin API: the
// bbolt zone store (zones.Store), its commits with the identity that made
// them, and the journal (history, audit, conflicts, backup). A reflector
// and a standalone switch agent (direct mode, docs/operations.md) both keep
// their zoning through it; what happens to a committed change is theirs to
// say (a reflector originates it to the fabric, a standalone switch puts
// it in force for its own hosts).
package zoneadmin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// StoreFile is the zone store's file name in a daemon's state directory.
const StoreFile = "zones.db"

// Options open a zone store.
type Options struct {
	// Path is the store file (StoreFile in the state directory); its
	// directory is created (mode 0700) if missing.
	Path string
	// RouterID writes the store's versions (the daemon's router-id).
	RouterID inof.RouterID
	// HistorySize bounds the journal (zones.DefaultHistorySize if 0).
	HistorySize int
	// Now is the wall clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Hand takes the keys each commit changed once they are durable, and
	// returns once they are on their way (a reflector: originated; a
	// standalone switch: in force), bounded by ctx.
	Hand func(ctx context.Context, keys []zones.Key) error
	// Observe, if set, is told each commit's time to validate and write,
	// and to hand on.
	Observe func(write, hand time.Duration)
}

// Admin is an open zone store and its commits. Safe for concurrent use.
type Admin struct {
	opts  Options
	log   *slog.Logger
	store *zones.Store
}

// Open opens (creating if needed) the store at o.Path. Its file lock keeps
// a second daemon off it.
func Open(o Options) (*Admin, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HistorySize == 0 {
		o.HistorySize = zones.DefaultHistorySize
	}
	if o.Hand == nil {
		o.Hand = func(context.Context, []zones.Key) error { return nil }
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, fmt.Errorf("zoneadmin: state directory: %w", err)
	}
	s, err := zones.Open(o.Path, zones.StoreOptions{RouterID: o.RouterID, Now: o.Now, Logger: o.Logger,
		HistorySize: o.HistorySize})
	if err != nil {
		return nil, fmt.Errorf("zoneadmin: %w", err)
	}
	return &Admin{opts: o, log: o.Logger, store: s}, nil
}

// Store is the open store.
func (a *Admin) Store() *zones.Store { return a.store }

// Close closes the store.
func (a *Admin) Close() error { return a.store.Close() }

// HistorySize is the journal's bound.
func (a *Admin) HistorySize() int { return a.opts.HistorySize }

// Commit runs edit in one store transaction and commits it: the whole
// resulting configuration is validated and every change written atomically
// (zones.Tx), journaled with the caller's identity (api.IdentityFrom). It
// then hands the changed keys on (Options.Hand) and returns the records.
// An error from edit aborts the transaction; zones.ErrConflict means
// another change landed meanwhile: begin again. An error from Hand comes
// back with the records, which are committed. Each commit is logged with
// the moment it was durable (durable_at, to the nanosecond), how long
// validating and writing it took and how long handing it on.
func (a *Admin) Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	tx := a.store.Begin()
	id := api.IdentityFrom(ctx)
	tx.Note(zones.Note{Identity: id.String(), Via: id.Via}) // edit may say more (api.Server does)
	if err := edit(tx); err != nil {
		tx.Abort()
		return nil, err
	}
	start := time.Now()
	changed, err := tx.Commit()
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	durable := time.Now()
	keys := make([]zones.Key, len(changed))
	for i, c := range changed {
		keys[i] = c.Key
	}
	err = a.opts.Hand(ctx, keys)
	handed := time.Since(durable)
	if a.opts.Observe != nil {
		a.opts.Observe(durable.Sub(start), handed)
	}
	attrs := []any{"records", len(changed), "write", durable.Sub(start),
		"durable_at", durable.UTC().Format(time.RFC3339Nano), "originate", handed,
		"identity", id.String(), "via", id.Via}
	if err != nil {
		a.log.Warn("configuration committed", append(attrs, "err", err)...)
	} else {
		a.log.Info("configuration committed", attrs...)
	}
	return changed, err
}

// Config returns the configuration in effect (a copy).
func (a *Admin) Config() *zones.Config { return a.store.Config() }

// Journal returns the journal, oldest entry first.
func (a *Admin) Journal() ([]zones.Entry, error) { return a.store.Journal() }

// ConfigAt rebuilds the configuration right after a retained journal entry.
func (a *Admin) ConfigAt(v zones.Version) (*zones.Config, bool, error) { return a.store.ConfigAt(v) }

// Conflicts lists the journal's lost writes.
func (a *Admin) Conflicts() ([]zones.Conflict, error) { return a.store.Conflicts() }

// Backup writes a consistent copy of the store (records, journal) to w.
func (a *Admin) Backup(w io.Writer) (int64, error) { return a.store.Backup(w) }
