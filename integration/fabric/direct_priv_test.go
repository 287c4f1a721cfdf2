//go:build privileged

package fabric

import (
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// probeTarget is a probe device with one NIC on switch sw, registered by
// the test as an NVMe/TCP target (registerTarget).
func probeTarget(name, sw string) topo.Device { return probeHost(name, sw) }

// registerTarget registers probe p as an NVMe/TCP target on port 4420.
func registerTarget(t *testing.T, p *topo.Probe) {
	t.Helper()
	if err := p.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, subNQN); err != nil {
		t.Fatal(err)
	}
}

// neverHeard fails the test if any notice p read since its last drain is
// about target.
func neverHeard(t *testing.T, p *topo.Probe, target netip.Addr, when string) {
	t.Helper()
	for _, n := range topo.Notices(p.Drain()) {
		if n.N.Target == target {
			t.Errorf("%s heard of %s %s: %+v", p.Link.Device.Name, target, when, n.N)
		}
	}
}

// backUp registers target p again after its link came back, until host q
// hears it active (a frame sent before the carrier is up is lost).
func backUp(t *testing.T, p, q *topo.Probe) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		registerTarget(t, p)
		r, ok := q.Next(time.Second)
		for _, n := range topo.Notices([]topo.Received{r}) {
			if ok && n.N.Host == q.Addr() && n.N.Target == p.Addr() && n.N.State == inof.StateActive {
				return
			}
		}
	}
	t.Fatalf("%s never heard %s active again", q.Link.Device.Name, p.Addr())
}

// awaitAll waits until probe p received a notification in state about
// each of targets, in any order (one frame may carry several), and
// returns them.
func awaitAll(t *testing.T, p *topo.Probe, state inof.State, targets ...netip.Addr) []topo.Notice {
	t.Helper()
	left := map[netip.Addr]bool{}
	for _, a := range targets {
		left[a] = true
	}
	var out []topo.Notice
	deadline := time.Now().Add(wait)
	for len(left) > 0 {
		r, ok := p.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("%s: no notification within %s for %v %s", p.Link.Device.Name, wait, left, state)
		}
		for _, n := range topo.Notices([]topo.Received{r}) {
			if n.N.Host == p.Addr() && left[n.N.Target] && n.N.State == state {
				delete(left, n.N.Target)
				out = append(out, n)
			}
		}
	}
	return out
}

// startSettled starts switch sw, waits until every reflector has every
// switch again (none in direct mode) and sw logged that its view settled,
// and returns sw's log size before the start.
func startSettled(t *testing.T, f *topo.Fabric, sw *topo.Node) int {
	t.Helper()
	mark := sw.LogSize()
	if err := sw.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.WaitLog(mark, `msg="fabric view settled`, wait); err != nil {
		t.Fatal(err)
	}
	return mark
}

// zoneOn runs `inofctl zone ARGS --yes` against node n's API.
func zoneOn(t *testing.T, n *topo.Node, args ...string) {
	t.Helper()
	if _, err := n.Inofctl(append(append([]string{"zone"}, args...), "--yes")...); err != nil {
		t.Fatal(err)
	}
}

// directSpec is one switch alone (no reflector): targets t1 and t2, hosts
// qa and qb, all probes.
func directSpec() topo.Spec {
	return topo.Spec{Switches: []string{"sw1"}, Devices: []topo.Device{probeTarget("t1", "sw1"), probeTarget("t2", "sw1"),
		probeHost("qa", "sw1"), probeHost("qb", "sw1")}}
}

