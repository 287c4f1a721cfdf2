//go:build privileged

package fabric

import (
	"fmt"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

// quietFor is how long a test listens after the last notification it
// expects before it says a host heard nothing more: it covers the
// notifier's send and a retransmission round.
const quietFor = 2 * time.Second

// bgpSettle is how long a switch agent's BGP speaker holds back the
// withdraws of a reflector that came back (bgp.GracefulRestart.SettleTime,
// which the agent leaves at its default).
const bgpSettle = 10 * time.Second

// calmBFD makes every BFD session of spec declare its peer down after 3 s
// of silence (300 ms × 10) instead of the daemons' 300 ms. These scenarios
// are not about BFD, and with the default a daemon starved of CPU for a
// third of a second (two cores shared by many test binaries) takes a
// switch for gone and the hosts hear reason 7. It keeps spec's own hooks.
func calmBFD(spec *topo.Spec) {
	sw, rr := spec.SwitchConfig, spec.ReflectorConfig
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if sw != nil {
			sw(name, cfg)
		}
		cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
	}
	spec.ReflectorConfig = func(name string, cfg map[string]any) {
		if rr != nil {
			rr(name, cfg)
		}
		cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
	}
}

// probeHost is a probe device with one NIC on switch sw, playing a host.
func probeHost(name, sw string) topo.Device {
	return topo.Device{Name: name, Probe: true, NICs: []topo.NIC{{Switch: sw}}}
}

// requireAPI skips the test when the built reflector has no gRPC API, which
// inofctl talks to.
func requireAPI(t *testing.T) {
	t.Helper()
	if ok, err := topo.HasReflectorAPI(); err != nil || !ok {
		t.Skipf("reflector API (api.socket) not built yet (%v): zones cannot be defined with inofctl", err)
	}
}

// subscribe registers probe p as an NVMe/TCP host and sends its zone
// query.
func subscribe(t *testing.T, p *topo.Probe) {
	t.Helper()
	if err := p.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Query(); err != nil {
		t.Fatal(err)
	}
}

// await waits until probe p receives a notification about target in
// state.
func await(t *testing.T, p *topo.Probe, target netip.Addr, state inof.State) topo.Notice {
	t.Helper()
	got, err := p.WaitNotification(wait, func(n l2proto.Notification) bool { return n.Target == target && n.State == state })
	if err != nil {
		t.Fatalf("%v (want %s %s)", err, target, state)
	}
	return got
}

// heardNothing fails the test if probe p read any notification (for any
// address) since it was last drained.
func heardNothing(t *testing.T, p *topo.Probe, when string) {
	t.Helper()
	for _, n := range topo.Notices(p.Drain()) {
		t.Errorf("%s %s heard a notification %s: %+v", p.Link.Device.Name, p.Addr(), when, n.N)
	}
}

// counts returns each inof-host's count of notifications received and of
// nvme calls made.
func counts(t *testing.T, hosts ...*topo.Node) (notes map[string]float64, calls map[string]int) {
	t.Helper()
	notes, calls = map[string]float64{}, map[string]int{}
	for _, h := range hosts {
		n, err := h.Notifications("")
		if err != nil {
			t.Fatal(err)
		}
		notes[h.Name], calls[h.Name] = n, len(h.NVMeCalls())
	}
	return notes, calls
}

// unchanged fails the test if an inof-host received a notification or ran
// nvme since counts.
func unchanged(t *testing.T, notes map[string]float64, calls map[string]int, when string, hosts ...*topo.Node) {
	t.Helper()
	for _, h := range hosts {
		n, err := h.Notifications("")
		if err != nil {
			t.Fatal(err)
		}
		if n != notes[h.Name] {
			t.Errorf("%s received %v notifications %s, want 0", h.Name, n-notes[h.Name], when)
		}
		if c := h.NVMeCalls(); len(c) != calls[h.Name] {
			t.Errorf("%s ran nvme %s: %q", h.Name, when, c[calls[h.Name]:])
		}
	}
}

