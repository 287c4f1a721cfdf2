//go:build privileged

package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

func TestMain(m *testing.M) {
	if c := os.Getenv(attackerEnv); c != "" {
		runAttacker(c)
		return
	}
	os.Exit(topo.Main(m))
}

const (
	asn      = 65000
	password = "attack-suite-md5"
	wait     = 30 * time.Second
	// attackerAddr is leaf3's address: the switch the attacker replaces.
	attackerAddr = "10.0.0.13"
	// farAddr is an attacker two hops from the reflectors.
	farAddr = "10.0.9.13"
)

// TestPrivAttacks: a hardened fabric (TCP-MD5 and GTSM on every session,
// two reflectors, three leaves) and the attacks of docs/security.md made
// with real parts: a stock GoBGP speaker in place of leaf3 (with the
// wrong MD5 key, from two hops away, then as a compromised switch that
// publishes configuration and other switches' records), raw frames on the
// access ports (a zone query for another port's host, a registration
// flood). rr1 runs without quarantine, so the switches' own refusals are
// seen; rr2 quarantines. Every attack must be refused and counted, and no
// host may hear a thing until a real link cut shows the fabric still
// works.
func TestPrivAttacks(t *testing.T) {
	spec := topo.Spec{
		Reflectors: []string{"rr1", "rr2"},
		Switches:   []string{"leaf1", "leaf2", "leaf3"},
		Passive:    []string{"leaf3"},
		Devices: []topo.Device{
			{Name: "t1", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}},
			{Name: "h1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "h2", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}},
			{Name: "h3", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			// leaf3's daemon never runs (the attacker takes its place); a
			// switch wants an access port all the same.
			{Name: "x3", Probe: true, NICs: []topo.NIC{{Switch: "leaf3"}}},
		},
		// BFD relaxed to 10 × 300 ms, as the scenario suites run it: two
		// shared cores stall long enough to fail 3 × 100 ms (a false switch
		// loss is not what this suite is about).
		ReflectorConfig: func(name string, cfg map[string]any) {
			cfg["password"], cfg["ttl_security"], cfg["bfd"] = password, true, relaxedBFD()
			quarantine := "0s"
			if name == "rr2" {
				quarantine = "10m"
			}
			cfg["trust"] = map[string]any{"quarantine": quarantine}
			cfg["clients"] = append(cfg["clients"].([]any), map[string]any{"address": farAddr, "bfd": map[string]any{"disabled": true}})
		},
		SwitchConfig: func(_ string, cfg map[string]any) {
			cfg["password"], cfg["ttl_security"], cfg["bfd"] = password, true, relaxedBFD()
		},
	}
	f := topo.Start(t, spec)
	rr1, rr2, leaf1, leaf2 := f.Node("rr1"), f.Node("rr2"), f.Node("leaf1"), f.Node("leaf2")
	for _, r := range []*topo.Node{rr1, rr2} {
		if _, err := r.WaitMetric(wait, func(v float64) bool { return v == 2 }, "inof_reflector_sessions",
			"kind", "client", "state", "established"); err != nil {
			t.Fatal(err)
		}
	}
	t1, h1, h2, h3 := f.Node("t1").Probe(0), f.Node("h1").Probe(0), f.Node("h2").Probe(0), f.Node("h3").Probe(0)
	if err := t1.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, "nqn.2014-08.org.example:attack"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*topo.Probe{h1, h2, h3} {
		if err := h.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := h.Query(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			return n.Target == t1.Addr() && n.State == inof.StateActive
		}); err != nil {
			t.Fatal(err)
		}
	}
	leaf3 := f.Node("leaf3")
	reflectors := []string{rr1.Addr.String(), rr2.Addr.String()}

	// 1. The wrong MD5 key: no session, the kernel counts the segments.
	md5Before := netstat(t, rr1.NS, "TCPMD5Failure")
	wrong := startAttacker(t, leaf3.NS, attackerConf{RouterID: attackerAddr, Local: attackerAddr, Reflectors: reflectors,
		Password: "not-the-key", ASN: asn, TTLSecurity: true})
	waitFor(t, "MD5 failures counted", wait, func() (bool, error) { return netstat(t, rr1.NS, "TCPMD5Failure") > md5Before, nil })
	expectClients(t, rr1, 2)
	wrong.stop()

	// 2. The right key from two hops away: GTSM drops it.
	far := farNamespace(t, f)
	ttlBefore := netstat(t, rr1.NS, "TCPMinTTLDrop")
	distant := startAttacker(t, far, attackerConf{RouterID: farAddr, Local: farAddr, Reflectors: reflectors,
		Password: password, ASN: asn, TTLSecurity: true})
	waitFor(t, "GTSM drops counted", wait, func() (bool, error) { return netstat(t, rr1.NS, "TCPMinTTLDrop") > ttlBefore, nil })
	expectClients(t, rr1, 2)
	distant.stop()

	// 3. A compromised leaf3: the right key, one hop. First its own,
	// honest record, which every reflector takes.
	bad := startAttacker(t, leaf3.NS, attackerConf{RouterID: attackerAddr, Local: attackerAddr, Reflectors: reflectors,
		Password: password, ASN: asn, TTLSecurity: true})
	for _, r := range []*topo.Node{rr1, rr2} {
		expectClients(t, r, 3)
	}
	defaultRT := record.ZoneRT(asn, zones.DefaultZone)
	own := device(attackerAddr, "10.66.0.1", inof.StateActive, 1)
	bad.publish(own, "", "", defaultRT)
	for _, h := range []*topo.Probe{h1, h2, h3} {
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			return n.Target == own.Device.Addr && n.State == inof.StateActive
		}); err != nil {
			t.Fatal(err)
		}
	}
	heard := map[*topo.Probe][]topo.Notice{}
	listen := func() {
		for _, h := range []*topo.Probe{h1, h2, h3} {
			for _, n := range topo.Notices(h.Drain()) {
				if n.N.Host == h.Addr() {
					heard[h] = append(heard[h], n)
				}
			}
		}
	}
	listen()
	clear(heard)

	// A record of its own with an NQN that is not UTF-8, carries connect
	// options and a terminal escape, as a switch of an older release (that
	// took it from a device) would publish it: our encoder refuses to write
	// one, so the attacker encodes a benign NQN of the same length and
	// swaps the bytes in the value. Every receiver refuses it where it is
	// decoded (bgp/record): the reflectors count it as malformed and keep
	// nothing, every admin tool still answers without it, and no host hears
	// of it (checked with the other attacks below).
	hostileNQN := "nqn.2014-08.org.example:t\xff,nr_io_queues=1\x1b[2J"
	hostile := device(attackerAddr, "10.66.0.2", inof.StateActive, 1)
	hostile.Device.NQN = "nqn.2014-08.org.example:t" + strings.Repeat("x", len(hostileNQN)-len("nqn.2014-08.org.example:t"))
	key, value, err := record.Encode(hostile, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(value, []byte(hostile.Device.NQN)) {
		t.Fatal("the benign NQN is not in the encoded value")
	}
	bad.publishRaw(key, bytes.Replace(value, []byte(hostile.Device.NQN), []byte(hostileNQN), 1), "", "", defaultRT)
	for _, rr := range []*topo.Node{rr1, rr2} {
		if _, err := rr.WaitMetric(wait, func(v float64) bool { return v >= 1 }, "inof_reflector_bgp_records_malformed_total"); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"device", "list"}, {"device", "list", "-o", "json"}} {
		out, err := rr1.Inofctl(args...)
		if err != nil || strings.Contains(out, "10.66.0.2") {
			t.Fatalf("rr1 inofctl %s with a hostile NQN published: %v\n%q", strings.Join(args, " "), err, out)
		}
	}
	bad.withdraw(hostile)

	// Zoning off, as rr1's own configuration (rr1's router-id in the key),
	// under the configuration route target and under the default zone's.
	settings := zones.Record{Key: zones.Key{Kind: zones.KindSettings},
		Version:  zones.Version{Gen: inof.GenerationAt(time.Now().Add(time.Minute)), RouterID: inof.MustParseRouterID("10.0.0.1")},
		Settings: zones.Settings{DefaultZoneEnabled: false, HardZoning: true}}
	parts, err := configsync.Records(settings)
	if err != nil {
		t.Fatal(err)
	}
	cfg := parts[0]
	cfg.Reflector = inof.MustParseRouterID("10.0.0.1")
	bad.publish(&cfg, "", "", record.ConfigRT(asn))
	counted(t, rr1, "inof_reflector_records_refused_total", table.RefusedConfigFromClient, 1)
	counted(t, rr2, "inof_reflector_records_refused_total", table.RefusedConfigFromClient, 1)
	if _, err := rr2.WaitMetric(wait, func(v float64) bool { return v == 1 }, "inof_reflector_quarantined_clients"); err != nil {
		t.Fatal(err)
	}
	bad.publish(&cfg, "", "", defaultRT)
	counted(t, rr1, "inof_reflector_records_refused_total", table.RefusedConfigFromClient, 2)
	for _, sw := range []*topo.Node{leaf1, leaf2} {
		counted(t, sw, "inof_switch_records_refused_total", table.RefusedConfigRT, 1)
	}
	bad.withdraw(&cfg)

	// t1 inactive, as leaf2's record (a higher epoch), with leaf2's
	// address as next hop and as ORIGINATOR_ID: leaf1 refuses it (the
	// reflector made the next hop leaf3's); leaf2's GoBGP drops it itself
	// (its own router-id as ORIGINATOR_ID, RFC 4456 loop prevention).
	forged := device("10.0.0.12", t1.Addr().String(), inof.StateInactive, math.MaxUint64/2)
	forged.Reason = inof.ReasonLinkDown
	bad.publish(forged, "10.0.0.12", "10.0.0.12", defaultRT)
	counted(t, rr1, "inof_reflector_records_refused_total", table.RefusedOtherSwitch, 1)
	counted(t, leaf1, "inof_switch_records_refused_total", table.RefusedOtherSwitch, 1)
	bad.withdraw(forged)
	// The same without the ORIGINATOR_ID: both leaves refuse it.
	forged.Epoch++
	bad.publish(forged, "10.0.0.12", "", defaultRT)
	counted(t, rr1, "inof_reflector_records_refused_total", table.RefusedOtherSwitch, 2)
	counted(t, leaf1, "inof_switch_records_refused_total", table.RefusedOtherSwitch, 2)
	counted(t, leaf2, "inof_switch_records_refused_total", table.RefusedOtherSwitch, 1)
	bad.withdraw(forged)

	// leaf2's own key (its epoch read from its state file), announced and
	// withdrawn by the attacker: a withdraw only ever takes the sender's
	// own path back.
	real := publishedRecord(t, leaf2, t1.Addr())
	stolen := real
	stolen.State, stolen.Reason = inof.StateInactive, inof.ReasonLinkDown
	bad.publish(&stolen, "", "", defaultRT)
	counted(t, rr1, "inof_reflector_records_refused_total", table.RefusedOtherSwitch, 3)
	bad.withdraw(&stolen)

	// On the access ports: h3 asks for h1's targets; then floods LLDPDUs.
	query, err := l2proto.MessageFrame(h3.MAC(), &l2proto.Message{Version: l2proto.Version1,
		Queries: []l2proto.ZoneQuery{{Host: h1.Addr()}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h3.SendRaw(query); err != nil {
		t.Fatal(err)
	}
	counted(t, leaf1, "inof_switch_frames_dropped_total", "query-unregistered-host", 1)
	for i := range 2000 {
		l := &l2proto.LLDPDU{ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: h3.MAC(), PortSubtype: l2proto.PortIDIfaceName,
			PortID: []byte(fmt.Sprintf("flood_%d", i)), TTL: 120, Registration: &l2proto.Registration{Version: l2proto.RegistrationVer,
				Addr: netip.AddrFrom4([4]byte{10, 77, byte(i >> 8), byte(i)}), Role: inof.RoleHost, Protocol: inof.ProtocolTCP,
				ProtoVer: l2proto.ProtocolVersion1}}
		flood, err := l2proto.LLDPFrame(h3.MAC(), l)
		if err != nil {
			t.Fatal(err)
		}
		if err := h3.SendRaw(flood); err != nil {
			t.Fatal(err)
		}
	}
	counted(t, leaf1, "inof_switch_frames_dropped_total", "rate-registrations", 1)
	if n, err := leaf1.Metric("inof_switch_registrations"); err != nil || n > float64(l2proto.DefaultMaxEntriesPerPort+2) {
		t.Fatalf("registrations after the flood: %v %v", n, err)
	}

	// rr2 holds none of leaf3's records, rr1 still the honest one.
	if out, err := rr2.Inofctl("device", "list"); err != nil || strings.Contains(out, own.Device.Addr.String()) {
		t.Fatalf("rr2 after the quarantine lists %s: %v\n%s", own.Device.Addr, err, out)
	}
	if out, err := rr1.Inofctl("device", "list"); err != nil || !strings.Contains(out, own.Device.Addr.String()) {
		t.Fatalf("rr1 lost the honest record: %v\n%s", err, out)
	}

	// A real change: t1's link goes down. Hosts hear it (h3 too: it stays
	// registered through its flood), and nothing else since the attacks
	// began.
	t1.Link.Cut(t)
	for _, h := range []*topo.Probe{h1, h2, h3} {
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			return n.Target == t1.Addr() && n.State == inof.StateInactive && n.Reason == inof.ReasonLinkDown
		}); err != nil {
			t.Fatal(err)
		}
	}
	listen()
	for h, ns := range heard {
		if len(ns) != 0 {
			t.Errorf("%s heard during the attacks: %+v", h.Addr(), ns)
		}
	}
}

