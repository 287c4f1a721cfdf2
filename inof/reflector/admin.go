package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof/api"
	"github.com/openinof/inof/zones"
)

// The in-process admin API. The gRPC API (inofctl) wraps these calls.

// ErrNotReplicated is returned with the committed records when the
// reflector stopped before it could originate them: they are in the store
// and go out at the next start.
var ErrNotReplicated = errors.New("reflector: committed but not yet replicated")

// Commit runs edit in one store transaction and commits it: the whole
// resulting configuration is validated and every change written atomically
// (zones.Tx). It then originates the changed records and waits for that
// (bounded by ctx) before returning them. An error from edit aborts the
// transaction; zones.ErrConflict means another change landed meanwhile
// (a commit here or a newer version from another reflector): begin again.
// If ctx ends after the commit, the records are committed and are still
// replicated; the error then wraps ctx.Err(). Each commit is logged with
// the moment it was durable in the store (durable_at, to the nanosecond),
// how long validating and writing it took and how long originating it.
func (r *Reflector) Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.state != stateStarted {
		return nil, ErrNotRunning
	}
	tx := r.store.Begin()
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
	r.m.commits.Add(1)
	err = r.originate(ctx, keys)
	originated := time.Since(durable)
	r.m.commitLatency.WithLabelValues("write").Observe(durable.Sub(start).Seconds())
	r.m.commitLatency.WithLabelValues("originate").Observe(originated.Seconds())
	attrs := []any{"records", len(changed), "write", durable.Sub(start),
		"durable_at", durable.UTC().Format(time.RFC3339Nano), "originate", originated,
		"identity", id.String(), "via", id.Via}
	if err != nil {
		r.log.Warn("configuration committed", append(attrs, "err", err)...)
	} else {
		r.log.Info("configuration committed", attrs...)
	}
	return changed, err
}

// originate has the sync loop originate the committed keys and waits for
// it (bounded by ctx).
func (r *Reflector) originate(ctx context.Context, keys []zones.Key) error {
	req := reconcileRequest{keys: keys, journal: true, done: make(chan error, 1)}
	// The hand-off ignores ctx: a committed change must reach the loop.
	select {
	case r.requests <- req:
	case <-r.loopDone:
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
	case <-r.loopDone:
		return ErrNotReplicated
	}
}

// Config returns the configuration in effect (a copy).
func (r *Reflector) Config() (*zones.Config, error) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.state != stateStarted {
		return nil, ErrNotRunning
	}
	return r.store.Config(), nil
}

// Records returns every stored record, tombstones included, sorted.
func (r *Reflector) Records() ([]zones.Record, error) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.state != stateStarted {
		return nil, ErrNotRunning
	}
	return r.store.Records(), nil
}

// Problems validates the configuration in effect: merges from other
// reflectors may leave references a single commit would have refused.
func (r *Reflector) Problems() error {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.state != stateStarted {
		return ErrNotRunning
	}
	return r.store.Problems()
}

// Neighbors lists the BGP neighbors (peer reflectors and clients) and
// their session states.
func (r *Reflector) Neighbors(ctx context.Context) ([]bgp.NeighborStatus, error) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.state != stateStarted {
		return nil, ErrNotRunning
	}
	return r.speaker.Neighbors(ctx)
}