// sent waits until switch sw logs (after byte offset mark) that it sent
// host a notification about target with state and reason, and returns how
// long after since that was: the sending-side latency, in whole
// milliseconds as the log's time stamps are (since is truncated alike, so
// the figure is never negative).
func sent(t *testing.T, sw *topo.Node, mark int, host, target netip.Addr, state inof.State, reason inof.Reason, since time.Time) time.Duration {
	t.Helper()
	re := fmt.Sprintf(`(?m)^time=\S+ [^\n]*msg=notify [^\n]*host=%s target=%s state=%s reason=%s`,
		regexp.QuoteMeta(host.String()), regexp.QuoteMeta(target.String()), state, reason)
	line, err := sw.WaitLog(mark, re, wait)
	if err != nil {
		t.Fatal(err)
	}
	at, err := topo.LogTime(line)
	if err != nil {
		t.Fatal(err)
	}
	return at.Sub(since.Truncate(time.Millisecond))
}

// marks returns the current log size of each node.
func marks(nodes ...*topo.Node) map[string]int {
	m := map[string]int{}
	for _, n := range nodes {
		m[n.Name] = n.LogSize()
	}
	return m
}

// TestPrivZoneChangeReason4: zone z1 holds the target (inof-host on leaf1)
// and four hosts, an inof-host and a probe on each leaf. `inofctl zone
// remove` takes h1 (inof-host, leaf1) and qb (probe, leaf2) out: both get
// the target inactive with reason 4 (zone change), and h1, whose policy
// forces a disconnect for reason 4, runs nvme disconnect; h2 and qa, still
// in the zone, hear nothing. `inofctl zone add` puts them back: both get
// the target active again, h1 connects again, and h2 and qa still hear
// nothing. The latencies from the inofctl call to the frame at qb and to
// leaf1's send to h1 are recorded.
func TestPrivZoneChangeReason4(t *testing.T) {
	requireSwitchRole(t)
	requireAPI(t)
	spec := fabricSpec(false, probeHost("qa", "leaf1"), probeHost("qb", "leaf2"))
	// Act on reason 4 at once rather than after the 5 s restrain time.
	spec.HostConfig = func(_ string, cfg map[string]any) { cfg["restrain_time"] = "0s" }
	calmBFD(&spec)
	f := topo.Start(t, spec)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	rr, tgt, h1, h2 := f.Node("rr1"), f.Node("tgt"), f.Node("h1"), f.Node("h2")
	leaf1, leaf2 := f.Node("leaf1"), f.Node("leaf2")
	qa, qb := f.Node("qa").Probe(0), f.Node("qb").Probe(0)
	subscribe(t, qa)
	subscribe(t, qb)
	tl := tgt.Links[0]
	h1a, h2a := h1.Links[0].Addr().String(), h2.Links[0].Addr().String()

	// zone runs inofctl on rr1 and waits until both switches applied the
	// change; it returns when inofctl was started.
	zone := func(args ...string) time.Time {
		t.Helper()
		m := marks(leaf1, leaf2)
		at := time.Now()
		if _, err := rr.Inofctl(append(append([]string{"zone"}, args...), "--yes")...); err != nil {
			t.Fatal(err)
		}
		for _, sw := range []*topo.Node{leaf1, leaf2} {
			if _, err := sw.WaitLog(m[sw.Name], `msg="zone configuration changed"[^\n]*z1`, wait); err != nil {
				t.Fatal(err)
			}
		}
		return at
	}
	zone("create", "z1", tl.Addr().String(), h1a, h2a, qa.Addr().String(), qb.Addr().String())
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*topo.Node{h1, h2} {
		if _, err := h.WaitNVMe(wait, connectArgs(h, tl)); err != nil {
			t.Fatal(err)
		}
	}
	await(t, qa, tl.Addr(), inof.StateActive)
	await(t, qb, tl.Addr(), inof.StateActive)
	time.Sleep(quietFor) // let every first notification and its ACK settle
	qa.Drain()
	qb.Drain()
	notes, calls := counts(t, h2)
	var lat []time.Duration

	// Out of the zone.
	m := marks(leaf1)
	at := zone("remove", "z1", h1a, qb.Addr().String())
	got := await(t, qb, tl.Addr(), inof.StateInactive)
	if got.N.Reason != inof.ReasonZoneChange {
		t.Errorf("qb: inactive with reason %v, want %v", got.N.Reason, inof.ReasonZoneChange)
	}
	lat = append(lat, got.At.Sub(at), sent(t, leaf1, m["leaf1"], h1.Links[0].Addr(), tl.Addr(), inof.StateInactive, inof.ReasonZoneChange, at))
	if _, err := h1.WaitNVMe(wait, "disconnect"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(quietFor)
	heardNothing(t, qa, "when other hosts left its zone")
	unchanged(t, notes, calls, "when other hosts left its zone", h2)
	for _, n := range topo.Notices(qb.Drain()) {
		t.Errorf("qb heard more after it left the zone: %+v", n.N)
	}

	// Back into the zone.
	m = marks(leaf1)
	at = zone("add", "z1", h1a, qb.Addr().String())
	got = await(t, qb, tl.Addr(), inof.StateActive)
	lat = append(lat, got.At.Sub(at), sent(t, leaf1, m["leaf1"], h1.Links[0].Addr(), tl.Addr(), inof.StateActive, inof.ReasonNone, at))
	if err := topo.Poll(wait, func() (bool, error) {
		n := count(h1.NVMeCalls(), connectArgs(h1, tl))
		return n == 2, fmt.Errorf("%d connects", n)
	}); err != nil {
		t.Fatalf("h1 did not connect again when it came back into the zone: %v: %q", err, h1.NVMeCalls())
	}
	time.Sleep(quietFor)
	heardNothing(t, qa, "when other hosts came back into its zone")
	unchanged(t, notes, calls, "when other hosts came back into its zone", h2)
	report.Record(t, "zone-change (inofctl → inactive/active, reason 4)", lat)
}

// TestPrivLLDPAgeOutReason6: a probe target on leaf1 registers with a 5 s
// TTL, refreshed every second; past one TTL it is still active everywhere.
// Then it stops sending LLDP, its link staying up: once the TTL ran out the
// hosts on both leaves (inof-host h1 and h2, probe q2) get it inactive
// with reason 6 (LLDP age-out), never before the TTL, and the inof-hosts,
// whose policy forces a disconnect for reason 6, disconnect. When leaf1's
// (shortened) hold-down withdraws the record, nobody hears anything more.
// The latencies from the TTL's end to the frame at q2 and to the switches'
// sends to h1 and h2 are recorded.
func TestPrivLLDPAgeOutReason6(t *testing.T) {
	requireSwitchRole(t)
	// Refreshed every second, a 5 s TTL leaves a starved test process
	// four seconds before the switch would age the target out early.
	const ttl = 5 * time.Second
	spec := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"}, Devices: []topo.Device{
		{Name: "tp", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
		host("h1", "leaf1"), host("h2", "leaf2"), probeHost("q2", "leaf2")}}
	spec.SwitchConfig = func(_ string, cfg map[string]any) { cfg["hold_down"] = "2s" }
	spec.HostConfig = func(_ string, cfg map[string]any) { cfg["restrain_time"] = "0s" }
	calmBFD(&spec)
	f := topo.Start(t, spec)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	h1, h2, leaf1, leaf2 := f.Node("h1"), f.Node("h2"), f.Node("leaf1"), f.Node("leaf2")
	tp, q2 := f.Node("tp").Probe(0), f.Node("q2").Probe(0)
	subscribe(t, q2)
	if err := tp.SetLLDP(ttl, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := tp.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, subNQN); err != nil {
		t.Fatal(err)
	}
	await(t, q2, tp.Addr(), inof.StateActive)
	for _, h := range []*topo.Node{h1, h2} {
		if _, err := h.WaitNVMe(wait, connectArgs(h, tp.Link)); err != nil {
			t.Fatal(err)
		}
	}
	// Refreshed, the registration outlives its TTL.
	time.Sleep(ttl + time.Second)
	heardNothing(t, q2, "while the target refreshed its registration")
	records, err := leaf2.Metric("inof_switch_device_records")
	if err != nil {
		t.Fatal(err)
	}
	m := marks(leaf1, leaf2)
	notes, _ := counts(t, h1, h2)

	last := tp.StopLLDP()
	expiry := last.Add(ttl)
	got := await(t, q2, tp.Addr(), inof.StateInactive)
	if got.N.Reason != inof.ReasonAgeOut {
		t.Errorf("q2: inactive with reason %v, want %v", got.N.Reason, inof.ReasonAgeOut)
	}
	if got.At.Before(expiry) {
		t.Errorf("q2: inactive %v before the TTL ran out", expiry.Sub(got.At))
	}
	lat := []time.Duration{got.At.Sub(expiry),
		sent(t, leaf1, m["leaf1"], h1.Links[0].Addr(), tp.Addr(), inof.StateInactive, inof.ReasonAgeOut, expiry),
		sent(t, leaf2, m["leaf2"], h2.Links[0].Addr(), tp.Addr(), inof.StateInactive, inof.ReasonAgeOut, expiry)}
	for _, h := range []*topo.Node{h1, h2} {
		if _, err := h.WaitNVMe(wait, "disconnect"); err != nil {
			t.Fatal(err)
		}
	}
	// The hold-down's end: leaf2 no longer holds the target's record.
	if _, err := leaf2.WaitMetric(wait, func(v float64) bool { return v < records }, "inof_switch_device_records"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(quietFor)
	heardNothing(t, q2, "after the age-out notification (the hold-down's withdraw)")
	for _, h := range []*topo.Node{h1, h2} {
		n, err := h.Notifications("")
		if err != nil {
			t.Fatal(err)
		}
		if n != notes[h.Name]+1 {
			t.Errorf("%s received %v notifications after the target fell silent, want 1", h.Name, n-notes[h.Name])
		}
	}
	report.Record(t, "lldp-age-out (TTL end → inactive, reason 6)", lat)
}

// twoReflectors is fabricSpec with a second reflector (same cluster-id)
// and a probe host on each leaf.
func twoReflectors() topo.Spec {
	spec := fabricSpec(false, probeHost("q1", "leaf1"), probeHost("q2", "leaf2"))
	spec.Reflectors = []string{"rr1", "rr2"}
	calmBFD(&spec)
	return spec
}

// sessions waits until every switch counts n established BGP sessions.
func sessions(t *testing.T, f *topo.Fabric, n int) {
	t.Helper()
	for _, sw := range f.Nodes(topo.KindSwitch) {
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v == float64(n) },
			"inof_switch_bgp_sessions", "state", "established"); err != nil {
			t.Fatal(err)
		}
	}
}

