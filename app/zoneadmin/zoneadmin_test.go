package zoneadmin

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// TestCommit: a commit on a real bbolt store hands on exactly the keys it
// changed, journals the caller's identity, and reports its timings; an
// edit's error aborts (nothing handed on, nothing written); a hand-off
// error comes back with the committed records; an empty commit hands
// nothing on. The store survives a reopen and backs up.
func TestCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", StoreFile)
	var handed [][]zones.Key
	var handErr error
	observed := 0
	o := Options{Path: path, RouterID: inof.MustParseRouterID("10.0.0.11"),
		Hand:    func(_ context.Context, keys []zones.Key) error { handed = append(handed, keys); return handErr },
		Observe: func(write, hand time.Duration) { observed++ }}
	a, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := api.WithIdentity(context.Background(), api.Identity{Name: "user:alice", Via: "test"})
	z1 := zones.MustParseMember("10.1.0.1")
	recs, err := a.Commit(ctx, func(tx *zones.Tx) error { return tx.CreateZone("z1", z1) })
	if err != nil || len(recs) != 1 {
		t.Fatalf("commit: %v %v", recs, err)
	}
	if len(handed) != 1 || !slices.Equal(handed[0], []zones.Key{recs[0].Key}) || observed != 1 {
		t.Fatalf("handed %v, observed %d", handed, observed)
	}
	boom := errors.New("boom")
	if _, err := a.Commit(ctx, func(tx *zones.Tx) error { _ = tx.CreateZone("z2", z1); return boom }); !errors.Is(err, boom) {
		t.Fatalf("edit error: %v", err)
	}
	if a.Config().Zones["z2"] != nil || len(handed) != 1 {
		t.Fatal("an aborted edit was written or handed on")
	}
	if recs, err := a.Commit(ctx, func(*zones.Tx) error { return nil }); err != nil || len(recs) != 0 || len(handed) != 1 {
		t.Fatalf("empty commit: %v %v, handed %d", recs, err, len(handed))
	}
	handErr = boom
	recs, err = a.Commit(ctx, func(tx *zones.Tx) error { return tx.CreateZone("z3", z1) })
	if !errors.Is(err, boom) || len(recs) != 1 {
		t.Fatalf("hand-off error: %v %v", recs, err)
	}
	j, err := a.Journal()
	if err != nil || len(j) != 2 || j[0].Identity != api.IdentityFrom(ctx).String() || a.HistorySize() != zones.DefaultHistorySize {
		t.Fatalf("journal: %+v %v", j, err)
	}
	var buf bytes.Buffer
	if n, err := a.Backup(&buf); err != nil || n == 0 {
		t.Fatalf("backup: %d %v", n, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if cfg := b.Config(); cfg.Zones["z1"] == nil || cfg.Zones["z3"] == nil {
		t.Fatalf("after reopening: %+v", cfg.Zones)
	}
}
