//go:build privileged

package cdc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// realTrials is how many link cuts the real-kernel test measures (each one
// costs a TCG guest's reconnects).
const realTrials = 5

// discoverLog is nvme-cli's JSON form of a discovery log.
type discoverLog struct {
	Genctr  uint64           `json:"genctr"`
	Records []discoverRecord `json:"records"`
}

// discoverRecord is one entry of nvme-cli's JSON discovery log.
type discoverRecord struct {
	Trtype  string `json:"trtype"`
	Subtype string `json:"subtype"`
	Trsvcid string `json:"trsvcid"`
	Subnqn  string `json:"subnqn"`
	Traddr  string `json:"traddr"`
}

// currentSubtype is how nvme-cli 2.3 names SUBTYPE 3.
const currentSubtype = "current discovery subsystem"

// nvme runs nvme-cli in the guest and returns its standard output; a
// non-zero exit fails the test.
func nvme(t *testing.T, g *vm.Guest, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r, err := g.Run(ctx, append([]string{vm.GuestNVMe}, args...)...)
	if err != nil {
		t.Fatalf("nvme %s: %v", strings.Join(args, " "), err)
	}
	if r.Code != 0 {
		t.Fatalf("nvme %s: exit %d: %s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return string(r.Stdout)
}

func parseLog(t *testing.T, out string) discoverLog {
	t.Helper()
	var l discoverLog
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("nvme discover output: %v\n%s", err, out)
	}
	// The controller's entry of itself (TP 8010) is checked once, by
	// TestPrivDiscoveryRealKernel; the rest looks at the subsystems.
	l.Records = slices.DeleteFunc(l.Records, func(r discoverRecord) bool { return r.Subtype == currentSubtype })
	return l
}

// aenLines streams the guest's uevent monitor output: one value per
// NVME_AEN uevent, with the time the line reached the test.
type aenLines struct {
	pw *io.PipeWriter
	ch chan time.Time
}

func newAENLines() *aenLines {
	pr, pw := io.Pipe()
	a := &aenLines{pw: pw, ch: make(chan time.Time, 64)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "aen 0x70f002") {
				a.ch <- time.Now()
			}
		}
	}()
	return a
}

func (a *aenLines) wait(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-a.ch:
		return at
	case <-time.After(wait):
		t.Fatal("no NVME_AEN=0x70f002 uevent in the host guest")
		return time.Time{}
	}
}

