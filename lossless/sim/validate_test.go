package sim

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

func mustRun(t *testing.T, s Scenario) Result {
	t.Helper()
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fluidSettled integrates the fluid model and returns the mean queue and
// the queue's peak-to-peak swing over the last quarter of the run.
func fluidSettled(t *testing.T, f FluidParams, d, step time.Duration) (mean, swing float64) {
	t.Helper()
	tr, err := Fluid(f, d, step, 10*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, sum, k := math.Inf(1), 0.0, 0.0, 0
	for i, us := range tr.TimeUs {
		if us < 0.75*float64(d.Microseconds()) {
			continue
		}
		q := tr.QueueBytes[i]
		lo, hi, sum, k = min(lo, q), max(hi, q), sum+q, k+1
	}
	return sum / float64(k), hi - lo
}

// The closed form reproduces the published fixed points (CoNEXT'16, 40G
// defaults): q* ≈ 23 KB, 119 KB, 158 KB at N = 2, 8, 10.
func TestFixedPointClosedForm(t *testing.T) {
	for n, want := range map[int]float64{2: 23e3, 8: 119e3, 10: 158e3} {
		_, q := FixedPoint(PaperFluid40G(n, 0))
		if math.Abs(q-want)/want > 0.01 {
			t.Errorf("N=%d: q* = %.0f B, published ≈ %.0f B", n, q, want)
		}
	}
}

// The DES's steady-state queue against the fluid model's fixed point, and
// each flow's rate against C/N, with the paper's 40G defaults.
func TestDESFixedPoint(t *testing.T) {
	for _, n := range []int{2, 8, 10} {
		s := Paper40G(n)
		s.Duration, s.Warmup = 100*time.Millisecond, 40*time.Millisecond
		if n == 2 { // the per-flow check needs the longer average
			s.Duration, s.Warmup = 150*time.Millisecond, 50*time.Millisecond
		}
		res := mustRun(t, s)
		f := PaperFluid40G(n, 0)
		_, closed := FixedPoint(f)
		settled, _ := fluidSettled(t, f, 150*time.Millisecond, 500*time.Nanosecond)
		q := res.StorageQueue.Mean
		t.Logf("N=%d: DES mean queue %.0f B; fluid settles at %.0f B (%+.0f %%); closed-form q* %.0f B (%+.0f %%)",
			n, q, settled, 100*(q/settled-1), closed, 100*(q/closed-1))
		if math.Abs(q/closed-1) > 0.25 {
			t.Errorf("N=%d: DES queue %.0f B not within 25 %% of the closed-form q* %.0f B", n, q, closed)
		}
		fair := res.LinkGbps / float64(n)
		if n > 2 {
			lo, hi := fair, fair
			for _, fl := range res.Flows {
				lo, hi = min(lo, fl.Gbps), max(hi, fl.Gbps)
			}
			t.Logf("OPEN N=%d: per-flow rates %.2f..%.2f Gb/s (%+.1f %% .. %+.1f %% of C/N), Jain %.4f: the 5 %% bound is not checked", n, lo, hi, 100*(lo/fair-1), 100*(hi/fair-1), res.JainAll)
			continue
		}
		for i, fl := range res.Flows {
			t.Logf("N=%d flow %d: %.3f Gb/s (%+.1f %% of C/N)", n, i, fl.Gbps, 100*(fl.Gbps/fair-1))
			if math.Abs(fl.Gbps/fair-1) > 0.05 {
				t.Errorf("N=%d flow %d: %.2f Gb/s, not within 5 %% of C/N = %.2f", n, i, fl.Gbps, fair)
			}
		}
	}
}

// TestDESFairShareLargeN is the per-flow 5 % bound at N = 8 and 10. DCQCN
// with the 40G defaults (g = 1/256, one CNP per 50 µs reaching every flow)
// converges to fair shares slowly: over 60 ms after 40 ms the flows spread
// -12 %..+16 % of C/N (N = 8); the bound needs a 600 ms average after 100 ms
// of warm-up (seeds 1–3 measured: N = 8 within -4.0 %..+2.9 %, N = 10
// within -3.6 %..+4.4 %). The run is deterministic for its seed, so it is
// checked in full, but only without the race detector (10× slower); make
// test runs this package race-free as well.
func TestDESFairShareLargeN(t *testing.T) {
	if raceEnabled {
		t.Skip("600 ms of simulated incast under -race takes minutes; make test runs this in its race-free pass")
	}
	for _, n := range []int{8, 10} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			t.Parallel()
			s := Paper40G(n)
			s.Seed = 1
			s.Duration, s.Warmup = 700*time.Millisecond, 100*time.Millisecond
			res := mustRun(t, s)
			fair := res.LinkGbps / float64(n)
			for i, fl := range res.Flows {
				t.Logf("flow %d: %.3f Gb/s (%+.1f %% of C/N)", i, fl.Gbps, 100*(fl.Gbps/fair-1))
				if math.Abs(fl.Gbps/fair-1) > 0.05 {
					t.Errorf("flow %d: %.2f Gb/s, not within 5 %% of C/N = %.2f", i, fl.Gbps, fair)
				}
			}
		})
	}
}

// Fluid model stability at 85 µs feedback delay (CoNEXT'16 §stability):
// unstable at N = 10, stable at N = 2 and 64. At N = 64 the fixed point
// lies above Kmax, so the published (linearised) analysis continues the
// ramp past Kmax; with RED's step to 1 the model oscillates there.
func TestFluidStability(t *testing.T) {
	const d = 85 * time.Microsecond
	for _, c := range []struct {
		n        int
		linear   bool
		unstable bool
	}{{2, false, false}, {10, false, true}, {64, true, false}, {64, false, true}} {
		f := PaperFluid40G(c.n, d)
		f.LinearAboveKmax = c.linear
		mean, swing := fluidSettled(t, f, 150*time.Millisecond, 500*time.Nanosecond)
		_, ref := FixedPoint(f)
		if !c.linear {
			ref = min(ref, f.KmaxBytes) // marking jumps to 1 above Kmax
		}
		t.Logf("N=%d linear-above-Kmax=%v: settled mean %.0f B, swing %.0f B = %.2f of q* %.0f B", c.n, c.linear, mean, swing, swing/ref, ref)
		if got := swing/ref > 0.5; got != c.unstable {
			t.Errorf("N=%d linear=%v: swing %.2f × q*, want unstable=%v", c.n, c.linear, swing/ref, c.unstable)
		}
	}
}

// The DES shows the same: with 85 µs of feedback delay the queue at
// N = 10 swings between empty and Kmax (the link idles), while N = 2 and
// N = 64 (ramp continued past Kmax) keep the link busy.
func TestDESStability(t *testing.T) {
	for _, c := range []struct {
		n        int
		linear   bool
		unstable bool
	}{{2, false, false}, {10, false, true}, {64, true, false}} {
		s := Paper40G(c.n)
		s.Duration, s.Warmup = 60*time.Millisecond, 20*time.Millisecond
		s.FeedbackDelay = 85 * time.Microsecond
		s.ECN.LinearAboveKmax = c.linear
		res := mustRun(t, s)
		t.Logf("N=%d: utilisation %.3f, queue p50 %d B, p99 %d B", c.n, res.Utilisation, res.StorageQueue.P50, res.StorageQueue.P99)
		if got := res.Utilisation < 0.95; got != c.unstable {
			t.Errorf("N=%d: utilisation %.3f, want oscillation (link idles, < 0.95) = %v", c.n, res.Utilisation, c.unstable)
		}
	}
}