// cutReachesAll cuts the target's link and waits until every host hears of
// it with reason 1: each probe (frame read) and each inof-host (its log);
// it returns the latencies from the cut to the probes' frames and to the
// switches' sends to the inof-hosts.
func cutReachesAll(t *testing.T, f *topo.Fabric, probes []*topo.Probe, hosts ...*topo.Node) []time.Duration {
	t.Helper()
	tl := f.Node("tgt").Links[0]
	m := marks(append(hosts, f.Nodes(topo.KindSwitch)...)...)
	at := tl.Cut(t)
	var lat []time.Duration
	for _, p := range probes {
		got := await(t, p, tl.Addr(), inof.StateInactive)
		if got.N.Reason != inof.ReasonLinkDown {
			t.Errorf("%s: inactive with reason %v, want %v", p.Link.Device.Name, got.N.Reason, inof.ReasonLinkDown)
		}
		lat = append(lat, got.At.Sub(at))
	}
	for _, h := range hosts {
		if _, err := h.WaitLog(m[h.Name], keptLine(tl.Addr().String(), "link-down"), wait); err != nil {
			t.Fatal(err)
		}
		sw := h.Links[0].Switch
		lat = append(lat, sent(t, sw, m[sw.Name], h.Links[0].Addr(), tl.Addr(), inof.StateInactive, inof.ReasonLinkDown, at))
	}
	return lat
}

