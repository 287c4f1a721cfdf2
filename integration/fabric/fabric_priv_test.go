//go:build privileged

package fabric

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

// report collects every scenario's notify latencies; TestMain prints the
// summary after the last test (a package variable: it outlives the tests).
var report topo.LatencyReport

func TestMain(m *testing.M) {
	code := topo.Main(m)
	if s := report.Summary(); s != "" {
		fmt.Print(s)
	}
	os.Exit(code)
}

const (
	// subNQN is the target's subsystem NQN.
	subNQN = "nqn.2014-08.org.example:nvme:array1"
	// wait bounds every wait for something the fabric should do at once;
	// generous, because two shared cores may be busy with other tests.
	wait = 30 * time.Second
	// bfdBudget is what a silent switch costs before the reflector calls
	// it down: the switches' and reflector's BFD, 3 × 100 ms.
	bfdBudget = 300 * time.Millisecond
	// propagation is what the reason-7 deadline allows on top of bfdBudget
	// for the withdraw to cross the reflector and the remote switch to
	// notify (measured figures are printed, not asserted tighter).
	propagation = time.Second
)

// requireSwitchRole skips the test when the built inofd has no switch role
// yet; every scenario here needs switch agents.
func requireSwitchRole(t *testing.T) {
	t.Helper()
	ok, err := topo.HasSwitchRole()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("switch role not built yet: inofd has no --role switch")
	}
}

// target is the storage target cabled to leaf1 (and, dual-homed, to
// leaf2): inof-host announcing subNQN on NVMe/TCP port 4420.
func target(dual bool) topo.Device {
	d := topo.Device{Name: "tgt", NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420, NQN: subNQN}}}
	if dual {
		d.NICs = append(d.NICs, topo.NIC{Switch: "leaf2", Role: "target", Protocol: "tcp", Port: 4420, NQN: subNQN})
	}
	return d
}

// host is an inof-host with one NVMe/TCP host NIC on a switch.
func host(name, sw string) topo.Device {
	return topo.Device{Name: name, NICs: []topo.NIC{{Switch: sw, Role: "host", Protocol: "tcp"}}}
}

// fabricSpec is issue #10's fabric: one reflector, two switch agents, the
// target (started later by the test) and hosts h1 on leaf1 and h2 on
// leaf2, plus any extra devices.
func fabricSpec(dual bool, extra ...topo.Device) topo.Spec {
	devs := append([]topo.Device{target(dual), host("h1", "leaf1"), host("h2", "leaf2")}, extra...)
	return topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"}, Devices: devs, Passive: []string{"tgt"}}
}

// connectArgs is the nvme connect a host must run for a target NIC.
func connectArgs(h *topo.Node, t *topo.Link) string {
	return fmt.Sprintf("connect -t tcp -a %s -s 4420 -w %s -n %s -q %s", t.Addr(), h.Links[0].Addr(), subNQN, h.HostNQN())
}

