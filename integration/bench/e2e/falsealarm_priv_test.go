//go:build privileged

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
)

// hogWorkers is stress-ng's CPU workers during a false-alarm run: twice
// the two cores of the machines this runs on, every core busy.
const hogWorkers = "4"

// hogFor is how long each false-alarm run keeps the CPU busy: BENCH_HOG
// when set (a Go duration), 20 s with -short or BENCH_TRIALS, else 3 min.
func hogFor(b *testing.B) time.Duration {
	if s := os.Getenv("BENCH_HOG"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			b.Fatalf("BENCH_HOG=%q: want a positive duration", s)
		}
		return d
	}
	if quick() {
		return 20 * time.Second
	}
	return 3 * time.Minute
}

// BenchmarkPrivFalseAlarms measures issue #46's false alarms: a fabric of
// one reflector and three leaves (a probe target on leaf1, a probe host on
// leaf2 and on leaf3) runs under `stress-ng --cpu 4` for hogFor at each
// BFD setting, with the reflector confirming BFD downs (after) and not
// (before: every BFD down is a switch gone). It counts, during the hog,
// the reflector's BFD downs of live switches, those it confirmed (each
// one a session shut and the switch's records withdrawn), the BGP
// sessions lost, and the reason-7 notifications the hosts received
// (every one a false alarm: nothing was killed). Then, the hog still on,
// leaf1 is SIGKILLed a few times: the detection row beside it is the kill
// to the reason-7 frame at both hosts. It writes $BENCH_OUT/falsealarms.json.
func BenchmarkPrivFalseAlarms(b *testing.B) {
	requireSwitchRole(b)
	netns.RequireTool(b, "stress-ng")
	hog, kills := hogFor(b), trials(b, 10, 3)
	rows := []result.Row{machineRow(b, "false alarms, start")}
	intervals, modes := falseAlarmSettings(b)
	for _, interval := range intervals {
		for _, confirm := range modes {
			rows = append(rows, falseAlarmRun(b, interval, 3, confirm, hog, kills)...)
		}
	}
	rows = append(rows, machineRow(b, "false alarms, end"))
	writeRows(b, "falsealarms", rows)
}

// falseAlarmSettings are the BFD intervals (multiplier 3) and the
// reflector's modes (confirming or not) of BenchmarkPrivFalseAlarms:
// BENCH_FA_INTERVALS (comma-separated durations) and BENCH_FA_MODES
// ("before", "after" or both) when set, else 50, 100 and 300 ms, each
// before and after.
func falseAlarmSettings(b *testing.B) ([]string, []bool) {
	b.Helper()
	intervals := []string{"50ms", "100ms", "300ms"}
	if s := os.Getenv("BENCH_FA_INTERVALS"); s != "" {
		intervals = nil
		for _, f := range strings.Split(s, ",") {
			if d, err := time.ParseDuration(strings.TrimSpace(f)); err != nil || d <= 0 {
				b.Fatalf("BENCH_FA_INTERVALS=%q: want positive durations", s)
			}
			intervals = append(intervals, strings.TrimSpace(f))
		}
	}
	modes := []bool{false, true}
	if s := os.Getenv("BENCH_FA_MODES"); s != "" {
		modes = nil
		for _, f := range strings.Split(s, ",") {
			switch strings.TrimSpace(f) {
			case "before":
				modes = append(modes, false)
			case "after":
				modes = append(modes, true)
			default:
				b.Fatalf("BENCH_FA_MODES=%q: want before, after or both", s)
			}
		}
	}
	return intervals, modes
}

