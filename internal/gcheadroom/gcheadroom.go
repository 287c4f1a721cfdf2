// Package gcheadroom keeps the Go collector's heap goal at least a fixed
// number of bytes above the live heap.
//
// With GOGC at its default of 100 the collector runs whenever the heap
// has doubled since the last cycle. A daemon whose live heap is small
// (a switch agent's is a few tens of MB) but which makes a lot of
// short-lived garbage at high event rates then collects many times a
// second: the collector took 12 % of a switch agent's CPU and 28 % of a
// reflector's under churn (docs/history/performance.md, "Churn, fourth round"). Headroom raises GOGC after every cycle so that the next goal
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

// The runtime's heap goal is live + (live + stacks + globals)·GOGC/100
// (runtime/mgcpacer.go): the tuner reads all three, the live heap first.
var samples = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// minScan is the Go runtime's heap minimum at GOGC 100.
const minScan = 4 << 20

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
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	base := int(int32(s[0].Value.Uint64())) // -1 (off) wraps around as a uint64
	if base < 0 {
		return nil
	}
	t := &Tuner{headroom: headroom, base: base, percent: base}
	for _, name := range samples {
		t.sample = append(t.sample, metrics.Sample{Name: name})
	}
	t.tune()
	t.arm()
	return t
}

// sentinel is garbage the collector finds once a cycle: its cleanup is
// how the tuner learns that a cycle ended. 16 bytes, so that the tiny
// allocator (below 16 bytes, objects share a block and their cleanups may
// never run) leaves it alone.
type sentinel [16]byte

// arm allocates the next sentinel and drops it.
func (t *Tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets GOGC from the last cycle's figures; false once stopped.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	var live, scan uint64
	for i, s := range t.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			continue // not in this runtime: the goal counts what is
		}
		scan += s.Value.Uint64()
		if i == 0 {
			live = s.Value.Uint64()
		}
	}
	p := Percent(live, scan, t.headroom, t.base)
	// A goal short of the headroom is raised at once; one a little above
	// it is left (small moves are not worth a change of the pacing).
	if p > t.percent || p < t.percent-t.percent/10 || p == t.base && p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

// Percent is the GOGC that makes the heap goal at least live + headroom,
// and at least base. scan is the live heap with the stacks and globals the
// collector scans: the runtime's goal is live + scan·GOGC/100, but never
// below its heap minimum, 4 MiB·GOGC/100, which decides for a small heap.
func Percent(live, scan, headroom uint64, base int) int {
	p := math.Ceil(float64(live+headroom) * 100 / minScan) // by the heap minimum
	if scan > 0 {
		p = min(p, math.Ceil(float64(headroom)*100/float64(scan)))
	}
	if p > math.MaxInt32 {
		p = math.MaxInt32
	}
	return max(int(p), base)
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
		if os.Getenv("GOGC") != "" {
			return "off: GOGC is set"
		}
		return "off"
	}
	return fmt.Sprintf("%d MiB above the live heap, GOGC at least %d", t.headroom>>20, t.base)
}