// TestPrivReflectorKilledNoLoss: two reflectors serve two leaves; one is
// SIGKILLed. Until both switches lost their session to it and for two
// seconds after, no host hears anything (probe hosts q1 and q2 count every
// notify frame; inof-hosts h1 and h2 their notifications and nvme calls).
// Then the target's link is cut: every host, on both leaves, is told
// (reason 1) through the remaining reflector. The latencies from the cut
// are recorded. Each reflector is the victim in turn: rr1 has the lower
// address and router-id, so the copy of every record it reflected wins
// the switches' BGP tie-break and is the one they act on; losing it is
// the harder case.
func TestPrivReflectorKilledNoLoss(t *testing.T) {
	for _, victim := range []string{"rr1", "rr2"} {
		t.Run(victim, func(t *testing.T) { reflectorKilled(t, victim) })
	}
}

// reflectorKilled is TestPrivReflectorKilledNoLoss with reflector victim
// killed.
func reflectorKilled(t *testing.T, victim string) {
	f := upWithTarget(t, twoReflectors(), "h1", "h2")
	tl := f.Node("tgt").Links[0]
	h1, h2 := f.Node("h1"), f.Node("h2")
	probes := []*topo.Probe{f.Node("q1").Probe(0), f.Node("q2").Probe(0)}
	for _, p := range probes {
		subscribe(t, p)
		await(t, p, tl.Addr(), inof.StateActive)
	}
	sessions(t, f, 2)
	time.Sleep(quietFor)
	for _, p := range probes {
		p.Drain()
	}
	notes, calls := counts(t, h1, h2)
	if _, err := f.Node(victim).Kill(); err != nil {
		t.Fatal(err)
	}
	sessions(t, f, 1)
	time.Sleep(quietFor)
	for _, p := range probes {
		heardNothing(t, p, "when a reflector was killed")
	}
	unchanged(t, notes, calls, "when a reflector was killed", h1, h2)
	report.Record(t, "reflector-killed/"+victim+" (link cut with one reflector left, reason 1)", cutReachesAll(t, f, probes, h1, h2))
}

