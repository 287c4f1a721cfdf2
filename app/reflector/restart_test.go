package reflector

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/zones"
)

// TestRestartDetection: the marker says "running" during a run and "clean"
// after Stop. A start that finds what a killed run leaves behind (its
// "running" marker), a marker it cannot read, or a clean stop's marker
// starts the speaker Restarting; the first start does not.
// Every start originates the stored configuration again.
func TestRestartDetection(t *testing.T) {
	opts := testOptions(t, r1ID, nil, []string{clientID})
	var log speakerLog
	start := func() (*Reflector, *clientView) {
		f := bgp.NewFakeFabric() // a fresh fabric per run: the old speaker is gone
		r, err := New(Config{Options: opts, NewSpeaker: fakeSpeakers(f, &log)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.testStart(); err != nil {
			t.Fatal(err)
		}
		return r, startClient(t, f, clientID, r1ID)
	}
	marker := func() string {
		b, err := os.ReadFile(opts.StatePath())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	stop := func(r *Reflector) {
		if err := r.testStop(); err != nil {
			t.Fatal(err)
		}
		if m := marker(); !strings.Contains(m, `"state":"clean"`) {
			t.Fatalf("marker after Stop: %s", m)
		}
	}

	r, _ := start()
	if log.last().GracefulRestart.Restarting || r.Restarting() {
		t.Fatal("first start is a graceful restart")
	}
	zone := createZone(t, r, "kept", ipv4Members(1000))
	crashed := marker() // what a run leaves if it is killed now
	if !strings.Contains(crashed, `"state":"running"`) {
		t.Fatalf("marker while running: %s", crashed)
	}
	stop(r)

	r, client := start()
	if !log.last().GracefulRestart.Restarting || !r.Restarting() {
		t.Fatal("start after a clean stop is not a graceful restart")
	}
	client.waitFor(t, "the stored zone originated again", func(v *clientView) bool { return sameRecord(v.recs[zone.Key], zone) })
	stop(r)

	for _, m := range []string{crashed, "{torn"} {
		if err := os.WriteFile(opts.StatePath(), []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		r, client = start()
		if !log.last().GracefulRestart.Restarting || !r.Restarting() {
			t.Fatalf("start after marker %q is not a graceful restart", m)
		}
		client.waitFor(t, "the stored zone after a crash", func(v *clientView) bool { return sameRecord(v.recs[zone.Key], zone) })
		stop(r)
	}
}

// TestSecondInstanceRefused: a second reflector on the same state
// directory fails at the store's lock and leaves the marker alone.
func TestSecondInstanceRefused(t *testing.T) {
	opts := testOptions(t, r1ID, nil, nil)
	f := bgp.NewFakeFabric()
	startReflector(t, Config{Options: opts, NewSpeaker: fakeSpeakers(f, nil)})
	before, err := os.ReadFile(opts.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(Config{Options: opts, NewSpeaker: fakeSpeakers(bgp.NewFakeFabric(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Run(context.Background()); err == nil {
		t.Fatal("second instance ran")
	}
	after, err := os.ReadFile(opts.StatePath())
	if err != nil || string(after) != string(before) {
		t.Fatalf("marker changed: %s -> %s (%v)", before, after, err)
	}
}

// TestMetrics: the collector reports the stored records, commits, the
// sessions and the restart flag.
func TestMetrics(t *testing.T) {
	f := bgp.NewFakeFabric()
	reg := prometheus.NewPedanticRegistry()
	r := startReflector(t, Config{Options: testOptions(t, r1ID, nil, []string{clientID}), NewSpeaker: fakeSpeakers(f, nil), Registry: reg})
	startClient(t, f, clientID, r1ID)
	createZone(t, r, "a", ipv4Members(2))
	createZone(t, r, "b", ipv4Members(2))
	if _, err := r.Commit(context.Background(), func(tx *zones.Tx) error { return tx.DeleteZone("a") }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"inof_reflector_config_commits_total", nil, 3},
		{"inof_reflector_config_records", map[string]string{"kind": "zone", "deleted": "false"}, 1},
		{"inof_reflector_config_records", map[string]string{"kind": "zone", "deleted": "true"}, 1},
		{"inof_reflector_graceful_restart_restarting", nil, 0},
		{"inof_reflector_sessions", map[string]string{"kind": "client", "state": "established"}, 1},
		{"inof_reflector_up", nil, 1},
	} {
		if got, ok := gathered(t, reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if err := r.testStop(); err != nil {
		t.Fatal(err)
	}
	if got, ok := gathered(t, reg, "inof_reflector_up", nil); !ok || got != 0 {
		t.Errorf("inof_reflector_up after Stop = %v (found %v)", got, ok)
	}
}

// gathered returns the value of the series with exactly these labels.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestFailedStartLeavesNothing: a start that fails after opening the store
// (here: the speaker cannot be built) closes the store, restores the
// marker (none, as before a first start), and a later reflector on the
// same directory starts normally.
func TestFailedStartLeavesNothing(t *testing.T) {
	opts := testOptions(t, r1ID, nil, nil)
	boom := errors.New("no speaker")
	r, err := New(Config{Options: opts, NewSpeaker: func(bgp.Options) (bgp.Speaker, error) { return nil, boom }})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("run: %v", err)
	}
	if err := r.Run(context.Background()); err == nil {
		t.Fatal("a failed reflector ran again")
	}
	if b, err := os.ReadFile(opts.StatePath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker after a failed first start: %s %v, want none (a first start again)", b, err)
	}
	var log speakerLog
	startReflector(t, Config{Options: opts, NewSpeaker: fakeSpeakers(bgp.NewFakeFabric(), &log)})
	if log.last().GracefulRestart.Restarting {
		t.Fatal("start after a failed start is a graceful restart")
	}
}
