package hostagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// TestFailoverPolicyTable: the table of docs/host-agent.md ("Multipath
// failover"), every reason × sibling × last-path policy × method.
func TestFailoverPolicyTable(t *testing.T) {
	reasons := []inof.Reason{inof.ReasonLinkDown, inof.ReasonPFCStorm, inof.ReasonPacketErr, inof.ReasonZoneChange,
		inof.ReasonIPChange, inof.ReasonAgeOut, inof.ReasonBFDDown}
	// want[reason] = {sibling, last path with wait, last path with keep}
	want := map[inof.Reason][3]pathAction{
		inof.ReasonLinkDown:   {failPath, failPath, keepPath},
		inof.ReasonPFCStorm:   {failPath, keepPath, keepPath},
		inof.ReasonPacketErr:  {failPath, keepPath, keepPath},
		inof.ReasonZoneChange: {keepPath, keepPath, keepPath},
		inof.ReasonIPChange:   {failPath, failPath, keepPath},
		inof.ReasonAgeOut:     {failPath, failPath, keepPath},
		inof.ReasonBFDDown:    {failPath, failPath, keepPath},
	}
	for _, r := range reasons {
		w := want[r]
		for _, m := range []FailoverMethod{FailoverReset, FailoverAbort, FailoverBoth} {
			got := [3]pathAction{
				failoverAction(FailoverOptions{Method: m, LastPath: LastPathWait}, r, true),
				failoverAction(FailoverOptions{Method: m, LastPath: LastPathWait}, r, false),
				failoverAction(FailoverOptions{Method: m, LastPath: LastPathKeep}, r, false),
			}
			if got != w {
				t.Errorf("%s, method %s: got %v, want %v", r, m, got, w)
			}
			if ff := failoverAction(FailoverOptions{Method: m, LastPath: LastPathFailFast}, r, false); ff != w[1] {
				t.Errorf("%s, fail-fast last path: %v, want %v (as wait)", r, ff, w[1])
			}
		}
		for _, sib := range []bool{true, false} {
			if a := failoverAction(FailoverOptions{Method: FailoverNone, LastPath: LastPathWait}, r, sib); a != keepPath {
				t.Errorf("%s with method none: %v", r, a)
			}
		}
	}
}

// dualPath connects two paths of one subsystem (target addresses .100
// and .200) and returns their devices.
func dualPath(t *testing.T, h *harness) (a, b string) {
	t.Helper()
	h.notify(active("10.0.0.100", 1))
	h.nv.expect(t, "connect")
	h.notify(active("10.0.0.200", 2))
	h.nv.expect(t, "connect")
	return h.nv.deviceOf("10.0.0.100"), h.nv.deviceOf("10.0.0.200")
}

// TestFailoverWithLiveSibling: reason 1 on a path with a live sibling
// resets that path at once (no restrain time) and keeps its controller;
// the link-up active cancels the removal that disconnect_on all had
// waiting for the restrain time, aborts the path's waiting connect and
// connects nothing (the kernel reconnects the kept controller).
func TestFailoverWithLiveSibling(t *testing.T) {
	o := testOptions(t)
	o.Failover.Method = FailoverReset
	o.RestrainTime = 5 * time.Second
	o.DisconnectOn = DisconnectAll
	clk := newFakeClock()
	h := start(t, o, clk, newFakeNVMe())
	a, b := dualPath(t, h)
	h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
	if c := h.kern.next(t); c != "reset "+a {
		t.Fatalf("kernel call %q, want reset %s", c, a)
	}
	clk.WaitTimers(t, 1) // the removal waits
	h.nv.none(t)
	waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "sibling"}, 1)
	if n := histogramCount(t, h, "inof_host_failover_action_seconds"); n != 1 {
		t.Fatalf("inof_host_failover_action_seconds: %d observations, want 1 (the path failed over)", n)
	}
	// Link back within the restrain time: the removal is cancelled and
	// the kept (reconnecting) controller is not connected again: the
	// kernel reconnects it, once the attempt it began while the link was
	// down is aborted.
	h.notify(active("10.0.0.100", 4))
	if c := h.kern.next(t); c != "rejoin 10.0.0.2>10.0.0.100:4420 "+a {
		t.Fatalf("kernel call %q, want the reconnect of %s hurried", c, a)
	}
	// The kept controller is in sysfs (connecting): no nvme-cli at all.
	clk.Advance(time.Minute)
	h.notify(inactive("10.0.0.200", 5, inof.ReasonZoneChange)) // zone change: no failover
	clk.WaitTimers(t, 1)
	h.kern.none(t)
	clk.Advance(5 * time.Second)
	c := h.nv.expect(t, "list-subsys", "disconnect")
	if !slices.Equal(c[1], []string{"nvme", "disconnect", "-d", b}) {
		t.Fatalf("disconnect %q", c[1])
	}
	if d := h.nv.devices(); !slices.Equal(d, []string{a}) {
		t.Fatalf("controllers %v, want the failed-over one %s kept", d, a)
	}
}

