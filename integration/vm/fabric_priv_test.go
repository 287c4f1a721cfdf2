//go:build privileged

package vm_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

const (
	// subNQN is the target guest's subsystem NQN.
	subNQN = "nqn.2026-11.io.openinof:vm-array"
	// wait bounds what the fabric or a guest should do at once; generous,
	// because TCG guests on two shared cores are slow.
	wait = 60 * time.Second
	// kernelWait bounds what the kernel does on its own timers (keep-alive,
	// reconnect attempts until ctrl-loss-tmo with -k 2 -c 1 -l 5: about
	// 30 s measured, up to 90 s when error recovery hangs; docs/realhost.md).
	kernelWait = 150 * time.Second
)

// requireFabric skips unless the VM tools, the switch role and (zones)
// the reflector API exist.
func requireFabric(t *testing.T, zones bool) {
	t.Helper()
	topo.RequireVM(t)
	if ok, err := topo.HasSwitchRole(); err != nil || !ok {
		t.Skipf("switch role not built (%v)", err)
	}
	if ok, err := topo.HasReflectorAPI(); zones && (err != nil || !ok) {
		t.Skipf("reflector API not built (%v): zones cannot be defined", err)
	}
}

// vmTarget is the target guest with one NIC per switch.
func vmTarget(switches ...string) topo.Device {
	d := topo.Device{Name: "tgt", VM: &topo.VM{}}
	for _, sw := range switches {
		d.NICs = append(d.NICs, topo.NIC{Switch: sw, Role: "target", Protocol: "tcp", Port: 4420, NQN: subNQN})
	}
	return d
}

// vmHost is a host guest with one NIC per switch.
func vmHost(name string, switches ...string) topo.Device {
	d := topo.Device{Name: name, VM: &topo.VM{}}
	for _, sw := range switches {
		d.NICs = append(d.NICs, topo.NIC{Switch: sw, Role: "host", Protocol: "tcp"})
	}
	return d
}

// policy is a host guest's disconnect configuration.
type policy struct {
	on       string // disconnect_on: forced (default), all, never
	restrain string // restrain_time; empty keeps the default (5s)
}

// hostConfig sets every guest's registration to 1 s with a 4 s TTL (so a
// dead target ages out quickly) and the disconnect policy of the hosts
// named in policies.
func hostConfig(policies map[string]policy) func(string, map[string]any) {
	return func(name string, cfg map[string]any) {
		cfg["registration_interval"] = "1s"
		cfg["registration_ttl"] = "4s"
		if p, ok := policies[name]; ok {
			cfg["disconnect_on"] = p.on
			if p.restrain != "" {
				cfg["restrain_time"] = p.restrain
			}
		}
	}
}

// vmSpec is a fabric of one reflector, the switches and the devices, with
// BFD detection at 3 s instead of 300 ms: four TCG guests keep two cores
// busy, the default timers then flap, and a BGP session torn down by BFD
// took GoBGP more than a minute to re-establish (seen in a run).
func vmSpec(switches []string, devices ...topo.Device) topo.Spec {
	return topo.Spec{
		Reflectors: []string{"rr1"}, Switches: switches, Devices: devices,
		ReflectorConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
		},
		SwitchConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = map[string]any{"enabled": true, "min_tx": "300ms", "min_rx": "300ms", "multiplier": 10}
		},
	}
}

// waitRegistered waits until each switch holds a registration for every
// running agent cabled to it.
func waitRegistered(t *testing.T, f *topo.Fabric) {
	t.Helper()
	for _, sw := range f.Nodes(topo.KindSwitch) {
		want := 0
		for _, l := range sw.Links {
			if l.Device.AgentRunning() || l.Device.Running() {
				want++
			}
		}
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v >= float64(want) }, "inof_switch_registrations"); err != nil {
			t.Fatal(err)
		}
	}
}

// zone runs inofctl zone ARGS... --yes and waits until every switch
// applied the change.
func zone(t *testing.T, f *topo.Fabric, args ...string) {
	t.Helper()
	marks := map[*topo.Node]int{}
	for _, sw := range f.Nodes(topo.KindSwitch) {
		marks[sw] = sw.LogSize()
	}
	if _, err := f.Node("rr1").Inofctl(append(append([]string{"zone"}, args...), "--yes")...); err != nil {
		t.Fatal(err)
	}
	for sw, mark := range marks {
		if _, err := sw.WaitLog(mark, `msg="zone configuration changed"`, wait); err != nil {
			t.Fatal(err)
		}
	}
}