// TestPrivDirectMode: one switch without reflectors (direct mode, the real
// inofd) keeps the zoning itself. Zones z1 {t1, qa} and z2 {t2, qb} are
// made through its API with inofctl; the hosts hear only their zone's
// target. Cutting t1's link tells qa (reason 1), not qb; adding qa to z2
// and taking it out of z1 tells qa t2 active and t1 inactive (reason 4),
// and qb nothing. The switch restarts (SIGTERM, start): nobody hears
// anything through its settle time, the zoning and its history come back
// from the store, and a change after the restart still reaches qa. No BGP
// runs: nothing listens on or connects to port 179.
func TestPrivDirectMode(t *testing.T) {
	requireSwitchRole(t)
	f := topo.Start(t, directSpec())
	sw := f.Node("sw1")
	if _, err := sw.WaitLog(0, `msg="direct mode: no reflectors, no BGP`, wait); err != nil {
		t.Fatal(err)
	}
	t1, t2 := f.Node("t1").Probe(0), f.Node("t2").Probe(0)
	qa, qb := f.Node("qa").Probe(0), f.Node("qb").Probe(0)
	zoneOn(t, sw, "create", "z1", t1.Addr().String(), qa.Addr().String())
	zoneOn(t, sw, "create", "z2", t2.Addr().String(), qb.Addr().String())
	registerTarget(t, t1)
	registerTarget(t, t2)
	if _, err := sw.WaitMetric(wait, func(v float64) bool { return v == 2 }, "inof_switch_registrations"); err != nil {
		t.Fatal(err)
	}
	subscribe(t, qa)
	subscribe(t, qb)
	await(t, qa, t1.Addr(), inof.StateActive)
	await(t, qb, t2.Addr(), inof.StateActive)
	time.Sleep(quietFor)
	neverHeard(t, qa, t2.Addr(), "outside its zone")
	neverHeard(t, qb, t1.Addr(), "outside its zone")

	// Link cut: reason 1 to t1's zone only.
	cut := t1.Link.Cut(t)
	got := await(t, qa, t1.Addr(), inof.StateInactive)
	if got.N.Reason != inof.ReasonLinkDown {
		t.Errorf("qa: t1 inactive with reason %v, want %v", got.N.Reason, inof.ReasonLinkDown)
	}
	report.Record(t, "direct mode: link cut → inactive at a host (reason 1)", []time.Duration{got.At.Sub(cut)})
	t1.Link.Restore(t)
	backUp(t, t1, qa)
	time.Sleep(quietFor)
	heardNothing(t, qb, "when a target of another zone came and went")
	qa.Drain()

	// Zone change: reason 4.
	zoneOn(t, sw, "add", "z2", qa.Addr().String())
	await(t, qa, t2.Addr(), inof.StateActive)
	at := time.Now()
	zoneOn(t, sw, "remove", "z1", qa.Addr().String())
	got = await(t, qa, t1.Addr(), inof.StateInactive)
	if got.N.Reason != inof.ReasonZoneChange {
		t.Errorf("qa: t1 inactive with reason %v, want %v", got.N.Reason, inof.ReasonZoneChange)
	}
	report.Record(t, "direct mode: inofctl zone remove → inactive at a host (reason 4)", []time.Duration{got.At.Sub(at)})
	time.Sleep(quietFor)
	heardNothing(t, qb, "when another host's zones changed")
	qa.Drain()
	if out, err := sw.Inofctl("audit"); err != nil || strings.Count(out, "root") < 4 {
		t.Errorf("audit on the switch (4 zone commits by root): %v\n%s", err, out)
	}
	if out, err := sw.Inofctl("device", "list"); err != nil || !strings.Contains(out, t1.Addr().String()) ||
		!strings.Contains(out, qb.Addr().String()) {
		t.Errorf("device list on the switch: %v\n%s", err, out)
	}

	// Restart: no churn.
	if err := sw.Stop(wait); err != nil {
		t.Fatal(err)
	}
	startSettled(t, f, sw)
	time.Sleep(quietFor)
	heardNothing(t, qa, "across the switch's restart")
	heardNothing(t, qb, "across the switch's restart")
	out, err := sw.Inofctl("zone", "list")
	if err != nil || !strings.Contains(out, "z1") || !strings.Contains(out, "z2") {
		t.Fatalf("zones after the restart: %v\n%s", err, out)
	}
	zoneOn(t, sw, "add", "z1", qa.Addr().String())
	await(t, qa, t1.Addr(), inof.StateActive)
	time.Sleep(quietFor)
	heardNothing(t, qb, "when qa came back into z1")

	// No BGP: no socket on port 179 in the switch's namespace.
	if ss, err := exec.Command("ip", "netns", "exec", sw.NS.Name, "ss", "-Htan", "( sport = :179 or dport = :179 )").CombinedOutput(); err != nil ||
		strings.TrimSpace(string(ss)) != "" {
		t.Errorf("BGP sockets in direct mode (%v): %s", err, ss)
	}
	if strings.Contains(sw.Log(), `msg="BGP session established"`) {
		t.Errorf("a BGP session in direct mode:\n%s", sw.Log())
	}
}

