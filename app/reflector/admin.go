package reflector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/zones"
)

// The in-process admin API. The gRPC API (inofctl) wraps these calls.

// ErrNotReplicated is returned with the committed records when the
// reflector stopped before it could originate them: they are in the store
// and go out at the next start.
var ErrNotReplicated = errors.New("reflector: committed but not yet replicated")

// Commit runs edit in one store transaction and commits it
// (zoneadmin.Admin.Commit): the whole resulting configuration is validated
// and every change written atomically (zones.Tx). It then originates the
// changed records and waits for that (bounded by ctx) before returning
// them. An error from edit aborts the transaction; zones.ErrConflict means
// another change landed meanwhile (a commit here or a newer version from
// another reflector): begin again. If ctx ends after the commit, the
// records are committed and are still replicated; the error then wraps
// ctx.Err().
func (r *Reflector) Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return r.admin.Commit(ctx, edit)
}

// observeCommit counts a commit and its latencies (zoneadmin.Options.Observe).
func (r *Reflector) observeCommit(write, originate time.Duration) {
	r.m.commits.Add(1)
	r.m.commitLatency.WithLabelValues("write").Observe(write.Seconds())
	r.m.commitLatency.WithLabelValues("originate").Observe(originate.Seconds())
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
	release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return r.store.Config(), nil
}

// Records returns every stored record, tombstones included, sorted.
func (r *Reflector) Records() ([]zones.Record, error) {
	release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return r.store.Records(), nil
}

// Problems validates the configuration in effect: merges from other
// reflectors may leave references a single commit would have refused.
func (r *Reflector) Problems() error {
	release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	return r.store.Problems()
}

// Neighbors lists the BGP neighbors (peer reflectors and clients) and
// their session states.
func (r *Reflector) Neighbors(ctx context.Context) ([]bgp.NeighborStatus, error) {
	release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return r.speaker.Neighbors(ctx)
}

// NeighborsAdvertised is Neighbors with the records advertised to each
// neighbor counted (bgp.Speaker.NeighborsAdvertised: costly, for the
// admin's session list only).
func (r *Reflector) NeighborsAdvertised(ctx context.Context) ([]bgp.NeighborStatus, error) {
	release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return r.speaker.NeighborsAdvertised(ctx)
}