// controllers lists a guest's NVMe controllers to the target address.
func controllers(t *testing.T, n *topo.Node, traddr string) []vm.Controller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := n.Guest().Controllers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []vm.Controller
	for _, c := range cs {
		if traddr == "" || c.TrAddr == traddr {
			out = append(out, c)
		}
	}
	return out
}

// waitControllers polls a guest's controllers to traddr ("" = any) until
// cond holds, and returns the time it first held, measured from since.
func waitControllers(t *testing.T, n *topo.Node, traddr string, since time.Time, timeout time.Duration,
	what string, cond func([]vm.Controller) bool) time.Duration {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		cs := controllers(t, n, traddr)
		if cond(cs) {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not reached after %s; controllers %+v\nlog tail:\n%s", n.Name, what, timeout, cs, logTail(n, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watch is a condition on a host's controllers to traddr ("" = any).
type watch struct {
	n      *topo.Node
	traddr string
	what   string
	cond   func([]vm.Controller) bool
}

// watchAll polls the watches' hosts in turn until every condition has held
// once, and returns for each how long after since it was first seen to
// hold (the poll interval, one control round trip per watch, bounds the
// precision).
func watchAll(t *testing.T, since time.Time, timeout time.Duration, ws ...watch) []time.Duration {
	t.Helper()
	got := make([]time.Duration, len(ws))
	left := len(ws)
	deadline := time.Now().Add(timeout)
	for left > 0 {
		for i, w := range ws {
			if got[i] != 0 {
				continue
			}
			if cs := controllers(t, w.n, w.traddr); w.cond(cs) {
				got[i] = time.Since(since)
				left--
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: %s not reached after %s; controllers %+v\nlog tail:\n%s", w.n.Name, w.what, timeout, cs, logTail(w.n, 20))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

func logTail(n *topo.Node, lines int) string {
	l := strings.Split(strings.TrimRight(n.Log(), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func live(cs []vm.Controller) bool { return len(cs) > 0 && allState(cs, "live") }
func none(cs []vm.Controller) bool { return len(cs) == 0 }
func notLive(cs []vm.Controller) bool {
	return len(cs) == 0 || !allState(cs, "live")
}

func allState(cs []vm.Controller, st string) bool {
	for _, c := range cs {
		if c.State != st {
			return false
		}
	}
	return true
}

// logged waits until the node's log after mark matches re.
func logged(t *testing.T, n *topo.Node, mark int, re string, timeout time.Duration) {
	t.Helper()
	if _, err := n.WaitLog(mark, re, timeout); err != nil {
		t.Fatal(err)
	}
}

// disconnectedLine matches inof-host's log line for a controller it
// removed, to the target address, for a reason (as inof.Reason prints it).
func disconnectedLine(target, reason string) string {
	return `msg=disconnected reason=(` + reason + `) path="tcp:` + regexp.QuoteMeta(target) + `:`
}

// connectedLine matches inof-host's log line for a controller it
// connected to the target address, with the Command Quiesce Time it read.
func connectedLine(target, cqt string) string {
	return `msg=connected path="tcp:` + regexp.QuoteMeta(target) + `:[^\n]* cqt=` + regexp.QuoteMeta(cqt) + `(\s|$)`
}

// keptLine matches inof-host's log line for an inactive it leaves to the
// kernel.
func keptLine(target, reason string) string {
	return `msg="target inactive; controller kept for multipath and keep-alive"[^\n]*target=` +
		regexp.QuoteMeta(target) + `[^\n]*reason=` + reason
}

// measure logs one measured figure in a form docs/realhost.md quotes.
func measure(t *testing.T, what string, d time.Duration) {
	t.Helper()
	t.Logf("MEASURE %-60s %8.2f s", what, d.Seconds())
}

// TestPrivVMZoneLinkKill: a target guest on leaf1; host guests h1
// (leaf1, disconnect_on: all) and h2 (leaf2, disconnect_on: never, so only
// the kernel's keep-alive acts) in its zone; h3 (leaf2, default policy)
// outside it.
//
//   - The target's agent starts: h1 and h2 get a live controller and the
//     namespace's block device; h3 never connects and hears nothing.
//   - The target's link goes down (tap down at leaf1, QMP set_link off):
//     both hosts are told reason 1; h1 removes its controller after its
//     restrain time, h2's is removed by the kernel (ctrl-loss-tmo). Both
//     are measured.
//   - The link comes back: both are live again.
//   - Zone changes: h3 joins the zone and connects, leaves it and removes
//     its controller (reason 4).
//   - The target guest is killed: h1 is told reason 6 (age-out) or 7 and
//     removes its controller; h2's is removed by the kernel; no
//     controller is left anywhere.
func TestPrivVMZoneLinkKill(t *testing.T) {
	requireFabric(t, true)
	spec := vmSpec([]string{"leaf1", "leaf2"},
		vmTarget("leaf1"), vmHost("h1", "leaf1"), vmHost("h2", "leaf2"), vmHost("h3", "leaf2"))
	spec.Passive = []string{"tgt"}
	spec.HostConfig = hostConfig(map[string]policy{"h1": {on: "all"}, "h2": {on: "never"}})
	start := time.Now()
	f := topo.Start(t, spec)
	tgt, h1, h2, h3 := f.Node("tgt"), f.Node("h1"), f.Node("h2"), f.Node("h3")
	t.Logf("fabric with 4 guests up in %s (boots %s, %s, %s, %s)", time.Since(start).Round(time.Millisecond),
		tgt.Guest().BootDuration().Round(time.Millisecond), h1.Guest().BootDuration().Round(time.Millisecond),
		h2.Guest().BootDuration().Round(time.Millisecond), h3.Guest().BootDuration().Round(time.Millisecond))
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	ta := tgt.Links[0].Addr().String()
	zone(t, f, "create", "z1", ta, h1.Links[0].Addr().String(), h2.Links[0].Addr().String())

	// Registration → live controller and block device.
	at := time.Now()
	if err := tgt.StartAgent(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*topo.Node{h1, h2} {
		d := waitControllers(t, h, ta, at, wait, "live controller", live)
		measure(t, h.Name+": target agent start → live controller", d)
		cs := controllers(t, h, ta)
		if len(cs) != 1 || cs[0].SubNQN != subNQN || cs[0].HostTrAddr != h.Links[0].Addr().String() {
			t.Errorf("%s: controllers %+v, want one to %s from %s", h.Name, cs, subNQN, h.Links[0].Addr())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		nss, err := h.Guest().Namespaces(ctx)
		cancel()
		if err != nil || len(nss) != 1 {
			t.Errorf("%s: namespaces %v (%v), want one block device", h.Name, nss, err)
		}
		// The agent read the controller's Command Quiesce Time (Identify
		// Controller through the admin passthrough): Linux nvmet reports
		// none.
		logged(t, h, 0, connectedLine(ta, "0s"), wait)
	}
	// h3 is outside the zone: after h1 and h2 connected, it has no
	// controller and received no notification.
	if cs := controllers(t, h3, ""); len(cs) != 0 {
		t.Errorf("h3 (outside the zone) has controllers %+v", cs)
	}
	if n, err := h3.Notifications(""); err != nil || n != 0 {
		t.Errorf("h3 (outside the zone) received %v notifications (%v), want 0", n, err)
	}

	// Target link down: reason 1 to both hosts.
	tl := tgt.Links[0]
	m1, m2 := h1.LogSize(), h2.LogSize()
	cut := tl.Cut(t)
	d := watchAll(t, cut, kernelWait,
		watch{h1, ta, "no controller", none},
		watch{h2, ta, "controller not live", notLive},
		watch{h2, ta, "no controller", none})
	measure(t, "h1 (agent, disconnect_on all, restrain 5s): link down → controller removed", d[0])
	measure(t, "h2 (keep-alive only): link down → controller not live", d[1])
	measure(t, "h2 (keep-alive only): link down → controller removed by the kernel", d[2])
	logged(t, h2, m2, keptLine(ta, "link-down"), wait)
	logged(t, h1, m1, disconnectedLine(ta, "link-down"), wait)

	// Link up: both live again (the switch says active, the agents connect).
	up := tl.Restore(t)
	for _, h := range []*topo.Node{h1, h2} {
		measure(t, h.Name+": link up → live controller", waitControllers(t, h, ta, up, wait, "live controller", live))
	}

	// Zone changes: h3 joins and connects, leaves and disconnects (reason
	// 4, its default policy, after the default restrain time).
	zch := time.Now()
	zone(t, f, "add", "z1", h3.Links[0].Addr().String())
	measure(t, "h3: added to the zone → live controller", waitControllers(t, h3, ta, zch, wait, "live controller", live))
	m3 := h3.LogSize()
	zch = time.Now()
	zone(t, f, "remove", "z1", h3.Links[0].Addr().String())
	logged(t, h3, m3, disconnectedLine(ta, "zone-change"), wait)
	measure(t, "h3: removed from the zone → controller removed", waitControllers(t, h3, ta, zch, wait, "no controller", none))
	for _, h := range []*topo.Node{h1, h2} {
		if cs := controllers(t, h, ta); !live(cs) {
			t.Errorf("%s lost its controller on h3's zone change: %+v", h.Name, cs)
		}
	}

	// Target guest killed: h1 is told age-out (6) or bfd-down (7) and
	// removes its controller; h2's goes by keep-alive; nothing stale.
	m1 = h1.LogSize()
	kill, err := tgt.KillGuest()
	if err != nil {
		t.Fatal(err)
	}
	d = watchAll(t, kill, kernelWait, watch{h1, ta, "no controller", none}, watch{h2, ta, "no controller", none})
	measure(t, "h1 (agent): target guest killed → controller removed", d[0])
	measure(t, "h2 (keep-alive only): target guest killed → controller removed", d[1])
	logged(t, h1, m1, disconnectedLine(ta, "lldp-age-out|bfd-down"), wait)
	for _, h := range []*topo.Node{h1, h2, h3} {
		if cs := controllers(t, h, ""); len(cs) != 0 {
			t.Errorf("%s: stale controllers %+v", h.Name, cs)
		}
	}
}

// TestPrivVMDualPath: the target guest and three host guests each have
// two NICs, on leaf1 (segment 0) and leaf2 (segment 1); every host has a
// controller on each segment under one native NVMe multipath device and
// reads it in a loop. The target's leaf1 link is cut and restored. On
// every host I/O goes on without a read error, and each host's agent did
// what its policy says (docs/host-agent.md, "Multipath failover"):
//
//   - hA (I/O policy round-robin) and hC (numa): inof-host's defaults:
//     told reason 1 for a path with a live sibling, it fails the path over
//     at once (TCP abort and reset) and keeps the controller;
//   - hB (round-robin): keep-alive alone (failover none, disconnect_on
//     never): the agent leaves the path to the kernel.
//
// When the link is back, both paths of every host are live again (the
// kernel reconnects the kept controllers). How long each took is logged
// (MEASURE); BenchmarkPrivVMFailover (integration/bench/e2e) measures it
// over many cuts.
func TestPrivVMDualPath(t *testing.T) {
	requireFabric(t, false)
	sws := []string{"leaf1", "leaf2"}
	spec := vmSpec(sws, vmTarget(sws...), vmHost("hA", sws...), vmHost("hB", sws...), vmHost("hC", sws...))
	for i := range spec.Devices[1:] {
		// Keep a failed-over controller for its return (the VM default
		// ctrl_loss_tmo of 5 s would have the kernel delete it).
		spec.Devices[1+i].VM.CtrlLossTmo = 60
	}
	base := hostConfig(nil)
	spec.HostConfig = func(name string, cfg map[string]any) {
		base(name, cfg)
		if name == "hB" {
			cfg["disconnect_on"] = "never"
			cfg["failover"] = map[string]any{"method": "none"}
		}
	}
	start := time.Now()
	f := topo.Start(t, spec)
	t.Logf("fabric with 4 dual-homed guests up in %s", time.Since(start).Round(time.Millisecond))
	tgt := f.Node("tgt")
	hosts := []*topo.Node{f.Node("hA"), f.Node("hB"), f.Node("hC")}
	iopolicy := map[string]string{"hA": "round-robin", "hB": "round-robin", "hC": "numa"}
	t0, t1 := tgt.Links[0].Addr().String(), tgt.Links[1].Addr().String()
	var ws []watch
	for _, h := range hosts {
		ws = append(ws, watch{h, t0, "live path on leaf1", live}, watch{h, t1, "live path on leaf2", live})
	}
	watchAll(t, start, wait, ws...)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	meters := map[*topo.Node]*vm.IOStall{}
	for _, h := range hosts {
		nss, err := h.Guest().Namespaces(ctx)
		if err != nil || len(nss) != 1 {
			t.Fatalf("%s: namespaces %v (%v), want one multipath device", h.Name, nss, err)
		}
		if cs := controllers(t, h, ""); len(cs) != 2 {
			t.Fatalf("%s: controllers %+v, want exactly the two same-segment paths", h.Name, cs)
		}
		if _, err := h.Guest().Sh(ctx, "for p in /sys/class/nvme-subsystem/*/iopolicy; do echo "+iopolicy[h.Name]+" > $p; done"); err != nil {
			t.Fatal(err)
		}
		m, err := h.Guest().StartIOStall(ctx, "/dev/"+nss[0])
		if err != nil {
			t.Fatal(err)
		}
		meters[h] = m
	}
	time.Sleep(2 * time.Second)
	for _, h := range hosts {
		if r, err := meters[h].Snapshot(ctx); err != nil || r.Reads == 0 {
			t.Fatalf("%s: reads before the cut: %+v, %v", h.Name, r, err)
		}
	}

	marks := map[*topo.Node]int{}
	for _, h := range hosts {
		marks[h] = h.LogSize()
	}
	cut := tgt.Links[0].Cut(t)
	d := watchAll(t, cut, kernelWait,
		watch{hosts[0], t0, "lost path not live", notLive},
		watch{hosts[1], t0, "lost path not live", notLive},
		watch{hosts[2], t0, "lost path not live", notLive})
	for i, h := range hosts {
		measure(t, h.Name+" ("+iopolicy[h.Name]+"): leaf1 cut → lost path not live", d[i])
	}
	// The policy's action, as each agent logged it.
	failedOver := `msg="path failed over" path="tcp:` + regexp.QuoteMeta(t0) + `:[^\n]*reason=link-down[^\n]*live_sibling=true`
	logged(t, hosts[0], marks[hosts[0]], failedOver, wait)
	logged(t, hosts[2], marks[hosts[2]], failedOver, wait)
	logged(t, hosts[1], marks[hosts[1]], keptLine(t0, "link-down"), wait)
	if strings.Contains(hosts[1].Log()[marks[hosts[1]]:], "path failed over") {
		t.Errorf("hB (failover none) failed a path over")
	}

	// I/O goes on over leaf2: reads complete on every host, no read error.
	for _, h := range hosts {
		r1, err := meters[h].Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(wait)
		for {
			time.Sleep(500 * time.Millisecond)
			r2, err := meters[h].Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r2.Reads > r1.Reads {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no read completed for %s after the cut: %+v\n%s", h.Name, wait, r2, meters[h].Output())
			}
		}
		if cs := controllers(t, h, t1); !live(cs) {
			t.Errorf("%s: the leaf2 path is not live: %+v", h.Name, cs)
		}
	}
	// The agents kept the failed-over controllers for the path's return.
	for _, h := range []*topo.Node{hosts[0], hosts[2]} {
		if strings.Contains(h.Log()[marks[h]:], "msg=disconnected") {
			t.Errorf("%s removed a controller on reason 1 with a live sibling", h.Name)
		}
	}

	up := tgt.Links[0].Restore(t)
	ws = ws[:0]
	for _, h := range hosts {
		ws = append(ws, watch{h, t0, "leaf1 path live again", live})
	}
	d = watchAll(t, up, kernelWait, ws...)
	for i, h := range hosts {
		measure(t, h.Name+": link up → leaf1 path live again", d[i])
	}
	for _, h := range hosts {
		r, err := meters[h].Stop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d read errors on the multipath device\n%s", h.Name, r.Errors, meters[h].Output())
		}
		t.Logf("%s: %d reads in %.1f s, longest gap %.0f ms; gaps over 200 ms:\n%s", h.Name,
			r.Reads, r.Seconds, r.MaxGapMS, gapLines(meters[h].Output()))
		measure(t, h.Name+" ("+iopolicy[h.Name]+"): I/O stall (longest gap between completed reads)",
			time.Duration(r.MaxGapMS*float64(time.Millisecond)))
	}
}

// gapLines keeps the meter's "gap" lines.
func gapLines(out string) string {
	var g []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " gap ") {
			g = append(g, "  "+l)
		}
	}
	return strings.Join(g, "\n")
}