// TestFailoverLastPath: on the only path, wait and fail-fast reset it
// (fail-fast also set fast_io_fail_tmo 0 at connect); keep leaves it.
func TestFailoverLastPath(t *testing.T) {
	for _, lp := range []LastPathPolicy{LastPathWait, LastPathFailFast, LastPathKeep} {
		t.Run(string(lp), func(t *testing.T) {
			o := testOptions(t)
			o.Failover.Method = FailoverReset
			o.Failover.LastPath = lp
			o.DisconnectOn = DisconnectNever
			h := start(t, o, newFakeClock(), newFakeNVMe())
			h.notify(active("10.0.0.100", 1))
			h.nv.expect(t, "connect")
			dev := h.nv.deviceOf("10.0.0.100")
			if lp == LastPathFailFast {
				if c := h.kern.next(t); c != "failfast "+dev {
					t.Fatalf("kernel call %q, want failfast %s", c, dev)
				}
			}
			h.notify(inactive("10.0.0.100", 2, inof.ReasonLinkDown))
			// Sentinel on another path of another subsystem (no sibling):
			// its connect comes after the failover job of the first was
			// queued.
			h.notify(note("10.0.0.101", 3, inof.StateActive, inof.ReasonNone, "nqn.2014-08.org.example:other"))
			h.nv.expect(t, "connect")
			var want []string
			switch lp {
			case LastPathKeep:
				waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "kept"}, 1)
				h.kern.none(t)
				return
			case LastPathFailFast:
				want = []string{"failfast " + h.nv.deviceOf("10.0.0.101"), "reset " + dev}
			default:
				want = []string{"reset " + dev}
			}
			var got []string
			for range want {
				got = append(got, h.kern.next(t))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("kernel calls %q, want %q", got, want)
			}
			waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "last-path"}, 1)
		})
	}
}

// TestFailoverAbortMethod: method abort aborts the path's TCP connections
// instead of resetting; both (the default) does both.
func TestFailoverAbortMethod(t *testing.T) {
	if m := DefaultOptions().Failover; m.Method != FailoverBoth || m.LastPath != LastPathWait {
		t.Fatalf("default failover %+v, want both and wait", m)
	}
	for _, m := range []FailoverMethod{FailoverAbort, FailoverBoth} {
		t.Run(string(m), func(t *testing.T) {
			o := testOptions(t)
			o.Failover.Method = m
			h := start(t, o, newFakeClock(), newFakeNVMe())
			a, _ := dualPath(t, h)
			h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
			if c := h.kern.next(t); c != "abort 10.0.0.2>10.0.0.100:4420" {
				t.Fatalf("kernel call %q, want the abort", c)
			}
			if m == FailoverBoth {
				if c := h.kern.next(t); c != "reset "+a {
					t.Fatalf("kernel call %q, want reset %s", c, a)
				}
			}
		})
	}
}

