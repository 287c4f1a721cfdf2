package reflector

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/internal/syncbuf"
	"github.com/openinof/inof/zones"
)

// TestCommitLatencyHistogram: each commit is observed in
// inof_reflector_config_commit_seconds, once per phase (write,
// originate), the figures the commit log line has.
func TestCommitLatencyHistogram(t *testing.T) {
	f := bgp.NewFakeFabric()
	reg := prometheus.NewRegistry()
	r := startReflector(t, Config{Options: testOptions(t, r1ID, nil, nil), NewSpeaker: fakeSpeakers(f, nil), Registry: reg})
	for i := range 3 {
		if _, err := r.Commit(context.Background(), func(tx *zones.Tx) error { return tx.CreateZone(fmt.Sprintf("z%d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "inof_reflector_config_commit_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					counts[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if counts["write"] != 3 || counts["originate"] != 3 {
		t.Fatalf("commit histogram counts %v, want 3 per phase", counts)
	}
}

// TestAdoptionLoggedPerMerge: a reflector that starts next to a peer
// holding many records, tombstones among them, learns them all but logs
// them at info once per merge, not once per record (issue #25: every
// tombstone was an info line); each record is a debug line.
func TestAdoptionLoggedPerMerge(t *testing.T) {
	f := bgp.NewFakeFabric()
	r1 := startReflector(t, Config{Options: testOptions(t, r1ID, []string{r2ID}, nil), NewSpeaker: fakeSpeakers(f, nil)})
	const n = 40
	for i := range n {
		createZone(t, r1, fmt.Sprintf("z%02d", i), nil)
	}
	for i := 0; i < n; i += 2 {
		if _, err := r1.Commit(context.Background(), func(tx *zones.Tx) error { return tx.DeleteZone(fmt.Sprintf("z%02d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncbuf.Buffer
	r2 := startReflector(t, Config{Options: testOptions(t, r2ID, []string{r1ID}, nil), NewSpeaker: fakeSpeakers(f, nil),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	waitStore(t, r2, "every record of r1", func(m map[zones.Key]zones.Record) bool {
		deleted := 0
		for _, rec := range m {
			if rec.Kind == zones.KindZone && rec.Deleted {
				deleted++
			}
		}
		return len(m) >= n && deleted == n/2
	})
	// The store has them before the merge's log lines are written.
	var out string
	var info, debug, perRecord int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out = logs.String()
		info = strings.Count(out, `level=INFO msg="configuration adopted from peer reflectors"`)
		debug = strings.Count(out, `level=DEBUG msg="configuration record adopted from a peer reflector"`)
		perRecord = strings.Count(out, `level=INFO msg="configuration record adopted`)
		if debug >= n {
			break
		}
	}
	if info == 0 || info > n/4 || debug < n || perRecord != 0 {
		t.Fatalf("%d info lines and %d debug lines for %d records (%d tombstones):\n%s", info, debug, n, n/2, out)
	}
}
