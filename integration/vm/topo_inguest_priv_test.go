//go:build privileged

package vm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// inGuestNQN is the target's subsystem in TestPrivTopoInGuestPortDown.
const inGuestNQN = "nqn.2026-12.io.openinof:in-guest"

// TestPrivTopoInGuestPortDown: a topo.Spec realised whole in one guest in
// instruction-counted time (topo.GuestOptions, icount shift 2, the
// default kernel): a route reflector, two leaves in BGP mode, a target
// dual-homed to them (nvmet and inof-host in its namespace) and the host
// under test dual-homed (nvme-tcp, native multipath and inof-host in the
// guest's init namespace). A few cuts of the target's port on leaf1
// (Fabric.GuestCuts): leaf1 tells the host (reason 1), its agent fails
// the path over; per cut the longest gap between completed reads is at
// most 200 ms of guest time, with no read error, and the path is live
// again after the restore. Then 2 cuts with sequence-numbered writes:
// every block read back after each cut holds its last acknowledged write.
// The host agent logged a failover for reason 1 at every cut, and its
// metrics (read through the guest) count an inactive notification per
// cut. It runs on the first kernel of INOF_VM_KERNELS (the default one),
// in place of TestPrivVMPathFabric's run there.
func TestPrivTopoInGuestPortDown(t *testing.T) {
	requireFabric(t, true)
	kernel := vm.EnvKernels()[0]
	start := time.Now()
	dual := func(name, role string) topo.Device {
		d := topo.Device{Name: name}
		for _, sw := range []string{"leaf1", "leaf2"} {
			nic := topo.NIC{Switch: sw, Role: role, Protocol: "tcp"}
			if role == "target" {
				nic.Port, nic.NQN = 4420, inGuestNQN
			}
			d.NICs = append(d.NICs, nic)
		}
		return d
	}
	f := topo.Start(t, topo.Spec{
		Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{dual("h1", "host"), dual("tgt", "target")},
		HostConfig: func(_ string, cfg map[string]any) {
			cfg["registration_interval"] = "1s"
			cfg["registration_ttl"] = "4s"
		},
		InGuest: &topo.GuestOptions{Kernel: kernel, Icount: &vm.Icount{Shift: pathFabricShift}},
	})
	t.Logf("guest booted and fabric started in %s of wall time (kernel %q, icount shift %d)", time.Since(start).Round(time.Second),
		kernel, pathFabricShift)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	host := f.Node("h1")
	before, err := host.Notifications("inactive")
	if err != nil {
		t.Fatal(err)
	}
	const cuts = 3
	reps, out, err := f.GuestCuts(ctx, topo.GuestCut{Link: f.Node("tgt").Links[0],
		Options: vm.CutOptions{N: cuts, IOPolicy: "round-robin", Settle: time.Second, After: 500 * time.Millisecond}})
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != cuts {
		t.Fatalf("%d cut reports, want %d", len(reps), cuts)
	}
	for _, r := range reps {
		if r.Problem != "" || r.Errors != 0 || r.StallMS > stallBudget || r.NotLiveMS == 0 || r.BackMS == 0 || r.NotifiedMS == 0 {
			t.Errorf("cut %d: stall %.1f ms (budget %d ms), %d read errors, told after %.1f ms, not live after %.1f ms, back %.1f ms; %s",
				r.Cut, r.StallMS, stallBudget, r.Errors, r.NotifiedMS, r.NotLiveMS, r.BackMS, r.Problem)
		}
	}
	// Writes: sequence-numbered blocks, every one read back after each
	// cut.
	const wcuts = 2
	wreps, wout, err := f.GuestCuts(ctx, topo.GuestCut{Link: f.Node("tgt").Links[0],
		Options: vm.CutOptions{N: wcuts, IOPolicy: "round-robin", Write: true, Settle: time.Second, After: 500 * time.Millisecond}})
	t.Logf("%s", wout)
	if err != nil {
		t.Fatalf("writes: %v", err)
	}
	if len(wreps) != wcuts {
		t.Fatalf("writes: %d cut reports, want %d", len(wreps), wcuts)
	}
	for _, r := range wreps {
		if r.Problem != "" || r.Errors != 0 || r.StallMS > stallBudget || r.Verified == 0 || r.Mismatches != 0 {
			t.Errorf("writes, cut %d: stall %.1f ms, %d write errors, %d blocks verified, %d not the last acknowledged write; %s",
				r.Cut, r.StallMS, r.Errors, r.Verified, r.Mismatches, r.Problem)
		}
	}
	g := f.Guest()
	if oops := vm.KernelOops(g.Console()); oops != "" {
		t.Errorf("kernel oops:\n%s", oops)
	}
	// The host's agent acted on the switch's notification: a failover
	// per cut, for reason 1.
	if n, _ := g.Grep(ctx, host.GuestLog(), `msg="path failed over"`); n < cuts+wcuts {
		t.Errorf("host agent failed %d paths over in %d cuts\n%s", n, cuts+wcuts, g.Tail(ctx, host.GuestLog(), 40))
	}
	if n, _ := g.Grep(ctx, host.GuestLog(), `reason=link-down`); n < cuts+wcuts {
		t.Errorf("host agent logged reason link-down %d times in %d cuts", n, cuts+wcuts)
	}
	after, err := host.Notifications("inactive")
	if err != nil {
		t.Fatal(err)
	}
	if after-before < cuts+wcuts {
		t.Errorf("host agent counted %.0f inactive notifications in %d cuts", after-before, cuts+wcuts)
	}
	// A switch's metrics, read in its namespace through the guest: leaf1
	// holds the host's and the target's registrations.
	if v, err := f.Node("leaf1").Metric("inof_switch_registrations"); err != nil || v < 2 {
		t.Errorf("leaf1: inof_switch_registrations %v (%v), want the host's and the target's", v, err)
	}
	// The zone Start made, through inofctl in the guest.
	if out, err := f.Node("rr1").Inofctl("zone", "list"); err != nil || !strings.Contains(out, "fabric") {
		t.Errorf("inofctl zone list on rr1: %v\n%s", err, out)
	}
	// The other cuts of the topo API, done in the guest: a link's switch
	// port and a switch's uplink, down and up again.
	l := f.Node("tgt").Links[1]
	for _, c := range []struct {
		set      func(bool) error
		ns, link string
	}{
		{func(up bool) error { _, err := l.SetLink(up); return err }, l.Switch.Name, l.Port},
		{f.Node("leaf2").SetUplink, "leaf2", topo.Uplink},
	} {
		for _, up := range []bool{false, true} {
			if err := c.set(up); err != nil {
				t.Fatal(err)
			}
			out, err := g.Sh(ctx, fmt.Sprintf("%s -n %s -o link show dev %s", vm.GuestIP, c.ns, c.link))
			if err != nil || strings.Contains(out, ",UP") != up {
				t.Errorf("%s/%s set up=%v: %v %s", c.ns, c.link, up, err, out)
			}
		}
	}
	t.Logf("%s of wall time (boot included)", time.Since(start).Round(time.Second))
}
