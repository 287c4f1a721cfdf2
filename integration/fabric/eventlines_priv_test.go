//go:build privileged

package fabric

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
)

// TestPrivEventLinesBudget: the real inofd switch (direct mode) with
// log.event_lines 1 takes a burst of registrations on one port. Every
// registration is taken; the "device registered" lines written stay within
// the budget (a burst of 10 plus one a second), and the rest are counted
// in "event lines not logged one by one" lines, so that written and counted
// together make every registration.
func TestPrivEventLinesBudget(t *testing.T) {
	requireSwitchRole(t)
	const burst = 100 // registrations, within a port's 128 entries
	spec := topo.Spec{Switches: []string{"sw1"}, Devices: []topo.Device{probeTarget("t1", "sw1")},
		SwitchConfig: func(_ string, cfg map[string]any) {
			cfg["log"].(map[string]any)["event_lines"] = 1
			cfg["access_limits"] = map[string]any{"registrations_per_second": 100000, "registration_burst": 100000}
		}}
	f := topo.Start(t, spec)
	sw := f.Node("sw1")
	if _, err := sw.WaitLog(0, `msg="direct mode: no reflectors, no BGP`, wait); err != nil {
		t.Fatal(err)
	}
	p := f.Node("t1").Probe(0)
	frames := make([][]byte, burst)
	a := p.Addr()
	for i := range frames {
		reg, _, err := topo.TargetFrames(p.MAC(), a, fmt.Sprintf("burst_%d", i), subNQN)
		if err != nil {
			t.Fatal(err)
		}
		frames[i], a = reg, a.Next()
	}
	mark := sw.LogSize()
	start := time.Now()
	for _, fr := range frames {
		if err := p.SendRaw(fr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sw.WaitMetric(wait, func(v float64) bool { return v == burst }, "inof_switch_registrations"); err != nil {
		t.Fatal(err)
	}
	summary := regexp.MustCompile(`msg="event lines not logged one by one" line="device registered" count=(\d+)`)
	written, counted := 0, 0
	deadline := time.Now().Add(wait)
	for written+counted < burst {
		if time.Now().After(deadline) {
			t.Fatalf("%d registration lines written and %d counted in %s, want %d together:\n%s",
				written, counted, wait, burst, sw.Log()[mark:])
		}
		time.Sleep(100 * time.Millisecond)
		log := sw.Log()[mark:]
		written, counted = strings.Count(log, `msg="device registered"`), 0
		for _, m := range summary.FindAllStringSubmatch(log, -1) {
			n, _ := strconv.Atoi(m[1])
			counted += n
		}
	}
	// The budget allows its burst and one line a second since the first.
	if most := 10 + int(math.Ceil(time.Since(start).Seconds())); written > most {
		t.Errorf("%d of %d registration lines written within %s, want at most %d", written, burst, time.Since(start), most)
	}
	if written+counted != burst {
		t.Errorf("%d registration lines written and %d counted, want %d together", written, counted, burst)
	}
}