// TestStuckCommandBlocksOnlyItsPath: a reset that does not return holds
// up its own path only: another path connects meanwhile; after
// nvme.command_timeout (fake clock) it is reported stuck (metric), and
// when it returns the gauge goes back to 0.
func TestStuckCommandBlocksOnlyItsPath(t *testing.T) {
	o := testOptions(t)
	o.Failover.Method = FailoverReset
	o.NVMe.CommandTimeout = 10 * time.Second
	h := start(t, o, newFakeClock(), newFakeNVMe())
	a, _ := dualPath(t, h)
	h.watch.WaitNoTimers(t) // the connects' watches are done
	release := h.kern.blockReset(a)
	defer func() { release() }() // if the test fails before, the agent can stop
	h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
	h.watch.WaitTimers(t, 1) // the lane's deadline watch on the blocked reset
	h.notify(active("10.0.0.101", 4))
	c := h.nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.101" {
		t.Fatalf("call %q", c[0])
	}
	// Only the blocked reset's watch is left (the connect's has stopped).
	h.watch.waitPending(t, func(k int) bool { return k == 1 }, "exactly 1")
	h.watch.Advance(10 * time.Second)
	waitMetric(t, h, "inof_host_nvme_stuck_total", map[string]string{"op": "failover"}, 1)
	waitMetric(t, h, "inof_host_nvme_stuck", nil, 1)
	release()
	release = func() {}
	if k := h.kern.next(t); k != "reset "+a {
		t.Fatalf("kernel call %q", k)
	}
	waitMetric(t, h, "inof_host_nvme_stuck", nil, 0)
}

// TestRDMAFailover: a RoCE host takes the same decisions for nvme-rdma:
// its connect command line, and on reason 1 a reset (it has no TCP
// connection to abort, so method abort resets it too).
func TestRDMAFailover(t *testing.T) {
	o := testOptions(t)
	o.Interfaces[0].Protocol = "rdma"
	o.Failover.Method = FailoverAbort
	o.NVMe.KeepAliveTmo, o.NVMe.ReconnectDelay, o.NVMe.CtrlLossTmo = 2, 1, 600
	h := start(t, o, newFakeClock(), newFakeNVMe())
	n := active("10.0.0.100", 1)
	n.Protocol = inof.ProtocolRoCE
	h.notify(n)
	c := h.nv.expect(t, "connect")
	want := []string{"nvme", "connect", "-t", "rdma", "-a", "10.0.0.100", "-s", "4420", "-w", "10.0.0.2", "-n", subNQN,
		"-q", hostNQN, "-k", "2", "-c", "1", "-l", "600", "-o", "json"}
	if !slices.Equal(c[0], want) {
		t.Fatalf("connect %q\nwant    %q", c[0], want)
	}
	dev := h.nv.deviceOf("10.0.0.100")
	d := inactive("10.0.0.100", 2, inof.ReasonLinkDown)
	d.Protocol = inof.ProtocolRoCE
	h.notify(d)
	if k := h.kern.next(t); k != "reset "+dev {
		t.Fatalf("kernel call %q, want reset %s (no abort for RDMA)", k, dev)
	}
}

// TestSiblingANAInaccessible: a sibling whose ANA state is inaccessible
// is no live sibling: with last_path keep, the path is kept. The kernel
// changes ANA states on its own, so the failover knows of it once the
// background view has read it (within pathRefresh; here asked at once).
func TestSiblingANAInaccessible(t *testing.T) {
	o := testOptions(t)
	o.Failover.LastPath = LastPathKeep
	h := start(t, o, newFakeClock(), newFakeNVMe())
	_, b := dualPath(t, h)
	h.kern.mu.Lock()
	h.kern.ana[b] = "inaccessible"
	h.kern.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); !viewShowsANA(h.agent.paths, b, "inaccessible"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the view never read %s's ANA state", b)
		}
		h.agent.paths.refresh()
	}
	h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
	waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "kept"}, 1)
	h.kern.none(t)
}

