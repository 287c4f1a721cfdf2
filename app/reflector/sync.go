package reflector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// reconcileRequest asks the sync loop to originate what the store now holds
// for some keys (after a local commit).
type reconcileRequest struct {
	keys    []zones.Key
	journal bool // the journal changed too
	done    chan error
}

// maxBatch bounds the adopted parts merged with one store snapshot.
const maxBatch = 1024

// adoptQueue bounds the adopted parts waiting for the sync loop; a full
// queue makes the replicator's watch wait (its own queue then resyncs,
// losing nothing: each adopted part is handed over exactly once).
const adoptQueue = 1024

// syncLoop owns the replication decisions of a run: the part assemblers,
// what this reflector originates and withdraws, the settings it writes.
// One goroutine (loop) runs them; the replicator's watch (onAdopt), the
// commits (originate) and the settings' setters hand it their work over
// channels. Before the loop starts, the start steps call its methods
// themselves (reconcileJournal).
type syncLoop struct {
	rn       *run // the store, the replicator, the router-id
	opts     *Options
	log      *slog.Logger
	m        *counters
	events   EventPublisher
	settings *settings

	// Owned by the loop.
	asm      *configsync.Assembler
	jasm     *configsync.JournalAssembler
	reported map[zones.Version]bool // lost writes already reported (reportConflicts)

	adopted     chan record.Config
	requests    chan reconcileRequest
	profileReqs chan profileRequest
	formatReqs  chan formatRequest
	done        chan struct{} // closed when the loop ends
}

func newSyncLoop(rn *run) *syncLoop {
	r := rn.r
	return &syncLoop{rn: rn, opts: &r.opts, log: r.log, m: r.m, events: r.events, settings: r.settings,
		asm: configsync.NewAssembler(0), jasm: configsync.NewJournalAssembler(0),
		adopted: make(chan record.Config, adoptQueue), requests: make(chan reconcileRequest),
		profileReqs: make(chan profileRequest), formatReqs: make(chan formatRequest), done: make(chan struct{})}
}

// onAdopt is the replicator's OnAdopt: it hands the part to the sync loop,
// waiting while the loop is busy (the replicator's watch queue absorbs the
// wait) but never past the stop.
func (l *syncLoop) onAdopt(c record.Config) {
	select {
	case l.adopted <- c:
	case <-l.done:
	}
}

// loop owns the replication decisions until ctx ends or the speaker fails.
func (l *syncLoop) loop(ctx context.Context) {
	defer close(l.done)
	prune := time.NewTicker(l.opts.PruneInterval)
	defer prune.Stop()
	sp := l.rn.speaker
	for {
		select {
		case <-ctx.Done():
			return
		case <-sp.Done():
			l.log.Error("BGP speaker stopped; reflector stopping", "err", sp.Err())
			return
		case c := <-l.adopted:
			batch := []record.Config{c}
		drain:
			for len(batch) < maxBatch {
				select {
				case c := <-l.adopted:
					batch = append(batch, c)
				default:
					break drain
				}
			}
			l.merge(ctx, batch)
		case req := <-l.requests:
			err := l.reconcile(ctx, req.keys)
			if req.journal {
				_, jerr := l.reconcileJournal(ctx)
				err = errors.Join(err, jerr)
			}
			req.done <- err
		case req := <-l.profileReqs:
			req.done <- l.setProfile(ctx, req.profile, req.identity)
		case req := <-l.formatReqs:
			req.done <- l.setFormat(ctx, req.format, req.identity)
		case <-prune.C:
			l.prune(ctx)
		}
	}
}

