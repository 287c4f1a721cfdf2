//go:build privileged

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// pfPolicy is one host under test of the deterministic path fabric, and
// the reason its cuts give.
type pfPolicy struct {
	name     string
	failover string // inof-host failover.method; "none" is keep-alive alone
	iopolicy string
	write    bool
	// outage is what each cut does: vm.PortDown (reason 1) in the
	// fabric's direct mode, the others in its BGP mode (a reflector, BFD
	// at bfd × 3 between leaves and reflector, 100 ms when 0).
	outage vm.Outage
	bfd    time.Duration
}

// reason is the notification reason of the policy's cuts.
func (p pfPolicy) reason() string {
	switch p.outage {
	case vm.SwitchLost:
		return fmt.Sprintf("reason 7 (leaf1 lost; BFD 3 × %s)", p.bfd)
	case vm.TargetSilent:
		return "reason 6 (the target's agent on leaf1 killed: its registration aged out after the 4 s TTL)"
	case vm.ZoneRemoved:
		return "reason 4 (the host's leaf1 address removed from the zone with inofctl)"
	}
	return "reason 1"
}

var pfPolicies = []pfPolicy{
	{name: "inof-host defaults, round-robin", iopolicy: "round-robin"},
	{name: "inof-host defaults, numa", iopolicy: "numa"},
	{name: "keep-alive only (baseline), round-robin", failover: "none", iopolicy: "round-robin"},
	{name: "inof-host defaults, round-robin, sequence-numbered writes", iopolicy: "round-robin", write: true},
	{name: "leaf1 lost, BFD 3 × 100 ms, inof-host defaults, round-robin", iopolicy: "round-robin", outage: vm.SwitchLost, bfd: 100 * time.Millisecond},
	{name: "leaf1 lost, BFD 3 × 100 ms, inof-host defaults, numa", iopolicy: "numa", outage: vm.SwitchLost, bfd: 100 * time.Millisecond},
	{name: "leaf1 lost, BFD 3 × 50 ms, inof-host defaults, round-robin", iopolicy: "round-robin", outage: vm.SwitchLost, bfd: 50 * time.Millisecond},
	{name: "leaf1 lost, BFD 3 × 50 ms, inof-host defaults, numa", iopolicy: "numa", outage: vm.SwitchLost, bfd: 50 * time.Millisecond},
	{name: "target silent on leaf1 (age-out), inof-host defaults, round-robin", iopolicy: "round-robin", outage: vm.TargetSilent},
	{name: "target silent on leaf1 (age-out), inof-host defaults, numa", iopolicy: "numa", outage: vm.TargetSilent},
	{name: "host's leaf1 address out of the zone, inof-host defaults, round-robin", iopolicy: "round-robin", outage: vm.ZoneRemoved},
	{name: "host's leaf1 address out of the zone, inof-host defaults, numa", iopolicy: "numa", outage: vm.ZoneRemoved},
}

// wallClock as a shift runs the guest without icount: the same fabric in
// wall-clock time, the comparison.
const wallClock = -1

// pfShifts are the icount shifts: INOF_VM_SHIFTS (comma-separated, "wall"
// for none), else 2.
func pfShifts(b *testing.B) []int {
	s := os.Getenv("INOF_VM_SHIFTS")
	if s == "" {
		return []int{2}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "wall" {
			out = append(out, wallClock)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 10 {
			b.Fatalf("INOF_VM_SHIFTS=%q: want shifts 0..10 or wall", s)
		}
		out = append(out, n)
	}
	return out
}

// clockName names a shift in rows and sub-benchmarks.
func clockName(shift int) string {
	if shift == wallClock {
		return "wall-clock"
	}
	return "shift " + strconv.Itoa(shift)
}

// pfSelected are the policies INOF_PF_POLICIES names (indexes into
// pfPolicies, comma-separated), else all.
func pfSelected(b *testing.B) []pfPolicy {
	s := os.Getenv("INOF_PF_POLICIES")
	if s == "" {
		return pfPolicies
	}
	var ps []pfPolicy
	for _, f := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 0 || i >= len(pfPolicies) {
			b.Fatalf("INOF_PF_POLICIES=%q: want indexes 0..%d", s, len(pfPolicies)-1)
		}
		ps = append(ps, pfPolicies[i])
	}
	return ps
}

// BenchmarkPrivVMPathFabric cuts the target's port on leaf1 of the whole
// dual-path fabric inside one deterministic guest (vm.PathFabric, icount
// shift 2 unless INOF_VM_SHIFTS says otherwise) BENCH_TRIALS times (20; 3
// with -short) per kernel and host policy, one guest per policy, and writes
// per kernel, policy and shift the stall (longest gap between completed
// I/Os from the cut until I/O went on), the floor before each cut, cut →
// path not live and link up → path live, all in guest time, as rows of the
// "failover, deterministic" group. Reason 1 (the switch sees the target's
// port go down) is the reason of the first four policies; the others lose
// leaf1 whole (reason 7: the fabric in BGP mode, leaf1's uplink and data
// plane down and its agent SIGKILLed, found by the reflector's BFD) and
// add the stall counted from the host agent's notification, the time to
// that notification and leaf1's return to the fabric.
func BenchmarkPrivVMPathFabric(b *testing.B) {
	topo.RequireVM(b)
	cuts := trials(b, 20, 3)
	var rows []result.Row
	for _, kernel := range vm.EnvKernels() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		img, err := vm.BuildImage(ctx, vm.ImageOptions{KernelPackage: kernel, Fabric: true, Log: b.Logf})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		for _, shift := range pfShifts(b) {
			for _, p := range pfSelected(b) {
				b.Run(img.KernelRelease+"/"+clockName(shift)+"/"+p.name, func(b *testing.B) {
					rows = append(rows, runPathFabric(b, img, shift, p, cuts)...)
				})
			}
		}
	}
	writeRows(b, "failover-deterministic", rows)
}

