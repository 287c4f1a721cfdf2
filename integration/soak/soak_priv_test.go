//go:build privileged

package soak

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

// Run length and seed. make soak sets them; make test runs the default:
// three minutes with a new seed, printed.
const (
	envDuration = "INOF_SOAK_DURATION"
	envSeed     = "INOF_SOAK_SEED"
	envSteps    = "INOF_SOAK_STEPS" // stop after this many steps (0: by duration)
	envSkip     = "INOF_SOAK_SKIP"  // fault kinds not drawn, comma-separated names

	defaultDuration = 3 * time.Minute
)

// TestPrivSoak runs the fabric under random faults for INOF_SOAK_DURATION
// (3 minutes by default) from INOF_SOAK_SEED (a new one by default), and
// fails on any divergence after settle, cross-zone leak, unexpected reason
// or duplicate notification. The seed, every step and every finding are
// logged; `INOF_SOAK_SEED=N` runs the same schedule again.
func TestPrivSoak(t *testing.T) {
	d := defaultDuration
	if s := os.Getenv(envDuration); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("%s=%q: %v", envDuration, s, err)
		}
	}
	seed := rand.Uint64()
	if s := os.Getenv(envSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 0, 64); err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
	}
	steps := 0
	if s := os.Getenv(envSteps); s != "" {
		var err error
		if steps, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", envSteps, s, err)
		}
	}
	fmt.Fprintf(os.Stderr, "soak: seed %d, duration %s (rerun: make soak SEED=%d DURATION=%s)\n", seed, d, seed, d)
	t.Logf("soak: seed %d, duration %s", seed, d)
	kinds, err := KindsWithout(os.Getenv(envSkip))
	if err != nil {
		t.Fatalf("%s: %v", envSkip, err)
	}
	if len(kinds) < len(Kinds()) {
		t.Logf("soak: drawing only %v", kinds)
	}
	r := startRun(t, seed)
	sched := NewSchedule(seed, r.lay, kinds...)
	end := time.Now().Add(d)
	for time.Now().Before(end) && (steps == 0 || r.step < steps) && !r.giveUp() {
		r.runStep(sched.Next())
	}
	r.report()
}
