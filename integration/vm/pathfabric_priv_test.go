//go:build privileged

package vm_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// pathFabricShift is the icount shift of the deterministic suite: 4 ns of
// guest time per instruction.
const pathFabricShift = 2

// stallBudget is the promise: the longest gap between completed reads
// that a cut may cause, in the deterministic guest's time.
const stallBudget = 200 // ms

// bootPathFabric boots a deterministic guest (icount shift) from a Fabric
// image of kernel and starts a path fabric in it.
func bootPathFabric(t *testing.T, kernel string, shift int, o vm.PathFabricOptions) (*vm.Guest, *vm.PathFabric) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := vm.BuildImage(ctx, vm.ImageOptions{KernelPackage: kernel, Fabric: true, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	g, err := vm.Boot(ctx, vm.Config{Name: "pf", Dir: t.TempDir(), Image: img, MemoryMB: vm.PathFabricMemoryMB,
		Icount: &vm.Icount{Shift: shift}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	t.Logf("Linux %s booted in %s of wall time (icount shift %d)", img.KernelRelease, g.BootDuration().Round(time.Millisecond), shift)
	pf, err := vm.StartPathFabric(ctx, g, o)
	if err != nil {
		t.Fatal(err)
	}
	return g, pf
}

// TestPrivVMPathFabric: the whole dual-path fabric in one guest in
// instruction-counted time (vm.PathFabric: two switch agents in direct
// mode, the target with its agent, the host under test with its agent
// and native multipath, round-robin). A few cuts of the target's port on
// leaf1, on each kernel: the switch tells the host (reason 1), the host's
// agent fails the path over, and the longest gap between completed reads
// is at most 200 ms of guest time, with no read error; the path is live
// again after the restore. Then 2 cuts with sequence-numbered writes: every
// block read back after each cut holds its last acknowledged write. The
// bound is in the guest's instruction-counted time, where the cut's cost
// is the same however busy the machine is.
func TestPrivVMPathFabric(t *testing.T) {
	topo.RequireVM(t)
	for _, kernel := range vm.EnvKernels() {
		name := kernel
		if name == "" {
			name = "6.1"
		}
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			g, pf := bootPathFabric(t, kernel, pathFabricShift, vm.PathFabricOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			const cuts = 3
			reps, out, err := pf.Cuts(ctx, vm.CutOptions{N: cuts, IOPolicy: "round-robin", Settle: time.Second,
				After: 500 * time.Millisecond})
			if err != nil {
				t.Fatalf("%v\n%s", err, pf.Diagnose(ctx))
			}
			t.Logf("%s", out)
			if len(reps) != cuts {
				t.Fatalf("%d cut reports, want %d", len(reps), cuts)
			}
			for _, r := range reps {
				if r.Problem != "" || r.Errors != 0 || r.StallMS > stallBudget || r.NotLiveMS == 0 || r.BackMS == 0 {
					t.Errorf("cut %d: stall %.1f ms (budget %d ms), %d read errors, not live after %.1f ms, back %.1f ms; %s",
						r.Cut, r.StallMS, stallBudget, r.Errors, r.NotLiveMS, r.BackMS, r.Problem)
				}
			}
			// Writes: sequence-numbered blocks, every one read back after
			// each cut.
			wreps, wout, err := pf.Cuts(ctx, vm.CutOptions{N: 2, IOPolicy: "round-robin", Write: true,
				Settle: time.Second, After: 500 * time.Millisecond})
			if err != nil {
				t.Fatalf("writes: %v\n%s", err, pf.Diagnose(ctx))
			}
			t.Logf("%s", wout)
			if len(wreps) != 2 {
				t.Fatalf("writes: %d cut reports, want 2", len(wreps))
			}
			for _, r := range wreps {
				if r.Problem != "" || r.Errors != 0 || r.StallMS > stallBudget || r.Verified == 0 || r.Mismatches != 0 {
					t.Errorf("writes, cut %d: stall %.1f ms, %d write errors, %d blocks verified, %d not the last acknowledged write; %s",
						r.Cut, r.StallMS, r.Errors, r.Verified, r.Mismatches, r.Problem)
				}
			}
			if oops := vm.KernelOops(g.Console()); oops != "" {
				t.Errorf("kernel oops:\n%s", oops)
			}
			// The host's agent acted on the switch's notification: one
			// failover per cut, of the cut path, for reason 1.
			n, err := pf.Grep(ctx, "/tmp/host.log", `msg="path failed over"`)
			if err != nil {
				t.Fatal(err)
			}
			if n < cuts+2 {
				t.Errorf("host agent failed %d paths over in %d cuts\n%s", n, cuts+2, pf.Tail(ctx, "/tmp/host.log", 40))
			}
			if n, _ := pf.Grep(ctx, "/tmp/host.log", `reason=link-down`); n < cuts+2 {
				t.Errorf("host agent logged reason link-down %d times in %d cuts", n, cuts+2)
			}
			if os.Getenv("INOF_VM_DEBUG") != "" {
				r, _ := g.Run(ctx, "sh", "-c", "grep -E 'failed over|notif|inactive|link-down' /tmp/host.log | tail -20; dmesg | tail -40; tail -20 /tmp/leaf1.log")
				t.Logf("debug:\n%s", r.Stdout)
			}
			t.Logf("%d cuts in %s of wall time (boot included)", cuts+2, time.Since(start).Round(time.Second))
		})
	}
}
