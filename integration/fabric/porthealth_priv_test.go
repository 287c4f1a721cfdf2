//go:build privileged

package fabric

import (
	"fmt"
	"net/netip"
	"path/filepath"
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

// TestPrivPortHealthHostPort: a dual-homed host h3 (one NIC on each leaf)
// whose leaf1 port storms is told by leaf1, on that port, that each of the
// target's paths from its leaf1 address is inactive with reason 2; it
// keeps its leaf2 paths (nothing about them, no disconnect), and is told
// the leaf1 paths active again after recovery.
func TestPrivPortHealthHostPort(t *testing.T) {
	db := topo.StartCountersDB(t)
	dual := topo.Device{Name: "h3", NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}, {Switch: "leaf2", Role: "host", Protocol: "tcp"}}}
	spec := fabricSpec(true, dual)
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if name == "leaf1" {
			cfg["port_health"] = map[string]any{"source": "sonic", "redis": db.Sock}
		}
	}
	f := upWithTarget(t, spec, "h3")
	h3, tgt, leaf1, leaf2 := f.Node("h3"), f.Node("tgt"), f.Node("leaf1"), f.Node("leaf2")
	sick, kept := h3.Links[0], h3.Links[1]
	if sick.Switch != leaf1 || kept.Switch != leaf2 {
		t.Fatalf("h3's NICs are on %s and %s", sick.Switch.Name, kept.Switch.Name)
	}
	for _, l := range tgt.Links { // the leaf2 NIC's connects too
		if _, err := h3.WaitNVMe(wait, fmt.Sprintf("connect -t tcp -a %s -s 4420 -w %s ", l.Addr(), kept.Addr())); err != nil {
			t.Fatal(err)
		}
	}
	db.AddSwitch(leaf1)
	m := marks(h3, leaf1, leaf2)
	at := time.Now()
	db.SetStormed(sick.Port, true)
	var lat []time.Duration
	for _, l := range tgt.Links {
		lat = append(lat, sent(t, leaf1, m["leaf1"], sick.Addr(), l.Addr(), inof.StateInactive, inof.ReasonPFCStorm, at))
		if _, err := h3.WaitLog(m["h3"], `msg="target inactive; controller kept for multipath and keep-alive"[^\n]* target=`+
			regexp.QuoteMeta(l.Addr().String())+` host=`+regexp.QuoteMeta(sick.Addr().String())+` [^\n]*reason=pfc-storm`, wait); err != nil {
			t.Fatal(err)
		}
	}
	after := marks(leaf1)
	back := time.Now()
	db.SetStormed(sick.Port, false)
	for _, l := range tgt.Links {
		d := sent(t, leaf1, after["leaf1"], sick.Addr(), l.Addr(), inof.StateActive, inof.ReasonNone, back)
		t.Logf("path %s → %s active again %v after the storm ended", sick.Addr(), l.Addr(), d)
	}
	keptRe := regexp.MustCompile(`host=` + regexp.QuoteMeta(kept.Addr().String()) + ` `)
	if keptRe.MatchString(h3.Log()[m["h3"]:]) {
		t.Errorf("h3 logged something about its leaf2 paths:\n%s", h3.Log()[m["h3"]:])
	}
	if keptRe.MatchString(leaf2.Log()[m["leaf2"]:]) {
		t.Errorf("leaf2 told h3's leaf2 NIC something:\n%s", leaf2.Log()[m["leaf2"]:])
	}
	if calls := h3.NVMeCalls(); count(calls, "disconnect") != 0 {
		t.Errorf("h3 nvme calls %q: no disconnect expected", calls)
	}
	report.Record(t, "port-health host port (storm in COUNTERS_DB → the host's switch sends, reason 2)", lat)
}

// TestPrivPortHealthSnsdHost: nvme-snsd's captured registration and
// zone query (host-register.pcap, RoCE) replayed on a leaf1 port that
// leaf1 watches through COUNTERS_DB, a RoCE target on leaf2. The port is
// reported stormed, then takes 100 input errors: the host is told the
// target inactive with reason 2, then 3, and active after each recovery,
// every frame passing nvme-snsd's acceptance rules (snsd-wire.md §5–§6)
// and ACKed as snsd does.
func TestPrivPortHealthSnsdHost(t *testing.T) {
	requireSwitchRole(t)
	frames, err := readPcap(filepath.Join(captures, "host-register.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 2 || frames[1][22] != 0x23 {
		t.Fatal("host-register.pcap does not start with snsd's LLDPDU and zone query")
	}
	db := topo.StartCountersDB(t)
	tgtDev := topo.Device{Name: "tgt", NICs: []topo.NIC{{Switch: "leaf2", Role: "target", Protocol: "rdma", Port: 4420, NQN: subNQN}}}
	snsd := topo.Device{Name: "snsd", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Address: "10.77.0.2/24", MAC: "a6:b9:d7:5d:f8:ea"}}}
	spec := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{tgtDev, snsd}, Passive: []string{"tgt"}}
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if name == "leaf1" {
			cfg["port_health"] = map[string]any{"source": "sonic", "redis": db.Sock, "error_recovery": "1s"}
		}
	}
	f := topo.Start(t, spec)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	leaf1, node := f.Node("leaf1"), f.Node("snsd")
	p := node.Probe(0)
	p.SetAutoAck(false)
	for _, fr := range frames[:2] {
		if err := p.SendRaw(fr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leaf1.WaitMetric(wait, func(v float64) bool { return v == 1 }, "inof_switch_registrations"); err != nil {
		t.Fatal(err)
	}
	tgt := f.Node("tgt")
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	db.AddSwitch(leaf1)
	port := node.Links[0].Port
	h := &snsdHost{t: t, p: p, ips: []netip.Addr{netip.MustParseAddr("10.77.0.2")}, target: tgt.Links[0].Addr()}
	h.expect(1, 0)
	db.SetStormed(port, true)
	h.expect(0, uint32(inof.ReasonPFCStorm))
	db.SetStormed(port, false)
	h.expect(1, 0)
	db.AddErrors(port, 100)
	h.expect(0, uint32(inof.ReasonPacketErr))
	h.expect(1, 0)
	t.Logf("%d notify frames checked against nvme-snsd's acceptance rules", h.checked)
}
