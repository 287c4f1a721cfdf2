//go:build privileged

package fabric

import (
	"regexp"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// TestPrivPortHealthReasons2And3: leaf1 reads its port counters from a
// SONiC COUNTERS_DB (a real redis-server the test writes as syncd would).
// The dual-homed target's leaf1 port is reported stormed by the PFC
// watchdog, then takes a burst of receive errors: each time both hosts
// hear about the leaf1 path only (inactive, reason 2 then 3), keep the
// leaf2 path, and hear the leaf1 path active again after recovery.
func TestPrivPortHealthReasons2And3(t *testing.T) {
	db := topo.StartCountersDB(t)
	spec := fabricSpec(true)
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if name == "leaf1" {
			cfg["port_health"] = map[string]any{"source": "sonic", "redis": db.Sock, "error_recovery": "1s"}
		}
	}
	f := upWithTarget(t, spec, "h1", "h2")
	tgt, leaf1, leaf2 := f.Node("tgt"), f.Node("leaf1"), f.Node("leaf2")
	lost, kept := tgt.Links[0], tgt.Links[1]
	if lost.Switch != leaf1 {
		t.Fatalf("the target's first NIC is on %s", lost.Switch.Name)
	}
	db.AddSwitch(leaf1)
	var lat []time.Duration
	episode := func(reason inof.Reason, begin, end func()) {
		t.Helper()
		m := marks(f.Node("h1"), f.Node("h2"), leaf1, leaf2)
		at := time.Now()
		begin()
		for _, h := range []string{"h1", "h2"} {
			hn := f.Node(h)
			if _, err := hn.WaitLog(m[h], keptLine(lost.Addr().String(), reason.String()), wait); err != nil {
				t.Fatal(err)
			}
			sw := hn.Links[0].Switch
			lat = append(lat, sent(t, sw, m[sw.Name], hn.Links[0].Addr(), lost.Addr(), inof.StateInactive, reason, at))
		}
		// Marks after the inactive lines: the switch logs lines in order, so
		// an active line before them (the first connect's) is behind these.
		after := marks(leaf1, leaf2)
		back := time.Now()
		end()
		for _, h := range []string{"h1", "h2"} {
			hn := f.Node(h)
			sw := hn.Links[0].Switch
			d := sent(t, sw, after[sw.Name], hn.Links[0].Addr(), lost.Addr(), inof.StateActive, inof.ReasonNone, back)
			t.Logf("%s: %s path active again %v after the condition ended", h, reason, d)
		}
		for _, h := range []string{"h1", "h2"} {
			hn := f.Node(h)
			if regexp.MustCompile(`target=` + regexp.QuoteMeta(kept.Addr().String()) + ` `).MatchString(hn.Log()[m[h]:]) {
				t.Errorf("%s logged something about the kept path %s:\n%s", h, kept.Addr(), hn.Log()[m[h]:])
			}
			if calls := hn.NVMeCalls(); count(calls, "disconnect") != 0 {
				t.Errorf("%s nvme calls %q: no disconnect expected", h, calls)
			}
		}
	}
	episode(inof.ReasonPFCStorm,
		func() { db.SetStormed(lost.Port, true) },
		func() { db.SetStormed(lost.Port, false) })
	episode(inof.ReasonPacketErr,
		func() { db.AddErrors(lost.Port, 100) },
		func() {})
	report.Record(t, "port-health (condition in COUNTERS_DB → switch sends, reasons 2 and 3)", lat)
	if v, err := leaf1.Metric("inof_switch_port_health_events_total", "condition", "pfc-storm", "port", lost.Port, "state", "sick"); err != nil || v != 1 {
		t.Errorf("leaf1 storm events: %v (%v), want 1", v, err)
	}
}
