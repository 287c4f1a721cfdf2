//go:build privileged

package vm_test

import (
	"context"
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
// again after the restore. The host agent's metrics (read through the
// guest) count an inactive notification per cut.
func TestPrivTopoInGuestPortDown(t *testing.T) {
	requireFabric(t, true)
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
		InGuest: &topo.GuestOptions{Icount: &vm.Icount{Shift: pathFabricShift}},
	})
	t.Logf("guest booted and fabric started in %s of wall time", time.Since(start).Round(time.Second))
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
	g := f.Guest()
	if oops := vm.KernelOops(g.Console()); oops != "" {
		t.Errorf("kernel oops:\n%s", oops)
	}
	if n, _ := g.Grep(ctx, host.GuestLog(), `reason=link-down`); n < cuts {
		t.Errorf("host agent logged reason link-down %d times in %d cuts\n%s", n, cuts, g.Tail(ctx, host.GuestLog(), 40))
	}
	after, err := host.Notifications("inactive")
	if err != nil {
		t.Fatal(err)
	}
	if after-before < cuts {
		t.Errorf("host agent counted %.0f inactive notifications in %d cuts", after-before, cuts)
	}
	t.Logf("%s of wall time (boot included)", time.Since(start).Round(time.Second))
}
