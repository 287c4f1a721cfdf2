//go:build privileged

package bgp_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/internal/echoprobe"
	"github.com/openinof/inof/internal/netns"
)

// inNetnsEnv tells a copy of the test binary that it runs inside the
// namespace its parent test made for it.
const inNetnsEnv = "INOF_BGP_TEST_IN_NETNS"

// TestPrivClientBFDDownWitness: real GoBGP, real BFD (3 × 50 ms) and the
// real echo probe, in a namespace of the test's own (the test binary runs
// itself again inside it, so the rules below touch nothing else). The
// reflector's BFD packets to the client are dropped (iptables): the
// client's BFD goes down while the reflector's kernel answers echo, so the
// client keeps its session and routes, and BFD back costs nothing. Then
// the reflector's echo is dropped too: the client drops the reflector at
// once, although its hold is a minute.
func TestPrivClientBFDDownWitness(t *testing.T) {
	if os.Getenv(inNetnsEnv) == "" {
		bgptest.SkipUnderRace(t)
		netns.RequireTool(t, "iptables")
		ns := netns.New(t, "bfdw")
		cmd := ns.Command(os.Args[0], "-test.run=^TestPrivClientBFDDownWitness$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("inside %s:\n%s", ns.Name, out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestPrivClientBFDDownWitness") {
			t.Fatalf("the test inside the namespace failed: %v", err)
		}
		return
	}
	var answered, silent atomic.Int32
	probe := func(ctx context.Context, o echoprobe.Options) (echoprobe.Result, error) {
		r, err := echoprobe.Probe(ctx, o)
		switch {
		case err == nil && r == echoprobe.Answered:
			answered.Add(1)
		case err == nil && r == echoprobe.Silent:
			silent.Add(1)
		}
		return r, err
	}
	waitCount := func(c *atomic.Int32, n int32, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for c.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d probes, want %d", what, c.Load(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	iptables := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, out)
		}
	}

	w := newWitness(t, bgp.BFDConfirm{Hold: time.Minute, MaxHold: time.Minute}.WithProbe(probe))
	rm := bfd.NewManager(bfd.ManagerOptions{})
	t.Cleanup(rm.Close)
	if _, err := rm.Add(bfd.Config{Key: bfd.SessionKey{Local: w.r.Addr, Peer: w.a.Addr}, DesiredMinTx: 50 * time.Millisecond,
		RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, w.am, w.r.Addr, bfd.Up)
	waitCount(&answered, 1, "the probe at BFD up")

	bfdRule := []string{"INPUT", "-i", "lo", "-p", "udp", "-s", w.r.Addr.String(), "-d", w.a.Addr.String(), "--dport", "3784", "-j", "DROP"}
	iptables(append([]string{"-A"}, bfdRule...)...)
	waitBFDState(t, w.am, w.r.Addr, bfd.Down)
	waitCount(&answered, 2, "the probe at the BFD down")
	iptables(append([]string{"-D"}, bfdRule...)...)
	waitBFDState(t, w.am, w.r.Addr, bfd.Up)
	waitStats(t, w.a, "BFD back within the hold", func(s bgp.Stats) bool { return s.BFDUnconfirmed == 1 })
	w.keptThroughout(t, 0)
	waitCount(&answered, 3, "the probe at BFD back up")

	iptables("-A", "INPUT", "-i", "lo", "-p", "icmp", "--icmp-type", "echo-request", "-d", w.r.Addr.String(), "-j", "DROP")
	iptables(append([]string{"-A"}, bfdRule...)...)
	waitBFDState(t, w.am, w.r.Addr, bfd.Down)
	bgptest.WaitState(t, w.a, w.r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	if st := w.a.Stats(); st.BFDConfirmed != 1 || silent.Load() != 1 {
		t.Fatalf("stats %+v, %d silent probes: want one confirmed down after one silent probe", st, silent.Load())
	}
}