// upWithTarget starts the fabric, waits until the sessions are up and the
// hosts registered, starts the target and waits until every host in
// hosts ran nvme connect for each of the target's NICs.
func upWithTarget(t *testing.T, spec topo.Spec, hosts ...string) *topo.Fabric {
	t.Helper()
	requireSwitchRole(t)
	f := topo.Start(t, spec)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	if err := f.Node("tgt").Start(); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		hn := f.Node(h)
		for _, l := range f.Node("tgt").Links {
			if _, err := hn.WaitNVMe(wait, connectArgs(hn, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

// waitRegistered waits until each switch holds a registration for every
// running inof-host cabled to it.
func waitRegistered(t *testing.T, f *topo.Fabric) {
	t.Helper()
	for _, sw := range f.Nodes(topo.KindSwitch) {
		want := 0
		for _, l := range sw.Links {
			if l.Device.Running() {
				want++
			}
		}
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v >= float64(want) }, "inof_switch_registrations"); err != nil {
			t.Fatal(err)
		}
	}
}

// keptLine matches inof-host's log line for an inactive notification it
// keeps the controller for, about one target address and reason.
func keptLine(target, reason string) string {
	return `msg="target inactive; controller kept for multipath and keep-alive"[^\n]* target=` +
		regexp.QuoteMeta(target) + ` [^\n]*reason=` + reason
}

// count returns how many calls start with prefix.
func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// TestPrivTargetUpHostsConnect: the target comes up on leaf1 and both
// hosts, on leaf1 and leaf2, run nvme connect with the target's address,
// port and subsystem NQN, their own address and host NQN, exactly once.
func TestPrivTargetUpHostsConnect(t *testing.T) {
	f := upWithTarget(t, fabricSpec(false), "h1", "h2")
	for _, h := range []string{"h1", "h2"} {
		hn := f.Node(h)
		if n := count(hn.NVMeCalls(), "connect "); n != 1 {
			t.Errorf("%s ran nvme connect %d times, want 1: %q", h, n, hn.NVMeCalls())
		}
		if n, err := hn.Notifications("active"); err != nil || n < 1 {
			t.Errorf("%s: %v active notifications (%v)", h, n, err)
		}
	}
}

// TestPrivTargetLinkDownReason1: the link at the target's port goes down;
// both hosts get an inactive notification with reason 1 (link down) and,
// as docs/host-agent.md says for reasons other than 4/5/6 under the default
// disconnect_on: forced, keep the controller: no nvme disconnect.
func TestPrivTargetLinkDownReason1(t *testing.T) {
	f := upWithTarget(t, fabricSpec(false), "h1", "h2")
	tl := f.Node("tgt").Links[0]
	m := marks(f.Node("h1"), f.Node("h2"), f.Node("leaf1"), f.Node("leaf2"))
	at := tl.Cut(t)
	var lat []time.Duration
	for _, h := range []string{"h1", "h2"} {
		hn := f.Node(h)
		if _, err := hn.WaitLog(m[h], keptLine(tl.Addr().String(), "link-down"), wait); err != nil {
			t.Fatal(err)
		}
		sw := hn.Links[0].Switch
		lat = append(lat, sent(t, sw, m[sw.Name], hn.Links[0].Addr(), tl.Addr(), inof.StateInactive, inof.ReasonLinkDown, at))
		if n := count(hn.NVMeCalls(), "disconnect"); n != 0 {
			t.Errorf("%s ran nvme disconnect after reason 1: %q", h, hn.NVMeCalls())
		}
		if n, err := hn.Notifications("inactive"); err != nil || n != 1 {
			t.Errorf("%s: %v inactive notifications (%v), want 1", h, n, err)
		}
	}
	report.Record(t, "target-link-down (cut → switch sends, reason 1)", lat)
}

// TestPrivZoneIsolation: a zone holds the target and h1, h2 (defined with
// inofctl before the target comes up); h3 on leaf2 is in no zone, and with
// the default settings (hard zoning on) it hears nothing, neither the
// target coming up nor its link going down, while h1 and h2 do.
func TestPrivZoneIsolation(t *testing.T) {
	requireSwitchRole(t)
	if ok, err := topo.HasReflectorAPI(); err != nil || !ok {
		t.Skipf("reflector API (api.socket) not built yet (%v): zones cannot be defined with inofctl", err)
	}
	f := topo.Start(t, fabricSpec(false, host("h3", "leaf2")))
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	tgt, h1, h2, h3 := f.Node("tgt"), f.Node("h1"), f.Node("h2"), f.Node("h3")
	zoneMarks := marks(f.Node("leaf1"), f.Node("leaf2"))
	if _, err := f.Node("rr1").Inofctl("zone", "create", "z1", tgt.Links[0].Addr().String(),
		h1.Links[0].Addr().String(), h2.Links[0].Addr().String(), "--yes"); err != nil {
		t.Fatal(err)
	}
	for sw, mark := range zoneMarks {
		if _, err := f.Node(sw).WaitLog(mark, `msg="zone configuration changed"[^\n]*z1`, wait); err != nil {
			t.Fatal(err)
		}
	}
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*topo.Node{h1, h2} {
		if _, err := h.WaitNVMe(wait, connectArgs(h, tgt.Links[0])); err != nil {
			t.Fatal(err)
		}
	}
	tl := tgt.Links[0]
	mark, swMarks := h2.LogSize(), marks(f.Node("leaf1"), f.Node("leaf2"))
	at := tl.Cut(t)
	// h3 shares leaf2 with h2: once h2 heard of the cut, leaf2 has
	// decided for h3 too.
	if _, err := h2.WaitLog(mark, keptLine(tl.Addr().String(), "link-down"), wait); err != nil {
		t.Fatal(err)
	}
	var lat []time.Duration
	for _, h := range []*topo.Node{h1, h2} {
		sw := h.Links[0].Switch
		lat = append(lat, sent(t, sw, swMarks[sw.Name], h.Links[0].Addr(), tl.Addr(), inof.StateInactive, inof.ReasonLinkDown, at))
	}
	report.Record(t, "zone-isolation (cut → switch sends to the zone's hosts, reason 1)", lat)
	if n, err := h3.Notifications(""); err != nil || n != 0 {
		t.Errorf("h3, outside the zone, received %v notifications (%v), want 0", n, err)
	}
	if calls := h3.NVMeCalls(); count(calls, "connect") != 0 {
		t.Errorf("h3, outside the zone, ran nvme: %q", calls)
	}
}

// TestPrivDualHomedTargetPathLoss: the target has a NIC on each leaf (same
// NQN, two addresses) and both hosts connect over both paths. The leaf1
// link goes down: both hosts hear about that path only (one inactive, for
// the leaf1 address, reason 1) and keep the other: nothing about the leaf2
// path, no disconnect, also after the hold-down withdrew the dead path's
// record.
func TestPrivDualHomedTargetPathLoss(t *testing.T) {
	spec := fabricSpec(true)
	spec.SwitchConfig = func(_ string, cfg map[string]any) { cfg["hold_down"] = "3s" }
	f := upWithTarget(t, spec, "h1", "h2")
	tgt := f.Node("tgt")
	lost, kept := tgt.Links[0], tgt.Links[1]
	leaf2 := f.Node("leaf2")
	records, err := leaf2.Metric("inof_switch_device_records")
	if err != nil {
		t.Fatal(err)
	}
	m := marks(f.Node("h1"), f.Node("h2"), f.Node("leaf1"), leaf2)
	at := lost.Cut(t)
	var lat []time.Duration
	for _, h := range []string{"h1", "h2"} {
		hn := f.Node(h)
		if _, err := hn.WaitLog(m[h], keptLine(lost.Addr().String(), "link-down"), wait); err != nil {
			t.Fatal(err)
		}
		sw := hn.Links[0].Switch
		lat = append(lat, sent(t, sw, m[sw.Name], hn.Links[0].Addr(), lost.Addr(), inof.StateInactive, inof.ReasonLinkDown, at))
	}
	report.Record(t, "dual-homed-path-loss (cut → switch sends, reason 1)", lat)
	// The end of the hold-down: leaf2 no longer holds the dead path's
	// record.
	if _, err := leaf2.WaitMetric(wait, func(v float64) bool { return v < records }, "inof_switch_device_records"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h2"} {
		hn, mark := f.Node(h), m[h]
		if n, err := hn.Notifications("inactive"); err != nil || n != 1 {
			t.Errorf("%s: %v inactive notifications (%v), want 1 (the leaf1 path)", h, n, err)
		}
		if regexp.MustCompile(`target=` + regexp.QuoteMeta(kept.Addr().String()) + ` `).MatchString(hn.Log()[mark:]) {
			t.Errorf("%s logged something about the kept path %s after the cut:\n%s", h, kept.Addr(), hn.Log()[mark:])
		}
		if calls := hn.NVMeCalls(); count(calls, "disconnect") != 0 || count(calls, "connect ") != 2 {
			t.Errorf("%s nvme calls %q, want two connects and no disconnect", h, calls)
		}
	}
}

// TestPrivSwitchKilledReason7: leaf1, which serves the target, is
// SIGKILLed. The reflector's BFD declares it down, its records are
// withdrawn, and leaf2 tells its hosts reason 7 (BFD down): h2 (inof-host)
// logs it and keeps the controller, and a probe host on leaf2 receives the
// frame within the BFD budget plus propagation. The figure is printed.
func TestPrivSwitchKilledReason7(t *testing.T) {
	spec := fabricSpec(false, topo.Device{Name: "q2", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}})
	f := upWithTarget(t, spec, "h2")
	q2 := f.Node("q2").Probe(0)
	tl := f.Node("tgt").Links[0]
	if err := q2.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := q2.Query(); err != nil {
		t.Fatal(err)
	}
	if _, err := q2.WaitNotification(wait, func(n l2proto.Notification) bool {
		return n.Target == tl.Addr() && n.State == inof.StateActive
	}); err != nil {
		t.Fatal(err)
	}
	h2 := f.Node("h2")
	mark, leaf2Mark := h2.LogSize(), f.Node("leaf2").LogSize()
	killed, err := f.Node("leaf1").Kill()
	if err != nil {
		t.Fatal(err)
	}
	got, err := q2.WaitNotification(wait, func(n l2proto.Notification) bool {
		return n.Target == tl.Addr() && n.State == inof.StateInactive
	})
	if err != nil {
		t.Fatal(err)
	}
	lat := got.At.Sub(killed)
	t.Logf("switch SIGKILL → reason-%d inactive at the remote probe host: %v (BFD budget %v)", got.N.Reason, lat, bfdBudget)
	if got.N.Reason != inof.ReasonBFDDown {
		t.Errorf("inactive with reason %v, want %v", got.N.Reason, inof.ReasonBFDDown)
	}
	if lat > bfdBudget+propagation {
		t.Errorf("reason 7 after %v, want within %v (BFD) + %v", lat, bfdBudget, propagation)
	}
	if _, err := h2.WaitLog(mark, keptLine(tl.Addr().String(), "bfd-down"), wait); err != nil {
		t.Fatal(err)
	}
	report.Record(t, "switch-killed (SIGKILL → remote hosts, reason 7)", []time.Duration{lat,
		sent(t, f.Node("leaf2"), leaf2Mark, h2.Links[0].Addr(), tl.Addr(), inof.StateInactive, inof.ReasonBFDDown, killed)})
	if calls := h2.NVMeCalls(); count(calls, "disconnect") != 0 {
		t.Errorf("h2 ran nvme disconnect after reason 7: %q", calls)
	}
}

// TestPrivSwitchRestartNoChurn: leaf1 (the target's and h1's switch) is
// stopped with SIGTERM and started again. Until the restarted agent has
// settled (its "fabric view settled" log line) and two seconds after, no
// host receives any notification and no nvme command runs.
func TestPrivSwitchRestartNoChurn(t *testing.T) {
	f := upWithTarget(t, fabricSpec(false), "h1", "h2")
	hosts := []*topo.Node{f.Node("h1"), f.Node("h2")}
	before := map[string]float64{}
	calls := map[string]int{}
	for _, h := range hosts {
		n, err := h.Notifications("")
		if err != nil {
			t.Fatal(err)
		}
		before[h.Name], calls[h.Name] = n, len(h.NVMeCalls())
	}
	leaf1 := f.Node("leaf1")
	if err := leaf1.Stop(wait); err != nil {
		t.Fatal(err)
	}
	mark := leaf1.LogSize()
	if err := leaf1.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf1.WaitLog(mark, `msg="fabric view settled`, wait); err != nil {
		t.Fatal(err)
	}
	// Whatever the settled agent would send goes out at once; two
	// seconds cover the notifier's first send and the host's handling.
	time.Sleep(2 * time.Second)
	for _, h := range hosts {
		n, err := h.Notifications("")
		if err != nil {
			t.Fatal(err)
		}
		if n != before[h.Name] {
			t.Errorf("%s received %v notifications across leaf1's restart, want 0", h.Name, n-before[h.Name])
		}
		if c := h.NVMeCalls(); len(c) != calls[h.Name] {
			t.Errorf("%s ran nvme across leaf1's restart: %q", h.Name, c[calls[h.Name]:])
		}
	}
}
