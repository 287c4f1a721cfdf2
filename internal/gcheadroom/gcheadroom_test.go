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
		live, headroom uint64
		base, want     int
	}{
		{live: 16 * mib, headroom: 64 * mib, base: 100, want: 400},
		{live: 10 * mib, headroom: 64 * mib, base: 100, want: 640},
		{live: 0, headroom: 64 * mib, base: 100, want: 1600},       // before the first cycle
		{live: 1 * mib, headroom: 64 * mib, base: 100, want: 1600}, // counted as 4 MiB
		{live: 1 << 30, headroom: 64 * mib, base: 100, want: 100},  // a big heap keeps Go's pacing
		{live: 1 << 30, headroom: 64 * mib, base: 250, want: 250},
		{live: 4 * mib, headroom: 1 << 62, base: 100, want: 1<<31 - 1},
	} {
		if got := Percent(c.live, c.headroom, c.base); got != c.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.live, c.headroom, c.base, got, c.want)
		}
	}
}

// read returns the runtime's current GOGC and heap goal.
func read() (gogc, goal uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// TestTunerKeepsHeadroom runs the tuner in this test process, against the
// real collector: after cycles the heap goal is at least live + headroom,
// and Stop puts GOGC back.
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC() // a cycle: the sentinel's cleanup tunes after it
		s := []metrics.Sample{{Name: liveMetric}}
		metrics.Read(s)
		live := s[0].Value.Uint64()
		gogc, goal := read()
		if gogc > 100 && goal >= live+headroom*9/10 {
			t.Logf("live %d KiB: GOGC %d, goal %d MiB", live>>10, gogc, goal>>20)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s of cycles: live %d KiB, GOGC %d, goal %d MiB; want goal ≥ live + %d MiB",
				live>>10, gogc, goal>>20, headroom>>20)
		}
		time.Sleep(10 * time.Millisecond) // the cleanup goroutine runs after the cycle
	}
	if tu.GOGC() <= 100 {
		t.Errorf("GOGC() = %d, want the raised setting", tu.GOGC())
	}
	// The live heap grows: after the next cycles GOGC comes down to keep
	// the same headroom (the sentinel re-armed itself).
	raised := tu.GOGC()
	ballast := make([]byte, 64<<20)
	for {
		runtime.GC()
		if g := tu.GOGC(); g < raised/2 {
			t.Logf("live heap +64 MiB: GOGC %d → %d", raised, g)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC stayed %d with 64 MiB more live heap", tu.GOGC())
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(ballast)
	tu.Stop()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if gogc, _ := read(); gogc != 100 {
		t.Errorf("after Stop GOGC is %d, want the 100 it was", gogc)
	}
}

func TestStartLeavesOperatorsChoice(t *testing.T) {
	t.Setenv("GOGC", "150")
	if tu := Start(64 << 20); tu != nil {
		tu.Stop()
		t.Error("Start tuned although GOGC is set in the environment")
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
	var nilTuner *Tuner
	nilTuner.Stop() // fine
	if nilTuner.String() != "off" {
		t.Errorf("nil tuner String = %q", nilTuner.String())
	}
}
