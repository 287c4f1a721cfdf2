package reflector

import (
	"context"
	"errors"
	"fmt"
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

// onAdopt is the replicator's OnAdopt: it hands the part to the sync loop,
// waiting while the loop is busy (the replicator's watch queue absorbs the
// wait) but never past the stop.
func (r *Reflector) onAdopt(c record.Config) {
	select {
	case r.adopted <- c:
	case <-r.loopDone:
	}
}

// loop owns the replication decisions until ctx ends or the speaker fails.
func (r *Reflector) loop(ctx context.Context) {
	defer close(r.loopDone)
	prune := time.NewTicker(r.opts.PruneInterval)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.speaker.Done():
			r.log.Error("BGP speaker stopped; reflector stopping", "err", r.speaker.Err())
			return
		case c := <-r.adopted:
			batch := []record.Config{c}
		drain:
			for len(batch) < maxBatch {
				select {
				case c := <-r.adopted:
					batch = append(batch, c)
				default:
					break drain
				}
			}
			r.merge(ctx, batch)
		case req := <-r.requests:
			err := r.reconcile(ctx, req.keys)
			if req.journal {
				_, jerr := r.reconcileJournal(ctx)
				err = errors.Join(err, jerr)
			}
			req.done <- err
		case req := <-r.profileReqs:
			req.done <- r.setProfile(ctx, req.profile, req.identity)
		case req := <-r.formatReqs:
			req.done <- r.setFormat(ctx, req.format, req.identity)
		case <-prune.C:
			r.prune(ctx)
		}
	}
}

// merge takes parts adopted from peer reflectors. A part of a version not
// newer than the stored one is a left-over of an older, longer version
// (or of a concurrent write that lost): what this reflector originates for
// that object is brought back in line with the store. Other parts go to the
// assembler; a completed record is applied to the store (persisted) and, if
// it wins, originated in full with the parts it no longer has withdrawn.
func (r *Reflector) merge(ctx context.Context, batch []record.Config) {
	stored := r.storeIndex()
	touched := map[zones.Key]bool{}
	var complete []zones.Record
	var journal []record.Config
	for _, c := range batch {
		switch configsync.KindOf(c).Owner() {
		case configsync.OwnerLossless:
			r.adoptProfile(c)
			continue
		case configsync.OwnerRecordFormat:
			r.adoptFormat(c)
			continue
		case configsync.OwnerJournal:
			journal = append(journal, c)
			continue
		case configsync.OwnerNone:
			continue // a kind of a newer release
		}
		k := zones.Key{Kind: zones.Kind(c.Kind), Name: c.Name}
		if cur, ok := stored[k]; ok && !cur.Version.Less(zones.Version{Gen: c.Gen, RouterID: c.Writer}) {
			touched[k] = true
			continue
		}
		rec, ok, err := r.asm.Add(c)
		if err != nil {
			r.m.malformedParts.Add(1)
			r.log.Warn("configuration part refused", "object", c.Object(), "err", err)
			continue
		}
		if ok {
			complete = append(complete, rec)
			touched[k] = true
		}
	}
	r.m.assemblerEvicted.Store(r.asm.Evicted())
	if len(complete) > 0 {
		won, err := r.store.Apply(complete)
		if err != nil {
			r.m.applyErrors.Add(uint64(len(unjoin(err))))
			r.log.Warn("configuration from peer reflectors partly refused", "err", err)
		}
		r.m.recordsAdopted.Add(uint64(len(won)))
		r.logAdopted(won)
		for _, w := range won {
			msg := "merged from a peer reflector"
			if w.Deleted {
				msg = "deletion merged from a peer reflector"
			}
			r.events.Publish(api.Event{Kind: "zoning", Subject: w.Key.String(), Message: msg,
				Attributes: map[string]string{"generation": fmt.Sprint(w.Gen), "writer": w.RouterID.String(),
					"deleted": boolString(w.Deleted), "identity": "reflector:" + w.RouterID.String()}})
		}
	}
	keys := make([]zones.Key, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	if err := r.reconcile(ctx, keys); err != nil {
		r.log.Warn("originating merged configuration", "err", err)
	}
	if len(journal) > 0 {
		r.mergeJournal(ctx, journal)
	}
	if len(journal) > 0 || len(complete) > 0 {
		r.reportConflicts()
	}
}

// logAdopted logs records merged from peer reflectors: one info line per
// merge (a starting peer sends every record it holds, tombstones
// included), naming the first few objects, and one debug line per record.
func (r *Reflector) logAdopted(won []zones.Record) {
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
		r.log.Debug("configuration record adopted from a peer reflector", "object", w.Key.String(), "generation", w.Gen,
			"writer", w.RouterID.String(), "deleted", w.Deleted)
	}
	if len(won) > named {
		objects = append(objects, fmt.Sprintf("and %d more", len(won)-named))
	}
	r.log.Info("configuration adopted from peer reflectors", "records", len(won), "deletions", deleted,
		"objects", strings.Join(objects, ", "))
}

// reconcile makes what this reflector originates for each key match the
// store: every part of the stored record (the replicator ignores parts it
// already holds at that version), then a withdraw of each part it still
// originates beyond them (configsync.Stale; the replicator remembers the
// version withdrawn, so a peer's copy of it is not adopted again).
func (r *Reflector) reconcile(ctx context.Context, keys []zones.Key) error {
	if len(keys) == 0 {
		return nil
	}
	stored := r.storeIndex()
	want := map[zones.Key]bool{}
	for _, k := range keys {
		want[k] = true
	}
	held := map[zones.Key][]record.Config{}
	for _, c := range r.repl.Objects() {
		if k := (zones.Key{Kind: zones.Kind(c.Kind), Name: c.Name}); want[k] {
			held[k] = append(held[k], c)
		}
	}
	var errs []error
	for _, k := range keys {
		rec, ok := stored[k]
		if !ok {
			continue // refused by the store (and so by the replicator), or pruned
		}
		next, err := configsync.Records(rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		for _, p := range next {
			if _, err := r.repl.Put(ctx, p); err != nil {
				errs = append(errs, err)
			}
		}
		for _, obj := range configsync.Stale(held[k], next) {
			if err := r.repl.Withdraw(ctx, obj); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// prune forgets tombstones past their lifetime in the store and withdraws
// this reflector's copies of them.
func (r *Reflector) prune(ctx context.Context) {
	n, err := r.store.Prune()
	if err != nil {
		r.log.Error("pruning the store", "err", err)
	}
	r.m.storePruned.Add(uint64(n))
	w, err := r.repl.Prune(ctx)
	if err != nil {
		r.log.Error("withdrawing expired tombstones", "err", err)
	}
	if n > 0 || w > 0 {
		r.log.Info("expired tombstones pruned", "store", n, "withdrawn", w)
	}
}

func (r *Reflector) storeIndex() map[zones.Key]zones.Record {
	recs := r.store.Records()
	out := make(map[zones.Key]zones.Record, len(recs))
	for _, rec := range recs {
		out[rec.Key] = rec
	}
	return out
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