func relaxedBFD() map[string]any {
	return map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
}

// device is a device record of switch sw.
func device(sw, addr string, st inof.State, epoch uint64) *record.Device {
	now := time.Now().Truncate(time.Millisecond)
	return &record.Device{Report: inof.Report{Switch: inof.MustParseRouterID(sw),
		Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420},
		Status: inof.Status{State: st, Changed: now}, AccessPort: "p1", Since: now}, Epoch: epoch}
}

// counted waits until a counter (with reason, or drop reason, label) is at
// least n.
func counted(t *testing.T, n *topo.Node, metric, reason string, min float64) {
	t.Helper()
	if _, err := n.WaitMetric(wait, func(v float64) bool { return v >= min }, metric, "reason", reason); err != nil {
		t.Fatal(err)
	}
}

// expectClients waits until the reflector has n established clients.
func expectClients(t *testing.T, r *topo.Node, n float64) {
	t.Helper()
	if _, err := r.WaitMetric(wait, func(v float64) bool { return v == n }, "inof_reflector_sessions",
		"kind", "client", "state", "established"); err != nil {
		t.Fatal(err)
	}
}

// netstat reads a TcpExt counter of a namespace.
func netstat(t *testing.T, ns *netns.NS, name string) uint64 {
	t.Helper()
	out, err := ns.Command("cat", "/proc/net/netstat").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		keys, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j, k := range keys {
			if k == name && j < len(vals) {
				v, _ := strconv.ParseUint(vals[j], 10, 64)
				return v
			}
		}
	}
	t.Fatalf("no %s in /proc/net/netstat", name)
	return 0
}