// TestPrivDiscoveryRealKernel: the Debian kernel in a qemu guest, with
// nothing of ours running, uses leaf1's discovery controller for a target
// on leaf2: `nvme discover` lists the controller itself first (TP 8010's
// current discovery subsystem entry) and then exactly the target of its
// zone (the nvmet target guest on leaf2, not the unzoned probe target on
// leaf1), also with header and data digests; a connect to another
// subsystem at the discovery port is refused (the kernel names the
// subsystem NQN as the invalid parameter); a persistent discovery
// controller (`nvme discover -p`) raises the NVME_AEN=0x70f002 uevent when
// the target's link is cut (leaf2 → reflector → leaf1; the cut → uevent
// latency, as seen by the test through the guest's control channel, is
// printed); `nvme connect-all` connects to the real nvmet target; and the
// host registers itself by DIM (`nvme dim`, TP 8010): it becomes a device
// of the fabric, zoned by its NQN, and leaves on deregistration and on the
// end of its discovery connection.
func TestPrivDiscoveryRealKernel(t *testing.T) {
	topo.RequireVM(t)
	requireRoles(t)
	const vtNQN = "nqn.2024-01.io.example:vm-target"
	sp := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "vh", VM: &topo.VM{}, NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}},
			{Name: "vt", VM: &topo.VM{}, NICs: []topo.NIC{{Switch: "leaf2", Role: "target", Protocol: "tcp", Port: 4420, NQN: vtNQN}}},
			{Name: "t9", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420,
				NQN: "nqn.2024-01.io.example:t9"}}},
		},
		Passive: []string{"vh"}, // an unmodified host: inof-host is not started
		SwitchConfig: func(name string, cfg map[string]any) {
			calmBFD(cfg)
			if name == "leaf1" {
				cfg["discovery"] = map[string]any{"enabled": true, "listen": fmt.Sprintf(":%d", port)}
			}
		},
		ReflectorConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
		}}
	f := topo.Start(t, sp)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	leaf1, vh, vt := f.Node("leaf1"), f.Node("vh"), f.Node("vt")
	mark := leaf1.LogSize()
	if _, err := f.Node("rr1").Inofctl("zone", "create", "z1", vt.Links[0].Addr().String(), vh.HostNQN(), "--yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf1.WaitLog(mark, `msg="zone configuration changed"[^\n]*z1`, wait); err != nil {
		t.Fatal(err)
	}
	if err := f.Node("t9").Probe(0).Register(inof.RoleTarget, inof.ProtocolTCP, 4420, "nqn.2024-01.io.example:t9"); err != nil {
		t.Fatal(err)
	}
	// The guests' NICs share segment 0 through the switch's bridge dp0:
	// the switch answers discovery on an address of that segment.
	gw := netip.MustParseAddr("10.100.250.1")
	leaf1.NS.Addr("dp0", netip.PrefixFrom(gw, vh.Links[0].Prefix.Bits()).String())
	g := vh.Guest()
	args := []string{"-t", "tcp", "-a", gw.String(), "-s", fmt.Sprint(port)}

	// One-shot discovery until the target's registration and zone arrived.
	want := func(l discoverLog) bool {
		return len(l.Records) == 1 && l.Records[0].Traddr == vt.Links[0].Addr().String() && l.Records[0].Subnqn == vtNQN &&
			l.Records[0].Trsvcid == "4420" && l.Records[0].Trtype == "tcp"
	}
	var last string
	var raw []byte
	if err := topo.Poll(wait, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		r, err := g.Run(ctx, append([]string{vm.GuestNVMe, "discover", "-o", "json"}, args...)...)
		if err != nil {
			return false, err
		}
		last, raw = fmt.Sprintf("exit %d: %s%s", r.Code, r.Stdout, r.Stderr), r.Stdout
		var l discoverLog
		return r.Code == 0 && json.Unmarshal(r.Stdout, &l) == nil && want(parseLog(t, string(r.Stdout))), nil
	}); err != nil {
		t.Fatalf("nvme discover: %s; want only %s %s (%v)", last, vt.Links[0].Addr(), vtNQN, err)
	}
	// TP 8010: the log's first entry is the controller itself, at the
	// address and port the host reached it on.
	var full discoverLog
	if err := json.Unmarshal(raw, &full); err != nil || len(full.Records) != 2 || full.Records[0].Subtype != currentSubtype ||
		full.Records[0].Traddr != gw.String() || full.Records[0].Trsvcid != fmt.Sprint(port) || full.Records[0].Subnqn != discovery.DiscoveryNQN {
		t.Fatalf("want the current discovery subsystem at %s:%d first, then the target: %s (%v)", gw, port, raw, err)
	}

	// The same with header and data digests (CRC32C) on every PDU.
	if l := parseLog(t, nvme(t, g, append([]string{"discover", "-o", "json", "--hdr-digest", "--data-digest"}, args...)...)); !want(l) {
		t.Fatalf("nvme discover with digests: %+v", l)
	}

	// A Connect to another subsystem is refused with Connect Invalid
	// Parameters naming the subsystem NQN in the data, as the kernel reads it.
	since := len(g.Console())
	r, err := g.Run(context.Background(), append([]string{vm.GuestNVMe, "connect", "-n", vtNQN}, args...)...)
	if err != nil || r.Code == 0 {
		t.Fatalf("connect to %s at the discovery port: exit %d, %v", vtNQN, r.Code, err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), wait)
	defer wcancel()
	if _, err := g.WaitConsole(wctx, since, `Connect Invalid Data Parameter, subsysnqn`); err != nil {
		t.Fatalf("the kernel did not report the refused subsystem NQN: %v\n%s", err, g.Console()[since:])
	}

	// A persistent discovery controller, watched for its AEN uevents.
	aens := newAENLines()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mon, err := g.Start(ctx, []string{"/bin/sh", "-c",
		`exec busybox uevent /bin/sh -c '[ -z "$NVME_AEN" ] || echo "aen $NVME_AEN $MDEV$DEVNAME"'`}, aens.pw)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Stop(context.Background(), time.Second)
	// DIM (nvme dim) needs the host ID in a file; the persistent
	// connection then carries the same one.
	if err := g.WriteFile(ctx, "/etc/nvme/hostid", []byte(dimHostID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nvme(t, g, append([]string{"discover", "-p"}, args...)...)
	dc := ""
	ctrls, err := g.Controllers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ctrls {
		if c.SubNQN == discovery.DiscoveryNQN && c.TrAddr == gw.String() {
			dc = c.Name
		}
	}
	if dc == "" {
		t.Fatalf("no persistent discovery controller among %+v", ctrls)
	}

	// Link cuts: the persistent controller's AER completes, the kernel
	// raises the uevent; reading the log through that controller
	// (nvme discover -d) shows the change and re-arms the notice.
	var lat []time.Duration
	for range realTrials {
		tl := vt.Links[0]
		at := tl.Cut(t)
		lat = append(lat, aens.wait(t).Sub(at))
		if l := parseLog(t, nvme(t, g, "discover", "-d", dc, "-o", "json")); len(l.Records) != 0 {
			t.Fatalf("after the cut the log still lists %+v", l.Records)
		}
		tl.Restore(t)
		aens.wait(t) // the target registered again (inof-host sees the carrier)
		if l := parseLog(t, nvme(t, g, "discover", "-d", dc, "-o", "json")); !want(l) {
			t.Fatalf("after the restore: %+v", l)
		}
	}
	// connect-all reaches the real nvmet target (last: a controller to a
	// target whose link is cut blocks nvme-cli while it reconnects).
	nvme(t, g, append([]string{"connect-all"}, args...)...)
	if err := topo.Poll(wait, func() (bool, error) {
		cs, err := g.Controllers(ctx)
		return slices.ContainsFunc(cs, func(c vm.Controller) bool {
			return c.SubNQN == vtNQN && c.TrAddr == vt.Links[0].Addr().String() && c.State == "live"
		}), err
	}); err != nil {
		cs, _ := g.Controllers(ctx)
		t.Fatalf("connect-all: no live controller to %s: %+v (%v)", vtNQN, cs, err)
	}

	slices.Sort(lat)
	report.Record(t, "cdc-real-kernel (target cut → NVME_AEN uevent in the host guest)", lat)

	// TP 8010: the host registers itself through its persistent discovery
	// controller. The fabric lists it as a host of leaf1 with its NQN and
	// zones it like one registered over LLDP; a deregistration, and the
	// end of the connection, take it out again.
	rr1, hostAddr := f.Node("rr1"), vh.Links[0].Addr().String()
	dim := func(task string) {
		t.Helper()
		nvme(t, g, "dim", "-t", task, "-d", dc)
	}
	dim("register")
	d := waitDevice(t, rr1, hostAddr, func(d listedDevice) bool { return d.Active })
	if d.NQN != vh.HostNQN() || d.Role != "host" || d.Switch != leaf1.Addr.String() || !slices.Contains(d.Zones, "z1") {
		t.Fatalf("registered by DIM: %+v; want host %s of %s in z1", d, vh.HostNQN(), leaf1.Addr)
	}
	if out, err := rr1.Inofctl("device", "why", hostAddr, vt.Links[0].Addr().String()); err != nil || !strings.Contains(out, "z1") {
		t.Fatalf("device why: %s (%v)", out, err)
	}
	dim("deregister")
	waitDevice(t, rr1, hostAddr, func(d listedDevice) bool { return !d.Active })
	dim("register")
	waitDevice(t, rr1, hostAddr, func(d listedDevice) bool { return d.Active })
	nvme(t, g, "disconnect", "-d", dc)
	d = waitDevice(t, rr1, hostAddr, func(d listedDevice) bool { return !d.Active })
	t.Logf("after the discovery controller's disconnect: %+v", d)
}

// dimHostID is the guest's host ID (/etc/nvme/hostid) for DIM.
const dimHostID = "5b7e4b2c-6a1f-4f43-9d53-0c1e2f3a4b5c"

// listedDevice is one device of `inofctl device list -o json`.
type listedDevice struct {
	Address string   `json:"address"`
	Role    string   `json:"role"`
	NQN     string   `json:"nqn"`
	Switch  string   `json:"switch"`
	Active  bool     `json:"active"`
	Reason  string   `json:"reason"`
	Zones   []string `json:"zones"`
}

// waitDevice polls the reflector's device list until the device at addr
// is there and ok holds for it.
func waitDevice(t *testing.T, rr *topo.Node, addr string, ok func(listedDevice) bool) listedDevice {
	t.Helper()
	var last string
	var got listedDevice
	if err := topo.Poll(wait, func() (bool, error) {
		out, err := rr.Inofctl("device", "list", "--address", addr, "-o", "json")
		if err != nil {
			return false, err
		}
		last = out
		var list struct {
			Items []listedDevice `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Address == addr && ok(d) {
				got = d
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("device %s: %v; last list %s", addr, err, last)
	}
	return got
}
