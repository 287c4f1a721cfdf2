package reflector

import (
	"context"
	"errors"

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
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.admin.Commit(ctx, edit)
}

// Config returns the configuration in effect (a copy).
func (r *Reflector) Config() (*zones.Config, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.store.Config(), nil
}

// Records returns every stored record, tombstones included, sorted.
func (r *Reflector) Records() ([]zones.Record, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.store.Records(), nil
}

// Problems validates the configuration in effect: merges from other
// reflectors may leave references a single commit would have refused.
func (r *Reflector) Problems() error {
	rn, release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	return rn.store.Problems()
}

// Neighbors lists the BGP neighbors (peer reflectors and clients) and
// their session states.
func (r *Reflector) Neighbors(ctx context.Context) ([]bgp.NeighborStatus, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.speaker.Neighbors(ctx)
}

// NeighborsAdvertised is Neighbors with the records advertised to each
// neighbor counted (bgp.Speaker.NeighborsAdvertised: costly, for the
// admin's session list only).
func (r *Reflector) NeighborsAdvertised(ctx context.Context) ([]bgp.NeighborStatus, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.speaker.NeighborsAdvertised(ctx)
}
