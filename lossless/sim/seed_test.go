package sim

import (
	"math"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
)

func seedIncast(t *testing.T, storage, other int) Result {
	t.Helper()
	p := lossless.Default()
	s, err := FromProfile(p, port(t, p, "server"), storage, other)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration, s.Warmup = 10*time.Millisecond, 3*time.Millisecond
	return mustRun(t, s)
}

// The seed test spec (OpenCC): a 4-to-1 RoCE + TCP mix under WRR 50:50
// gives each class about 47 % of the port (error <= 5 points, ratio error
// <= 5 %), RoCE latency p99 under 1 ms and no RoCE drops.
func TestSeedMix4to1(t *testing.T) {
	res := seedIncast(t, 2, 2)
	roce, tcp := res.Classes[ClassStorage], res.Classes[ClassOther]
	rShare, tShare := roce.GoodputGbps/res.LinkGbps, tcp.GoodputGbps/res.LinkGbps
	t.Logf("RoCE goodput %.1f %%, TCP %.1f %% of line rate; RoCE p99 %v; drops RoCE %d TCP %d", 100*rShare, 100*tShare, roce.LatencyP99, roce.Drops, tcp.Drops)
	for name, share := range map[string]float64{"RoCE": rShare, "TCP": tShare} {
		if math.Abs(share-0.47) > 0.05 {
			t.Errorf("%s: %.1f %% of line rate, want 47 %% ± 5", name, 100*share)
		}
	}
	if ratio := rShare / tShare; math.Abs(ratio-1) > 0.05 {
		t.Errorf("RoCE:TCP = %.3f, want 1 ± 5 %% under WRR 50:50", ratio)
	}
	if roce.LatencyP99 >= time.Millisecond {
		t.Errorf("RoCE p99 latency %v, want < 1 ms", roce.LatencyP99)
	}
	if roce.Drops != 0 {
		t.Errorf("%d RoCE drops, want none", roce.Drops)
	}
}

// The seed test spec's 8-to-1: no RoCE drops, egress >= 95 % of line rate.
func TestSeedIncast8to1(t *testing.T) {
	res := seedIncast(t, 8, 0)
	t.Logf("egress %.1f %% of line rate, drops %d, CNPs %d, pauses %d, queue p99 %d B", 100*res.Utilisation, res.Classes[ClassStorage].Drops, res.CNPs, res.PauseFrames, res.Queue.P99)
	if res.Utilisation < 0.95 {
		t.Errorf("egress %.1f %% of line rate, want >= 95 %%", 100*res.Utilisation)
	}
	if d := res.Classes[ClassStorage].Drops; d != 0 {
		t.Errorf("%d RoCE drops, want none", d)
	}
}