// farNamespace makes a namespace two hops from the reflectors: behind a
// router on the fabric bridge.
func farNamespace(t *testing.T, f *topo.Fabric) *netns.NS {
	t.Helper()
	rtr, far := netns.New(t, "rtr"), netns.New(t, "far")
	fab := f.Bridge()
	netns.Veth(t, fab, "rtr", rtr, "fab0")
	fab.MustIP("link", "set", "rtr", "master", "br0")
	rtr.Addr("fab0", "10.0.0.99/24")
	netns.Veth(t, rtr, "far0", far, "eth0")
	rtr.Addr("far0", "10.0.9.1/24")
	far.Addr("eth0", farAddr+"/24")
	far.MustIP("route", "add", "default", "via", "10.0.9.1")
	if out, err := rtr.Command("sysctl", "-w", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		t.Fatalf("forwarding: %v: %s", err, out)
	}
	for _, r := range f.Nodes(topo.KindReflector) {
		r.NS.MustIP("route", "add", "10.0.9.0/24", "via", "10.0.0.99")
	}
	return far
}

// publishedRecord reads a switch's state file for its record of addr.
func publishedRecord(t *testing.T, sw *topo.Node, addr netip.Addr) record.Device {
	t.Helper()
	path := filepath.Join(filepath.Dir(sw.ConfigPath()), "state", "switch.state")
	var rec record.Device
	waitFor(t, "the switch's state file", wait, func() (bool, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		var st struct {
			State struct {
				Published []table.PublishedDevice `json:"published"`
			} `json:"state"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return false, err
		}
		for _, d := range st.State.Published {
			if d.Record.Device.Addr == addr {
				rec = d.Record
				return true, nil
			}
		}
		return false, nil
	})
	return rec
}
