// Package gcheadroom keeps the Go collector's heap goal at least a fixed
// number of bytes above the live heap.
//
// With GOGC at its default of 100 the collector runs whenever the heap
// has doubled since the last cycle. A daemon whose live heap is small
// (a switch agent's is a few tens of MB) but which makes a lot of
// short-lived garbage at high event rates then collects many times a
// second, and the collector takes a fifth of its CPU (docs/performance.md,
// "Churn"). Headroom raises GOGC after every cycle so that the next goal
// is at least live + headroom, and never lowers it below the process's
// own setting: a heap larger than the headroom keeps Go's behaviour, so a
// reflector holding millions of devices grows no further than before.
package gcheadroom

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// liveMetric is the heap the last completed cycle marked live.
const liveMetric = "/gc/heap/live:bytes"

// minLive is the Go runtime's heap minimum at GOGC 100.
const minLive = 4 << 20

// Tuner re-computes GOGC after every garbage collection cycle. It changes
// a process-wide setting: run at most one.
type Tuner struct {
	headroom uint64
	base     int // the GOGC in force before the tuner: never goes below

	mu      sync.Mutex
	stopped bool
	percent int // last set
	sample  []metrics.Sample
}

// Start makes a tuner that keeps the heap goal at least headroom bytes
// above the live heap. It returns nil (nothing to stop) when headroom is
// zero, when the GOGC environment variable is set (the operator's choice
// is left alone) or when the collector is off.
func Start(headroom uint64) *Tuner {
	if headroom == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base < 0 {
		return nil
	}
	t := &Tuner{headroom: headroom, base: base, percent: base,
		sample: []metrics.Sample{{Name: liveMetric}}}
	t.tune()
	t.arm()
	return t
}

// sentinel is garbage the collector finds once a cycle: its cleanup is
// how the tuner learns that a cycle ended. It holds a pointer so that it
// is not batched with other tiny objects (whose cleanups may never run).
type sentinel struct {
	_ *byte
	_ [8]byte
}

// arm allocates the next sentinel and drops it.
func (t *Tuner) arm() {
	s := &sentinel{}
	runtime.AddCleanup(s, func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets GOGC from the live heap; false once stopped.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return true
	}
	p := Percent(t.sample[0].Value.Uint64(), t.headroom, t.base)
	// Small moves are not worth a change of the runtime's pacing.
	if p != t.percent && (p > t.percent+t.percent/10 || p < t.percent-t.percent/10 || p == t.base) {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

// Percent is the GOGC that makes the heap goal live + headroom, and at
// least base: live·(1 + GOGC/100) ≥ live + headroom.
func Percent(live, headroom uint64, base int) int {
	// The runtime's goal is never below 4 MB·GOGC/100 (its heap minimum
	// scales with GOGC): a live heap under 4 MB, or none yet before the
	// first cycle, counts as 4 MB, so that minimum is the headroom.
	live = max(live, minLive)
	p := math.Ceil(float64(headroom) * 100 / float64(live))
	if p > math.MaxInt32 {
		p = math.MaxInt32
	}
	return max(int(p), base)
}

// GOGC is the setting last made (the process's own until the first
// change).
func (t *Tuner) GOGC() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// Stop puts GOGC back to what it was before Start; the tuner changes
// nothing after it. A nil tuner is fine.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.base)
	}
}

// String says what the tuner keeps, for the daemon's start-up log.
func (t *Tuner) String() string {
	if t == nil {
		return "off"
	}
	return fmt.Sprintf("%d MiB above the live heap, GOGC at least %d", t.headroom>>20, t.base)
}
