package sim

import (
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
)

// port returns the default profile's port class of a name.
func port(t *testing.T, p lossless.Profile, name string) lossless.Port {
	t.Helper()
	for _, pt := range p.Ports {
		if pt.Name == name {
			return pt
		}
	}
	t.Fatalf("no port class %q", name)
	return lossless.Port{}
}

// pfcIncast is an 8-to-1 incast at line rate with ECN off: only PFC keeps
// it lossless. Half the bytes go in 64 B frames, the small-packet share
// the SONiC headroom model assumes for cell occupancy.
func pfcIncast(t *testing.T, cable string, headroomScale float64) (Result, int) {
	t.Helper()
	p := lossless.Default()
	s, err := FromProfile(p, port(t, p, cable), 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.ECN.Enabled = false
	s.Duration, s.Warmup = time.Millisecond, 0
	for i := range s.Flows {
		s.Flows[i].SmallBytePercent = int(p.SwitchBuffer.SmallPacketPercent)
	}
	s.Switch.HeadroomBytes = int(float64(s.Switch.HeadroomBytes) * headroomScale)
	return mustRun(t, s), s.Switch.HeadroomBytes
}

// The calculator and the simulator check each other: with the headroom
// lossless computes for the cable, PFC holds an 8-to-1 incast at 100G
// without a drop; with 60 % of it, frames are dropped.
func TestPFCHeadroom(t *testing.T) {
	for _, c := range []struct {
		cable     string
		scale     float64
		wantDrops bool
	}{
		{"server", 1, false}, {"leaf", 1, false}, {"spine", 1, false},
		{"server", 0.6, true}, {"leaf", 0.6, true}, {"spine", 0.6, true},
	} {
		res, hdrm := pfcIncast(t, c.cable, c.scale)
		drops := res.Classes[ClassStorage].Drops
		t.Logf("%s ×%.1f: headroom %d B, most used %d B, drops %d, pause frames %d", c.cable, c.scale, hdrm, res.MaxHeadroomBytes, drops, res.PauseFramesTotal)
		if res.PauseFramesTotal == 0 {
			t.Errorf("%s: no PFC pause in an 8-to-1 incast without ECN", c.cable)
		}
		if (drops > 0) != c.wantDrops {
			t.Errorf("%s ×%.1f: %d drops, want drops = %v", c.cable, c.scale, drops, c.wantDrops)
		}
	}
}

// The ordering rule: ECN must mark before PFC pauses. With a PFC XOFF
// threshold below the queue DCQCN settles at, PFC keeps pausing in steady
// state; with the default (valid) profile there is no pause after the
// initial burst.
func TestECNBeforePFC(t *testing.T) {
	p := lossless.Default()
	for _, c := range []struct {
		name      string
		xoff      uint64
		wantPause bool
	}{{"valid", p.PFC.XoffThresholdBytes, false}, {"kmax above xoff", 100_000, true}} {
		q := p
		q.PFC.XoffThresholdBytes = c.xoff
		s, err := FromProfile(q, port(t, q, "server"), 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.Duration, s.Warmup = 10*time.Millisecond, 3*time.Millisecond
		res := mustRun(t, s)
		t.Logf("%s: Kmax %d B, XOFF threshold %d B: queue mean %.0f B, pause frames %d after warmup (%d in all)",
			c.name, s.ECN.KmaxBytes, c.xoff, res.StorageQueue.Mean, res.PauseFrames, res.PauseFramesTotal)
		if (res.PauseFrames > 0) != c.wantPause {
			t.Errorf("%s: %d pause frames after warmup, want pauses = %v", c.name, res.PauseFrames, c.wantPause)
		}
	}
}
