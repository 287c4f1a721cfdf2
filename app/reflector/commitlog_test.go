package reflector

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/internal/syncbuf"
	"github.com/openinof/inof/zones"
)

// TestCommitLogsDurable: a commit is logged once with the moment it was
// durable (what the zone-change benchmark splits its figure at), within
// the call; an aborted transaction (an API dry run) logs nothing.
func TestCommitLogsDurable(t *testing.T) {
	f := bgp.NewFakeFabric()
	var logs syncbuf.Buffer
	r := startReflector(t, Config{Options: testOptions(t, r1ID, nil, nil), NewSpeaker: fakeSpeakers(f, nil),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	dry := errors.New("dry run")
	if _, err := r.Commit(ctx, func(tx *zones.Tx) error {
		if err := tx.CreateZone("a"); err != nil {
			return err
		}
		return dry
	}); !errors.Is(err, dry) {
		t.Fatalf("aborted commit: %v", err)
	}
	before := time.Now()
	if _, err := r.Commit(ctx, func(tx *zones.Tx) error { return tx.CreateZone("b", zones.MustParseMember("10.0.0.1")) }); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	// Anchored at the end of the line: a good commit logs no error.
	re := regexp.MustCompile(`(?m)level=INFO msg="configuration committed" records=1 write=\S+ durable_at=(\S+) originate=\S+ identity=\S+ via=\S*$`)
	ms := re.FindAllStringSubmatch(logs.String(), -1)
	if len(ms) != 1 {
		t.Fatalf("%d commit lines, want 1:\n%s", len(ms), logs.String())
	}
	at, err := time.Parse(time.RFC3339Nano, ms[0][1])
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) || at.After(after) {
		t.Errorf("durable_at %v not within the call [%v, %v]", at, before, after)
	}
}