// TestPrivDirectToFabric: a switch zoned in direct mode joins a fabric as
// docs/operations.md says: `inofctl backup` of its store, `inofd restore`
// of it on the (stopped) new reflector, the reflector started, the switch
// restarted with the reflector in its configuration. No host hears
// anything across the move (through the switch's settle time); the
// reflector holds the zones; a zone change on the reflector then reaches
// the switch's hosts (qb into z1: t1 active), qa hearing nothing.
func TestPrivDirectToFabric(t *testing.T) {
	requireSwitchRole(t)
	requireAPI(t)
	direct := true
	spec := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"sw1"}, Passive: []string{"rr1"},
		Devices: []topo.Device{probeTarget("t1", "sw1"), probeTarget("t2", "sw1"), probeHost("qa", "sw1"), probeHost("qb", "sw1")},
		SwitchConfig: func(_ string, cfg map[string]any) {
			if direct {
				delete(cfg, "reflectors")
			}
		}}
	calmBFD(&spec)
	f := topo.Start(t, spec)
	sw, rr := f.Node("sw1"), f.Node("rr1")
	t1, t2 := f.Node("t1").Probe(0), f.Node("t2").Probe(0)
	qa, qb := f.Node("qa").Probe(0), f.Node("qb").Probe(0)
	zoneOn(t, sw, "create", "z1", t1.Addr().String(), qa.Addr().String())
	zoneOn(t, sw, "create", "z2", t2.Addr().String(), qb.Addr().String())
	registerTarget(t, t1)
	registerTarget(t, t2)
	subscribe(t, qa)
	subscribe(t, qb)
	await(t, qa, t1.Addr(), inof.StateActive)
	await(t, qb, t2.Addr(), inof.StateActive)
	time.Sleep(quietFor)
	neverHeard(t, qa, t2.Addr(), "outside its zone")
	neverHeard(t, qb, t1.Addr(), "outside its zone")

	backup := filepath.Join(f.Dir, "sw1-zones.backup")
	if _, err := sw.Inofctl("backup", backup); err != nil {
		t.Fatal(err)
	}
	inofd, err := topo.Binary("inofd")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(inofd, "restore", "--config", rr.ConfigPath(), backup).CombinedOutput(); err != nil {
		t.Fatalf("inofd restore: %v\n%s", err, out)
	}
	if err := rr.Start(); err != nil {
		t.Fatal(err)
	}
	direct = false
	if err := sw.Stop(wait); err != nil {
		t.Fatal(err)
	}
	if err := sw.Rewrite(nil); err != nil {
		t.Fatal(err)
	}
	mark := startSettled(t, f, sw)
	if _, err := sw.WaitLog(mark, `zone store of an earlier direct mode not used`, wait); err != nil {
		t.Error(err)
	}
	time.Sleep(quietFor)
	heardNothing(t, qa, "across the move to a fabric")
	heardNothing(t, qb, "across the move to a fabric")
	if out, err := rr.Inofctl("zone", "list"); err != nil || !strings.Contains(out, "z1") || !strings.Contains(out, "z2") {
		t.Fatalf("zones on the reflector: %v\n%s", err, out)
	}
	if strings.Contains(sw.Log()[mark:], `msg="zone configuration changed"`) {
		t.Error("the reflector's zoning differed from the switch's own after the move")
	}
	if _, err := sw.Inofctl("zone", "create", "z3", qa.Addr().String(), "--yes"); err == nil {
		t.Error("the switch still takes zoning edits in a fabric")
	}
	zoneOn(t, rr, "add", "z1", qb.Addr().String())
	await(t, qb, t1.Addr(), inof.StateActive)
	time.Sleep(quietFor)
	heardNothing(t, qa, "when qb joined its zone")
}

// TestPrivReflectorBoxLeaf: a reflector box is a leaf too (two processes
// in one namespace, the switch agent on its own address, metrics port and
// state directory; docs/operations.md). Target ta and host qa sit on the
// box's access ports, target tb and host qb on client leaf leaf1: each
// host sees both targets, across the box and back. Then the box crashes
// (reflector and switch agent SIGKILLed) and comes back: under graceful
// restart nobody hears anything through the switches' settle time. Cutting
// ta's link then tells qa and qb (reason 1), and tb's too.
func TestPrivReflectorBoxLeaf(t *testing.T) {
	requireSwitchRole(t)
	spec := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"box1", "leaf1"}, OnReflector: map[string]string{"box1": "rr1"},
		Devices: []topo.Device{probeTarget("ta", "box1"), probeHost("qa", "box1"), probeTarget("tb", "leaf1"), probeHost("qb", "leaf1")}}
	calmBFD(&spec)
	f := topo.Start(t, spec)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	rr, box, leaf := f.Node("rr1"), f.Node("box1"), f.Node("leaf1")
	ta, tb := f.Node("ta").Probe(0), f.Node("tb").Probe(0)
	qa, qb := f.Node("qa").Probe(0), f.Node("qb").Probe(0)
	registerTarget(t, ta)
	registerTarget(t, tb)
	subscribe(t, qa)
	subscribe(t, qb)
	for _, q := range []*topo.Probe{qa, qb} {
		awaitAll(t, q, inof.StateActive, ta.Addr(), tb.Addr())
	}
	time.Sleep(quietFor)
	records := map[string]float64{}
	for _, sw := range []*topo.Node{box, leaf} {
		v, err := sw.Metric("inof_switch_device_records")
		if err != nil {
			t.Fatal(err)
		}
		records[sw.Name] = v
	}
	qa.Drain()
	qb.Drain()

	// The box crashes: the reflector first, then its switch agent.
	if _, err := rr.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := box.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := rr.Start(); err != nil {
		t.Fatal(err)
	}
	startSettled(t, f, box)
	for _, sw := range []*topo.Node{box, leaf} {
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v == records[sw.Name] }, "inof_switch_device_records"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(bgpSettle + quietFor)
	heardNothing(t, qa, "across the reflector box's restart")
	heardNothing(t, qb, "across the reflector box's restart")

	ta.Link.Cut(t)
	tb.Link.Cut(t)
	for _, q := range []*topo.Probe{qa, qb} {
		for _, got := range awaitAll(t, q, inof.StateInactive, ta.Addr(), tb.Addr()) {
			if got.N.Reason != inof.ReasonLinkDown {
				t.Errorf("%s: %s inactive with reason %v, want %v", q.Link.Device.Name, got.N.Target, got.N.Reason, inof.ReasonLinkDown)
			}
		}
	}
}
