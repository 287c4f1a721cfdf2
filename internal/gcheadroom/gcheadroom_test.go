package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, scan, headroom uint64
		base, want           int
	}{
		{live: 16 * mib, scan: 16 * mib, headroom: 64 * mib, base: 100, want: 400},
		{live: 8 * mib, scan: 10 * mib, headroom: 64 * mib, base: 100, want: 640}, // stacks and globals count
		{live: 0, scan: 0, headroom: 64 * mib, base: 100, want: 1600},             // before the first cycle: the heap minimum
		{live: 1 * mib, scan: 1 * mib, headroom: 64 * mib, base: 100, want: 1625}, // the heap minimum decides
		{live: 1 << 30, scan: 1 << 30, headroom: 64 * mib, base: 100, want: 100},  // a big heap keeps Go's pacing
		{live: 1 << 30, scan: 1 << 30, headroom: 64 * mib, base: 250, want: 250},
		{live: 4 * mib, scan: 4 * mib, headroom: 1 << 62, base: 100, want: 1<<31 - 1},
	} {
		if got := Percent(c.live, c.scan, c.headroom, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d, %d) = %d, want %d", c.live, c.scan, c.headroom, c.base, got, c.want)
		}
	}
}

// read returns the runtime's GOGC, heap goal and live heap.
func read() (gogc, goal, live uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

// cycleUntil runs collections until ok holds for what read returns, or
// fails after 30 s.
func cycleUntil(t *testing.T, what string, ok func(gogc, goal, live uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC() // a cycle: the sentinel's cleanup tunes after it
		gogc, goal, live := read()
		if ok(gogc, goal, live) {
			t.Logf("%s: live %d KiB, GOGC %d, goal %d MiB", what, live>>10, gogc, goal>>20)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30 s of cycles: live %d KiB, GOGC %d, goal %d MiB", what, live>>10, gogc, goal>>20)
		}
		time.Sleep(10 * time.Millisecond) // the cleanup goroutine runs after the cycle
	}
}

// TestTunerKeepsHeadroom runs the tuner in this test process, against the
// real collector: the heap goal is at least live + headroom; when the live
// heap grows GOGC comes down, and when it shrinks again GOGC goes back up
// (two changes after Start: the sentinel re-armed itself); Stop puts GOGC
// back.
func TestTunerKeepsHeadroom(t *testing.T) {
	t.Setenv("GOGC", "") // an operator's GOGC would turn the tuner off
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	const headroom = 256 << 20 // far above this test binary's live heap
	tu := Start(headroom)
	if tu == nil {
		t.Fatal("Start returned nil with GOGC unset")
	}
	defer tu.Stop()
	cycleUntil(t, "small heap", func(gogc, goal, live uint64) bool { return gogc > 100 && goal >= live+headroom })
	raised, _, _ := read()

	ballast := make([]byte, 128<<20)
	cycleUntil(t, "128 MiB more live heap", func(gogc, goal, live uint64) bool {
		return gogc < raised/2 && goal >= live+headroom
	})
	lowered, _, _ := read()
	runtime.KeepAlive(ballast)
	ballast = nil

	cycleUntil(t, "the 128 MiB freed", func(gogc, goal, live uint64) bool { return gogc > lowered && goal >= live+headroom })

	tu.Stop()
	runtime.GC()
	if gogc, _, _ := read(); gogc != 100 {
		t.Errorf("after Stop GOGC is %d, want the 100 it was", gogc)
	}
}

func TestStartLeavesOperatorsChoice(t *testing.T) {
	t.Setenv("GOGC", "150")
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Error("Start tuned although GOGC is set in the environment")
	}
	var nilTuner *Tuner
	if got := nilTuner.String(); got != "off: GOGC is set" {
		t.Errorf("nil tuner with GOGC set: String = %q", got)
	}
	t.Setenv("GOGC", "")
	if tu := Start(0); tu != nil {
		tu.Stop()
		t.Error("Start tuned with no headroom")
	}
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Error("Start tuned with the collector off")
	}
	nilTuner.Stop() // fine
	if got := nilTuner.String(); got != "off" {
		t.Errorf("nil tuner String = %q", got)
	}
}