// TestSysfsKernel: the real Kernel on a sysfs tree in a directory: paths
// with state, address, subsystem and ANA; only fabrics controllers; the
// nvme class there or not; the reset and fast_io_fail_tmo writes.
func TestSysfsKernel(t *testing.T) {
	root := t.TempDir()
	if (SysfsKernel{Root: root}).HasNVMe() {
		t.Fatal("HasNVMe without a class/nvme directory")
	}
	ctrl := func(dev, tr, state, addr, nqn, ana string) {
		d := filepath.Join(root, "class", "nvme", dev)
		files := map[string]string{"transport": tr, "state": state, "address": addr, "subsysnqn": nqn,
			"reset_controller": "", "fast_io_fail_tmo": "off"}
		if ana != "" {
			files[dev[:len(dev)-1]+"c"+dev[len(dev)-1:]+"n1/ana_state"] = ana
		}
		for f, v := range files {
			p := filepath.Join(d, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctrl("nvme0", "tcp", "live", "traddr=10.0.0.100,trsvcid=4420,host_traddr=10.0.0.2,src_addr=10.0.0.2", subNQN, "optimized")
	ctrl("nvme1", "rdma", "connecting", "traddr=10.0.0.200,trsvcid=4420,host_traddr=10.0.0.3", subNQN, "")
	ctrl("nvme2", "pcie", "live", "0000:00:04.0", "nqn.local", "")
	k := SysfsKernel{Root: root}
	if !k.HasNVMe() {
		t.Fatal("HasNVMe false with class/nvme")
	}
	ps, err := k.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Device != "nvme0" || ps[1].Device != "nvme1" {
		t.Fatalf("paths %+v, want nvme0 and nvme1 (no PCIe)", ps)
	}
	p0 := ps[0]
	if p0.TrAddr != "10.0.0.100" || p0.HostTrAddr != "10.0.0.2" || p0.TrSvcID != "4420" || p0.SubNQN != subNQN ||
		p0.Transport != "tcp" || !slices.Equal(p0.ANA, []string{"optimized"}) || !p0.Live() {
		t.Fatalf("nvme0 %+v", p0)
	}
	if ps[1].Live() || !siblingLive(ps, ps[1]) || siblingLive(ps, ps[0]) {
		t.Fatalf("liveness: nvme1 %+v", ps[1])
	}
	if err := k.Reset("nvme0"); err != nil {
		t.Fatal(err)
	}
	if err := k.FailFast("nvme1"); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"nvme0/reset_controller": "1", "nvme1/fast_io_fail_tmo": "0"} {
		b, _ := os.ReadFile(filepath.Join(root, "class", "nvme", f))
		if !strings.HasPrefix(string(b), want) {
			t.Errorf("%s holds %q, want %s written", f, b, want)
		}
	}
	if err := k.Reset("../x"); err == nil {
		t.Error("reset of an invalid device name accepted")
	}
	if ps, err := (SysfsKernel{Root: t.TempDir()}).Paths(); err != nil || len(ps) != 0 {
		t.Errorf("no nvme class: %v, %v", ps, err)
	}
}

// histogramCount is the number of observations of an unlabelled
// histogram.
func histogramCount(t *testing.T, h *harness, name string) uint64 {
	t.Helper()
	fams, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0
}

// waitMetric waits until a series reaches v.
func waitMetric(t *testing.T, h *harness, name string, labels map[string]string, v float64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for h.metric(name, labels) != v {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, h.metric(name, labels), v)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFailoverFromOtherHostAddress: a dead target address is dead from
// every host interface. The agent owns a path to 10.0.0.100 from another
// host address (10.0.0.3, as a host's second NIC whose leaf died: it hears
// nothing there); reason 7 for 10.0.0.100 heard on eth0 fails that path
// over too (abort from 10.0.0.3, then reset). A zone change (4) and a
// degraded path (2) for the same address touch no other host address.
func TestFailoverFromOtherHostAddress(t *testing.T) {
	o := testOptions(t)
	o.DisconnectOn = DisconnectNever
	nv := newFakeNVMe()
	h, dev := startOwning(t, o, nv, "10.0.0.3")
	h.notify(inactive("10.0.0.100", 1, inof.ReasonZoneChange))
	h.notify(inactive("10.0.0.100", 2, inof.ReasonPFCStorm))
	h.notify(inactive("10.0.0.100", 3, inof.ReasonBFDDown))
	want := []string{"abort 10.0.0.3>10.0.0.100:4420", "reset " + dev}
	for _, w := range want {
		if c := h.kern.next(t); c != w {
			t.Fatalf("kernel call %q, want %q (only reason 7 fails the other address's path over)", c, w)
		}
	}
	waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "bfd-down", "result": "last-path"}, 1)
	h.kern.none(t)
}

// viewShowsANA reports whether the agent's current view has dev with the
// ANA state.
func viewShowsANA(v *pathView, dev, ana string) bool {
	ps, ok := v.get()
	if !ok {
		return false
	}
	for _, p := range ps {
		if p.Device == dev && slices.Contains(p.ANA, ana) {
			return true
		}
	}
	return false
}

// TestSysfsAddressReadOnce checks that the real sysfs view reads a
// controller's address once (reading it as its socket is released oopsed
// Linux 6.1.192, docs/realhost.md finding 5): a controller in recovery,
// or live again, shows the address it had, and a name the kernel gives to
// a new controller is read afresh.
func TestSysfsAddressReadOnce(t *testing.T) {
	root := t.TempDir()
	class := filepath.Join(root, "class", "nvme")
	write := func(dev, name, v string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(class, dev), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(class, dev, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nvme0", "transport", "tcp")
	write("nvme0", "state", "live")
	write("nvme0", "address", "traddr=10.0.0.100,trsvcid=4420")
	k := NewSysfsKernel(root)
	traddr := func() string {
		t.Helper()
		ps, err := k.Paths()
		if err != nil || len(ps) != 1 {
			t.Fatalf("paths %+v, %v", ps, err)
		}
		return ps[0].TrAddr
	}
	if got := traddr(); got != "10.0.0.100" {
		t.Fatalf("live: traddr %q", got)
	}
	// In recovery the file would be read under the kernel's race: the
	// changed content proves it is not read.
	write("nvme0", "state", "connecting")
	write("nvme0", "address", "traddr=10.9.9.9,trsvcid=4420")
	if got := traddr(); got != "10.0.0.100" {
		t.Fatalf("connecting: traddr %q, want the kept 10.0.0.100 (address read during recovery)", got)
	}
	write("nvme0", "state", "live")
	if got := traddr(); got != "10.0.0.100" {
		t.Fatalf("live again: traddr %q, want the kept 10.0.0.100 (address read again)", got)
	}
	// The controller deleted and its name given to a new one, first seen
	// while connecting: its own address, not the old controller's.
	if err := os.RemoveAll(filepath.Join(class, "nvme0")); err != nil {
		t.Fatal(err)
	}
	if ps, err := k.Paths(); err != nil || len(ps) != 0 {
		t.Fatalf("after delete: %+v, %v", ps, err)
	}
	write("nvme0", "transport", "tcp")
	write("nvme0", "state", "connecting")
	write("nvme0", "address", "traddr=10.0.0.200,trsvcid=4420")
	if got := traddr(); got != "10.0.0.200" {
		t.Fatalf("new controller: traddr %q, want 10.0.0.200", got)
	}
}

// TestParseCQT: the Command Quiesce Time is the little-endian field at
// bytes 386–387 of Identify Controller, in milliseconds.
func TestParseCQT(t *testing.T) {
	id := make([]byte, identifySize)
	if d, err := parseCQT(id); err != nil || d != 0 {
		t.Fatalf("no CQT: %v, %v; want 0", d, err)
	}
	id[385], id[386], id[387], id[388] = 0xff, 0x10, 0x27, 0xff // 10,000 ms, neighbours set
	if d, err := parseCQT(id); err != nil || d != 10*time.Second {
		t.Fatalf("CQT 0x2710: %v, %v; want 10s", d, err)
	}
	if _, err := parseCQT(id[:400]); err == nil {
		t.Fatal("a short Identify Controller read as a CQT")
	}
	if _, err := identifyController("sda"); err == nil || !strings.Contains(err.Error(), "not an NVMe controller") {
		t.Fatalf("identify of a non-controller name: %v", err)
	}
}

// TestFailoverRespectsCQT: a controller whose target reports a Command
// Quiesce Time is left to keep-alive at a link down (no abort, no reset:
// nothing moves its in-flight commands to the sibling at once), counted
// as "cqt"; its sibling's path on the other target address still fails
// over at once. With failover.cqt ignore it fails over at once like any
// other.
func TestFailoverRespectsCQT(t *testing.T) {
	if c := DefaultOptions().Failover.CQT; c != CQTRespect {
		t.Fatalf("default failover.cqt %q, want respect", c)
	}
	for _, policy := range []CQTPolicy{CQTRespect, CQTIgnore} {
		t.Run(string(policy), func(t *testing.T) {
			o := testOptions(t)
			o.Failover.CQT = policy
			nv := newFakeNVMe()
			nv.cqt["10.0.0.100"] = 1500 * time.Millisecond
			h := start(t, o, newFakeClock(), nv)
			a, b := dualPath(t, h)
			h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
			if policy == CQTIgnore {
				if c := h.kern.next(t); c != "abort 10.0.0.2>10.0.0.100:4420" {
					t.Fatalf("kernel call %q, want the abort", c)
				}
				if c := h.kern.next(t); c != "reset "+a {
					t.Fatalf("kernel call %q, want reset %s", c, a)
				}
				waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "sibling"}, 1)
				return
			}
			waitMetric(t, h, "inof_host_failovers_total", map[string]string{"reason": "link-down", "result": "cqt"}, 1)
			h.kern.none(t)
			// The other target address reports none: failed over at once.
			h.notify(inactive("10.0.0.200", 4, inof.ReasonLinkDown))
			if c := h.kern.next(t); c != "abort 10.0.0.2>10.0.0.200:4420" {
				t.Fatalf("kernel call %q, want the abort of the path without a CQT", c)
			}
			if c := h.kern.next(t); c != "reset "+b {
				t.Fatalf("kernel call %q, want reset %s", c, b)
			}
		})
	}
}

// TestNoAbortBesideCQT: an abort reaches every controller on the path, so
// a path with one controller held for its CQT is never aborted (its other
// controllers are reset instead); without one, or with failover.cqt
// ignore, it may be.
func TestNoAbortBesideCQT(t *testing.T) {
	held := ownedController{Device: "nvme0", CQTMillis: 200, CQTRead: true}
	plain := ownedController{Device: "nvme1", CQTRead: true}
	unread := ownedController{Device: "nvme2", CQTMillis: 200}
	for _, c := range []struct {
		policy CQTPolicy
		owned  []ownedController
		want   bool
	}{
		{CQTRespect, []ownedController{plain, held}, false},
		{CQTRespect, []ownedController{plain, unread}, true},
		{CQTIgnore, []ownedController{plain, held}, true},
		{CQTRespect, nil, true},
	} {
		l := &lane{w: &worker{a: &Agent{opt: Options{Failover: FailoverOptions{CQT: c.policy}}}}, owned: c.owned}
		if got := l.mayAbort(); got != c.want {
			t.Errorf("cqt %s, owned %+v: mayAbort %v, want %v", c.policy, c.owned, got, c.want)
		}
	}
}

// TestCQTReadForAdoptedController: a controller from a state file that
// has no CQT (an older release) is asked at start when it is live, and
// the answer is kept in the state file.
func TestCQTReadForAdoptedController(t *testing.T) {
	o := testOptions(t)
	nv := newFakeNVMe()
	nv.cqt["10.0.0.100"] = 300 * time.Millisecond
	h, _ := startOwning(t, o, nv, "10.0.0.2")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	owned, err := loadState(o.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || !owned[0].CQTRead || owned[0].CQTMillis != 300 {
		t.Fatalf("state after start %+v, want the controller with CQT 300 ms read", owned)
	}
}

// startOwning starts the agent with a live controller from host address
// host to 10.0.0.100:4420 in its state file (created by an earlier run)
// and waits for the reconcile at start; it returns the controller's
// device.
func startOwning(t *testing.T, o Options, nv *fakeNVMe, host string) (*harness, string) {
	t.Helper()
	p := Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: host, SubNQN: subNQN}
	dev := nv.add(fakeCtrl{transport: "tcp", traddr: p.TrAddr, trsvcid: p.TrSvcID, hostTraddr: p.HostTrAddr,
		nqn: subNQN, hostNQN: hostNQN})
	if err := saveState(o.StateFile, []ownedController{{Path: p, Device: dev}}); err != nil {
		t.Fatal(err)
	}
	h := start(t, o, newFakeClock(), nv)
	h.nv.expect(t, "list-subsys") // reconcile at start
	return h, dev
}