// originate has the sync loop originate the committed keys and waits for
// it, bounded by ctx (zoneadmin.Options.Hand).
func (l *syncLoop) originate(ctx context.Context, keys []zones.Key) error {
	req := reconcileRequest{keys: keys, journal: true, done: make(chan error, 1)}
	// The hand-off ignores ctx: a committed change must reach the loop.
	select {
	case l.requests <- req:
	case <-l.done:
		return ErrNotReplicated
	}
	select {
	case err := <-req.done:
		if err != nil {
			return fmt.Errorf("reflector: committed; originating failed: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reflector: committed; replication still running: %w", ctx.Err())
	case <-l.done:
		return ErrNotReplicated
	}
}

// merge takes parts adopted from peer reflectors. A part of a version not
// newer than the stored one is a left-over of an older, longer version
// (or of a concurrent write that lost): what this reflector originates for
// that object is brought back in line with the store. Other parts go to the
// assembler; a completed record is applied to the store (persisted) and, if
// it wins, originated in full with the parts it no longer has withdrawn.
func (l *syncLoop) merge(ctx context.Context, batch []record.Config) {
	touched := map[zones.Key]bool{}
	var complete []zones.Record
	var journal []record.Config
	for _, c := range batch {
		switch configsync.KindOf(c).Owner() {
		case configsync.OwnerLossless:
			l.adoptProfile(c)
			continue
		case configsync.OwnerRecordFormat:
			l.adoptFormat(c)
			continue
		case configsync.OwnerJournal:
			journal = append(journal, c)
			continue
		case configsync.OwnerNone:
			continue // a kind of a newer release
		}
		k := zones.Key{Kind: zones.Kind(c.Kind), Name: c.Name}
		if cur, ok := l.rn.store.Record(k); ok && !cur.Version.Less(zones.Version{Gen: c.Gen, RouterID: c.Writer}) {
			touched[k] = true
			continue
		}
		rec, ok, err := l.asm.Add(c)
		if err != nil {
			l.m.malformedParts.Add(1)
			l.log.Warn("configuration part refused", "object", c.Object(), "err", err)
			continue
		}
		if ok {
			complete = append(complete, rec)
			touched[k] = true
		}
	}
	l.m.assemblerEvicted.Store(l.asm.Evicted())
	if len(complete) > 0 {
		won, err := l.rn.store.Apply(complete)
		if err != nil {
			l.m.applyErrors.Add(uint64(len(unjoin(err))))
			l.log.Warn("configuration from peer reflectors partly refused", "err", err)
		}
		l.m.recordsAdopted.Add(uint64(len(won)))
		l.logAdopted(won)
		for _, w := range won {
			msg := "merged from a peer reflector"
			if w.Deleted {
				msg = "deletion merged from a peer reflector"
			}
			l.events.Publish(api.Event{Kind: "zoning", Subject: w.Key.String(), Message: msg,
				Attributes: map[string]string{"generation": fmt.Sprint(w.Gen), "writer": w.RouterID.String(),
					"deleted": boolString(w.Deleted), "identity": "reflector:" + w.RouterID.String()}})
		}
	}
	keys := make([]zones.Key, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	if err := l.reconcile(ctx, keys); err != nil {
		l.log.Warn("originating merged configuration", "err", err)
	}
	if len(journal) > 0 {
		l.mergeJournal(ctx, journal)
	}
	if len(journal) > 0 || len(complete) > 0 {
		l.reportConflicts()
	}
}

// logAdopted logs records merged from peer reflectors: one info line per
// merge (a starting peer sends every record it holds, tombstones
// included), naming the first few objects, and one debug line per record.
func (l *syncLoop) logAdopted(won []zones.Record) {
	if len(won) == 0 {
		return
	}
	const named = 5
	var objects []string
	deleted := 0
	for _, w := range won {
		if w.Deleted {
			deleted++
		}
		if len(objects) < named {
			objects = append(objects, w.Key.String())
		}
		l.log.Debug("configuration record adopted from a peer reflector", "object", w.Key.String(), "generation", w.Gen,
			"writer", w.RouterID.String(), "deleted", w.Deleted)
	}
	if len(won) > named {
		objects = append(objects, fmt.Sprintf("and %d more", len(won)-named))
	}
	l.log.Info("configuration adopted from peer reflectors", "records", len(won), "deletions", deleted,
		"objects", strings.Join(objects, ", "))
}

// reconcile makes what this reflector originates for each key match the
// store: every part of the stored record (the replicator ignores parts it
// already holds at that version), then a withdraw of each part it still
// originates beyond them (configsync.Stale; the replicator remembers the
// version withdrawn, so a peer's copy of it is not adopted again). The
// withdraw names the version the snapshot found: a newer one the
// replicator adopted from a peer since stays.
func (l *syncLoop) reconcile(ctx context.Context, keys []zones.Key) error {
	if len(keys) == 0 {
		return nil
	}
	var errs []error
	for _, k := range keys {
		rec, ok := l.rn.store.Record(k)
		if !ok {
			continue // refused by the store (and so by the replicator), or pruned
		}
		held := l.rn.repl.Parts(uint8(k.Kind), k.Name) // before the Puts: what the withdraws may drop
		next, err := configsync.Records(rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		for _, p := range next {
			if _, err := l.rn.repl.Put(ctx, p); err != nil {
				errs = append(errs, err)
			}
		}
		for _, c := range configsync.Stale(held, next) {
			if err := l.rn.repl.Withdraw(ctx, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// prune forgets tombstones past their lifetime in the store and withdraws
// this reflector's copies of them.
func (l *syncLoop) prune(ctx context.Context) {
	n, err := l.rn.store.Prune()
	if err != nil {
		l.log.Error("pruning the store", "err", err)
	}
	l.m.storePruned.Add(uint64(n))
	w, err := l.rn.repl.Prune(ctx)
	if err != nil {
		l.log.Error("withdrawing expired tombstones", "err", err)
	}
	if n > 0 || w > 0 {
		l.log.Info("expired tombstones pruned", "store", n, "withdrawn", w)
	}
}

// unjoin lists the errors an errors.Join holds (or err itself).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// askLoop hands req to the sync loop over reqs and waits for the loop's
// answer on done. ctx bounds the hand-off only: once the loop has the
// request, its answer is awaited (a setting being persisted and originated
// is not abandoned half-way).
func askLoop[T any](ctx context.Context, loopDone <-chan struct{}, reqs chan<- T, req T, done <-chan error) error {
	select {
	case reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-loopDone:
		return ErrNotRunning
	}
	select {
	case err := <-done:
		return err
	case <-loopDone:
		return ErrNotRunning
	}
}