func runPathFabric(b *testing.B, img vm.Image, shift int, p pfPolicy, cuts int) []result.Row {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cuts+2)*3*time.Minute)
	defer cancel()
	start := time.Now()
	cfg := vm.Config{Name: "pf", Dir: b.TempDir(), Image: img, MemoryMB: vm.PathFabricMemoryMB}
	if shift != wallClock {
		cfg.Icount = &vm.Icount{Shift: shift}
	}
	g, err := vm.Boot(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	po := vm.PathFabricOptions{Failover: p.failover}
	if p.outage != vm.PortDown {
		po.Reflector = &vm.PathReflector{BFDInterval: p.bfd, BFDMult: 3}
	}
	pf, err := vm.StartPathFabric(ctx, g, po)
	if err != nil {
		b.Fatal(err)
	}
	reps, out, err := pf.Cuts(ctx, vm.CutOptions{N: cuts, IOPolicy: p.iopolicy, Write: p.write, Outage: p.outage,
		Settle: time.Second, After: 500 * time.Millisecond})
	if err != nil {
		b.Fatalf("%v\n%s", err, pf.Diagnose(ctx))
	}
	b.Logf("%s\n%d cuts in %s of wall time (boot included)", out, cuts, time.Since(start).Round(time.Second))
	var stall, floor, notLive, back, notified, fromNotify, rejoin, removed []time.Duration
	var errs uint64
	verified, bad, problems := 0, 0, 0
	msd := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, r := range reps {
		stall, floor = append(stall, msd(r.StallMS)), append(floor, msd(r.FloorMS))
		notLive, back = append(notLive, msd(r.NotLiveMS)), append(back, msd(r.BackMS))
		notified, fromNotify = append(notified, msd(r.NotifiedMS)), append(fromNotify, msd(r.FromNotifyMS))
		rejoin, removed = append(rejoin, msd(r.RejoinMS)), append(removed, msd(r.GoneMS))
		errs += r.Errors
		verified, bad = verified+r.Verified, bad+r.Mismatches
		if r.Problem != "" {
			problems++
			b.Logf("cut %d: %s", r.Cut, r.Problem)
		}
	}
	failedOver, err := pf.Grep(ctx, "/tmp/host.log", `msg="path failed over"`)
	if err != nil {
		b.Fatal(err)
	}
	kern := fmt.Sprintf("Linux %s, icount shift %d (guest time)", img.KernelRelease, shift)
	if shift == wallClock {
		kern = fmt.Sprintf("Linux %s, wall-clock time (no icount), machine load %s", img.KernelRelease, loadAvg())
	}
	note := fmt.Sprintf("%s; %s; %d I/O errors, %d problems in %d cuts; the agent failed %d paths over",
		kern, p.reason(), errs, problems, len(reps), failedOver)
	if p.write {
		note += fmt.Sprintf("; %d blocks verified after the cuts, %d not the last acknowledged write", verified, bad)
	}
	name := p.name + " (" + img.KernelRelease + ", " + clockName(shift) + ")"
	switch p.outage {
	case vm.TargetSilent, vm.ZoneRemoved:
		return []result.Row{
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": longest gap between I/Os from the notification",
				Unit: "ms", Goal: "≤ 200 ms p99, 0 I/O errors", Note: note + "; gaps under 2 ms count as 2 ms"}, fromNotify),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": cut → host notified",
				Unit: "ms", Note: kern + "; the earliest of the daemons' log lines of it, to their millisecond"}, notified),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": cut → path removed",
				Unit: "ms", Note: kern + "; restrain time 5 s"}, removed),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": restore → a new path live",
				Unit: "ms", Note: kern}, back),
		}
	case vm.SwitchLost:
		return []result.Row{
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": longest gap between I/Os from the cut",
				Unit: "ms", Goal: "≤ 200 ms p99, 0 I/O errors", Note: note}, stall),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": longest gap between I/Os from the detection",
				Unit: "ms", Goal: "≤ 200 ms p99", Note: kern + "; gaps under 2 ms count as 2 ms"}, fromNotify),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": cut → detected (reason 7)",
				Unit: "ms", Note: kern + "; the earliest of the daemons' log lines of it (the reflector's BFD down), to their millisecond"}, notified),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": floor (nothing broken, 1 s before each cut)",
				Unit: "ms", Note: kern}, floor),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": leaf1 links up and agent started → path live",
				Unit: "ms", Goal: "≤ 2 s p99", Note: kern}, back),
			durations(b, result.Row{Group: "failover, deterministic", Name: name + ": leaf1 links up and agent started → back in the fabric",
				Unit: "ms", Note: kern + "; leaf2 tells the host leaf1's target is active again"}, rejoin),
		}
	}
	return []result.Row{
		durations(b, result.Row{Group: "failover, deterministic", Name: name + ": longest gap between I/Os at a cut",
			Unit: "ms", Goal: "≤ 200 ms p99, 0 I/O errors", Note: note}, stall),
		durations(b, result.Row{Group: "failover, deterministic", Name: name + ": floor (nothing broken, 1 s before each cut)",
			Unit: "ms", Note: kern}, floor),
		durations(b, result.Row{Group: "failover, deterministic", Name: name + ": cut → path not live",
			Unit: "ms", Note: kern}, notLive),
		durations(b, result.Row{Group: "failover, deterministic", Name: name + ": link up → path live",
			Unit: "ms", Goal: "≤ 2 s p99", Note: kern}, back),
	}
}

// loadAvg is the machine's 1-minute load average, for the notes of
// wall-clock rows.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b) + " ?")[0]
}
