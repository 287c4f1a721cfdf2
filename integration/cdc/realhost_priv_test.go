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
// nothing of ours running, uses leaf1's discovery controller: `nvme
// discover` lists exactly the target of its zone (the nvmet target guest,
// not the unzoned probe target), also with header and data digests, a
// connect to another subsystem at the
// discovery port is refused (the kernel names the subsystem NQN as the
// invalid parameter), `nvme connect-all` connects to the real
// nvmet target, and a persistent discovery controller (`nvme discover -p`)
// raises the NVME_AEN=0x70f002 uevent when the target's link is cut; the
// cut → uevent latency (as seen by the test, through the guest's control
// channel) is printed.
func TestPrivDiscoveryRealKernel(t *testing.T) {
	topo.RequireVM(t)
	requireRoles(t)
	const vtNQN = "nqn.2024-01.io.example:vm-target"
	sp := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1"},
		Devices: []topo.Device{
			{Name: "vh", VM: &topo.VM{}, NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}},
			{Name: "vt", VM: &topo.VM{}, NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420, NQN: vtNQN}}},
			{Name: "t9", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420,
				NQN: "nqn.2024-01.io.example:t9"}}},
		},
		Passive: []string{"vh"}, // an unmodified host: inof-host is not started
		SwitchConfig: func(name string, cfg map[string]any) {
			calmBFD(cfg)
			cfg["discovery"] = map[string]any{"enabled": true, "listen": fmt.Sprintf(":%d", port)}
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
	if err := topo.Poll(wait, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		r, err := g.Run(ctx, append([]string{vm.GuestNVMe, "discover", "-o", "json"}, args...)...)
		if err != nil {
			return false, err
		}
		last = fmt.Sprintf("exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
		var l discoverLog
		return r.Code == 0 && json.Unmarshal(r.Stdout, &l) == nil && want(l), nil
	}); err != nil {
		t.Fatalf("nvme discover: %s; want only %s %s (%v)", last, vt.Links[0].Addr(), vtNQN, err)
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
}