// falseAlarmRun is one fabric of BenchmarkPrivFalseAlarms.
func falseAlarmRun(b *testing.B, interval string, mult int, confirm bool, hog time.Duration, kills int) []result.Row {
	b.Helper()
	spec := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2", "leaf3"},
		Devices: []topo.Device{
			{Name: "tp", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "h2", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}},
			{Name: "h3", Probe: true, NICs: []topo.NIC{{Switch: "leaf3"}}},
		}}
	spec = withBFD(spec, interval, mult, 2*time.Second)
	rrConfig := spec.ReflectorConfig
	spec.ReflectorConfig = func(name string, cfg map[string]any) {
		rrConfig(name, cfg)
		bfd := cfg["bfd"].(map[string]any)
		bfd["confirm"], bfd["dampen"] = confirm, confirm
	}
	f := topo.Start(b, spec)
	establish(b, f)
	hs := listen(b, f.Node("h2").Probe(0), f.Node("h3").Probe(0))
	tp := f.Node("tp").Probe(0)
	reg, _, err := topo.TargetFrames(tp.MAC(), tp.Addr(), "probe_eth0_01", subNQN)
	if err != nil {
		b.Fatal(err)
	}
	if err := tp.SendRaw(reg); err != nil {
		b.Fatal(err)
	}
	both := []int{0, 1}
	if _, _, err := hs.awaitAll(both, tp.Addr(), inof.StateActive, time.Time{}, wait); err != nil {
		b.Fatal(err)
	}
	rr, leaf1 := f.Node("rr1"), f.Node("leaf1")
	mode := map[bool]string{false: "before (every BFD down a switch gone)", true: "after (downs confirmed, flaps dampened)"}[confirm]
	label := fmt.Sprintf("BFD %d × %s, %s", mult, interval, mode)

	// The hog, nothing killed: every reason 7 is a false alarm.
	mark := rr.LogSize()
	before := reflectorCounts(b, rr)
	stress := exec.Command("stress-ng", "--cpu", hogWorkers, "--quiet")
	if err := stress.Start(); err != nil {
		b.Fatal(err)
	}
	stopHog := func() { stress.Process.Kill(); stress.Wait() }
	defer stopHog()
	falseSevens, falseOthers := 0, 0
	end := time.After(hog)
	// The probe target registers again every 30 s, as a device does at
	// nvme-snsd's interval: a hog longer than the TTL (120 s) must not age
	// it out.
	again := time.NewTicker(30 * time.Second)
	defer again.Stop()
	for waiting := true; waiting; {
		select {
		case nt := <-hs.ch:
			switch {
			case !hs.fresh(nt) || nt.n.State != inof.StateInactive:
			case nt.n.Reason == inof.ReasonBFDDown:
				falseSevens++
			default:
				falseOthers++
				b.Logf("%s: inactive with reason %s at a host, nothing killed", label, nt.n.Reason)
			}
		case <-again.C:
			if err := tp.SendRaw(reg); err != nil {
				b.Fatal(err)
			}
		case <-end:
			waiting = false
		}
	}
	load := machineRow(b, "at the end of the hog, "+label)
	after := reflectorCounts(b, rr)
	lost := len(regexp.MustCompile(`msg="BGP session lost"[^\n]*kind=client`).FindAllStringIndex(rr.Log()[mark:], -1))
	b.Logf("%s: %d BFD downs, %d confirmed, %d unconfirmed, %d sessions lost, %d reason-7 and %d other inactive at hosts in %v (%s)", label,
		int(after.downs-before.downs), int(after.confirmed-before.confirmed), int(after.unconfirmed-before.unconfirmed), lost,
		falseSevens, falseOthers, hog, load.Note)
	rows := []result.Row{{Group: "false alarms under a CPU hog", Name: label + ": reason-7 notifications at hosts, nothing killed", Unit: "count",
		Value: float64(falseSevens), Goal: "0 at the defaults (3 × 100 ms)",
		Note: fmt.Sprintf("%v of stress-ng --cpu %s; reflector: %d BFD downs of live switches (%d confirmed, %d not), %d BGP sessions lost; %d inactive notifications with other reasons; %s",
			hog, hogWorkers, int(after.downs-before.downs), int(after.confirmed-before.confirmed), int(after.unconfirmed-before.unconfirmed), lost,
			falseOthers, load.Note)}}

	// Real kills, the hog still on.
	var lat []time.Duration
	missed := 0
	for range kills {
		// Back to a settled fabric first: the target active at both hosts.
		hs.drain()
		if hs.state[0][tp.Addr()] != inof.StateActive || hs.state[1][tp.Addr()] != inof.StateActive {
			if _, _, err := hs.awaitAll(both, tp.Addr(), inof.StateActive, time.Time{}, 3*wait); err != nil {
				b.Logf("%s: fabric not back before a kill: %v", label, err)
				break
			}
		}
		at, err := leaf1.Kill()
		if err != nil {
			b.Fatal(err)
		}
		got, _, err := hs.awaitAll(both, tp.Addr(), inof.StateInactive, at, wait)
		if err != nil {
			missed++
			b.Logf("%s: kill not told: %v", label, err)
		} else {
			for _, g := range got {
				lat = append(lat, g.Sub(at))
			}
		}
		if err := leaf1.Start(); err != nil {
			b.Fatal(err)
		}
		if err := f.WaitEstablished(3 * wait); err != nil {
			b.Logf("%s: %v", label, err)
		}
		if err := tp.SendRaw(reg); err != nil {
			b.Fatal(err)
		}
		time.Sleep(3 * time.Second) // the reflector's settle (2 s) and the leaf's own
	}
	stopHog()
	if len(lat) > 0 {
		rows = append(rows, durations(b, result.Row{Group: "false alarms under a CPU hog", Name: label + ": detection, leaf SIGKILL → reason 7 at hosts on two other leaves", Unit: "ms",
			Goal: "p99 ≤ detection time + 200 ms", Note: fmt.Sprintf("under the same hog; %d kills not told within %v", missed, wait)}, lat))
	}
	return rows
}

// counts are the reflector's BFD counters.
type counts struct{ downs, confirmed, unconfirmed float64 }

func reflectorCounts(b *testing.B, rr *topo.Node) counts {
	b.Helper()
	m, err := rr.Metrics()
	if err != nil {
		b.Fatal(err)
	}
	var c counts
	c.downs, _ = m.Sum("inof_reflector_bfd_transitions_total", "state", "down")
	c.confirmed, _ = m.Sum("inof_reflector_bfd_switch_downs_total", "outcome", "confirmed")
	c.unconfirmed, _ = m.Sum("inof_reflector_bfd_switch_downs_total", "outcome", "unconfirmed")
	return c
}