// TestPrivReflectorRestartNoChurn: the fabric's only reflector is
// SIGKILLed and started again (graceful restart: the switches keep its
// routes as stale meanwhile). From the kill until the switches hold every
// record again through the new sessions, plus the switches' settle time
// and two seconds, no host hears anything (probe hosts q1 and q2 count
// every notify frame; inof-hosts h1 and h2 their notifications and nvme
// calls). Then the target's link is cut and every host is told (reason
// 1), proving the fabric works again; those latencies are recorded.
func TestPrivReflectorRestartNoChurn(t *testing.T) {
	spec := fabricSpec(false, probeHost("q1", "leaf1"), probeHost("q2", "leaf2"))
	calmBFD(&spec)
	f := upWithTarget(t, spec, "h1", "h2")
	tl := f.Node("tgt").Links[0]
	rr, h1, h2 := f.Node("rr1"), f.Node("h1"), f.Node("h2")
	probes := []*topo.Probe{f.Node("q1").Probe(0), f.Node("q2").Probe(0)}
	for _, p := range probes {
		subscribe(t, p)
		await(t, p, tl.Addr(), inof.StateActive)
	}
	time.Sleep(quietFor)
	records := map[string]float64{}
	for _, sw := range f.Nodes(topo.KindSwitch) {
		v, err := sw.Metric("inof_switch_device_records")
		if err != nil {
			t.Fatal(err)
		}
		records[sw.Name] = v
	}
	for _, p := range probes {
		p.Drain()
	}
	notes, calls := counts(t, h1, h2)
	if _, err := rr.Kill(); err != nil {
		t.Fatal(err)
	}
	sessions(t, f, 0)
	if err := rr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	sessions(t, f, 1)
	for _, sw := range f.Nodes(topo.KindSwitch) {
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v == records[sw.Name] }, "inof_switch_device_records"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(bgpSettle + quietFor)
	for _, p := range probes {
		heardNothing(t, p, "across the reflector's restart")
	}
	unchanged(t, notes, calls, "across the reflector's restart", h1, h2)
	report.Record(t, "reflector-restart (link cut after the restart, reason 1)", cutReachesAll(t, f, probes, h1, h2))
}
