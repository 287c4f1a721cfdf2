package switchagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

func dev(addr string, role inof.Role, proto inof.Protocol, nqn string) inof.Device {
	return inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: proto, NQN: nqn}
}

func addrs(es []discovery.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Addr.String())
	}
	slices.Sort(out)
	return out
}

// drained reports whether a change signal was pending, and consumes it.
func drained(s *discoverySource) bool {
	select {
	case <-s.Changes():
		return true
	default:
		return false
	}
}

// TestDiscoverySourceZones checks that a discovery host, known only by its
// NQN and address, sees the targets the zone rules give a device with that
// NQN and address, and that only usable NVMe-oF targets are listed.
func TestDiscoverySourceZones(t *testing.T) {
	const hostNQN = "nqn.2014-08.org.nvmexpress:uuid:0b5e7a9c-1d2f-4e3a-9b8c-7d6e5f4a3b2c"
	cfg := zones.NewConfig(zones.Settings{DefaultZoneEnabled: true})
	cfg.Zones["red"] = &zones.Zone{Name: "red", Members: []zones.Member{zones.MustParseMember(hostNQN), zones.MustParseMember("10.1.0.1")}}
	cfg.Zones["blue"] = &zones.Zone{Name: "blue", Members: []zones.Member{zones.MustParseMember("10.9.9.9"), zones.MustParseMember("10.2.0.1")}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := newDiscoverySource(inof.RouterID(1), cfg)
	drained(s)
	active := func(d inof.Device) inof.Report {
		return inof.Report{Device: d, Status: inof.Status{State: inof.StateActive}}
	}
	for _, d := range []inof.Device{
		dev("10.1.0.1", inof.RoleTarget, inof.ProtocolTCP, "nqn.2024-01.io.example:red"),
		dev("10.2.0.1", inof.RoleTarget, inof.ProtocolTCP, "nqn.2024-01.io.example:blue"),
		dev("10.3.0.1", inof.RoleTarget, inof.ProtocolRoCE, ""),
		dev("10.4.0.1", inof.RoleTarget, inof.ProtocolISCSI, ""), // no NVMe-oF transport
		dev("10.5.0.1", inof.RoleHost, inof.ProtocolTCP, ""),     // not a target
	} {
		s.put(d.Addr, active(d), true, nil)
	}
	if !drained(s) {
		t.Fatal("adding targets did not signal")
	}
	check := func(nqn, addr string, want ...string) {
		t.Helper()
		a := netip.MustParseAddr(addr)
		before, had := s.ix.Device(a)
		got := addrs(s.Visible(nqn, a))
		if !slices.Equal(got, want) {
			t.Fatalf("host %s at %s sees %v, want %v", nqn, addr, got, want)
		}
		if after, has := s.ix.Device(a); has != had || after != before {
			t.Fatalf("the query changed the index at %s: %v → %v", addr, before, after)
		}
	}
	check(hostNQN, "10.50.0.1", "10.1.0.1", "10.3.0.1")      // red by NQN, plus unzoned
	check("nqn.x:other", "10.9.9.9", "10.2.0.1", "10.3.0.1") // blue by address
	check("nqn.x:other", "10.60.0.1", "10.1.0.1", "10.2.0.1", "10.3.0.1")
	// A target asking keeps its own entry out, and stays indexed.
	check("nqn.x:other", "10.3.0.1", "10.1.0.1", "10.2.0.1")

	// The red target goes inactive: signalled and gone; the same state
	// again is no change.
	red := dev("10.1.0.1", inof.RoleTarget, inof.ProtocolTCP, "nqn.2024-01.io.example:red")
	s.put(red.Addr, inof.Report{Device: red, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown}}, true, nil)
	if !drained(s) {
		t.Fatal("a target going inactive did not signal")
	}
	s.put(red.Addr, inof.Report{}, false, nil)
	if drained(s) {
		t.Fatal("removing an absent target signalled")
	}
	check(hostNQN, "10.50.0.1", "10.3.0.1")

	// Hard zoning: the zoned host no longer sees unzoned targets.
	hard := cfg.Clone()
	hard.Settings.HardZoning = true
	s.setConfig(hard)
	if !drained(s) {
		t.Fatal("a configuration change did not signal")
	}
	check(hostNQN, "10.50.0.1")
	check("nqn.x:other", "10.60.0.1", "10.3.0.1")
}

// startDiscoverySwitch is startSwitch with the discovery controller on, on
// a loopback port of the kernel's choosing.
func startDiscoverySwitch(t *testing.T, f *bgp.FakeFabric, reflector netip.Addr, id string, ports ...string) *testSwitch {
	t.Helper()
	sp, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr(id)})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.StateDir, o.RouterID, o.ASN = t.TempDir(), id, testASN
	o.Reflectors = []ReflectorOptions{{Address: reflector.String()}}
	o.BFD.Enabled = false
	o.AccessPorts = ports
	o.Settle = 300 * time.Millisecond
	o.Discovery.Enabled, o.Discovery.Listen = true, "127.0.0.1:0"
	o.Discovery.MDNS = false // the ports are in memory: no interface to advertise on
	s := &testSwitch{far: map[string]*l2proto.MemLink{}, links: make(chan l2proto.LinkState, 16), done: make(chan error, 1)}
	near := map[string]*l2proto.MemLink{}
	for i, p := range ports {
		a, b := l2proto.NewMemPair(p, net.HardwareAddr{2, 0, 0, 9, byte(len(id)), byte(i)}, "dev", net.HardwareAddr{2, 1, 0, 9, byte(len(id)), byte(i)})
		near[p], s.far[p] = a, b
	}
	id4 := netip.MustParseAddr(id).As4()
	s.agent, err = New(Config{Options: o, Speaker: sp,
		OpenLink: func(p string) (l2proto.Link, error) { return near[p], nil },
		// Port i of switch a.b.c.d has the address 10.d.i.1/24.
		InterfaceAddrs: func(p string) ([]netip.Prefix, error) {
			i := slices.Index(ports, p)
			return []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.1/24", id4[3], i)), netip.MustParsePrefix("fe80::1/64")}, nil
		},
		WatchStray: func(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil },
		WatchLinks: s.watchLinks})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- s.agent.Run(ctx) }()
	t.Cleanup(s.stop)
	return s
}

// TestAgentServesDiscovery runs a switch agent with the discovery
// controller and no local device: a persistent discovery host sees the
// target registered on another switch, and its AER completes when the
// target's link goes down there.
func TestAgentServesDiscovery(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1")
	s2 := startDiscoverySwitch(t, f, ra, "10.0.0.12", "swp1")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4421,
		NQN: "nqn.2014-08.org.example:array"}
	newSimHost(t, s1.far["swp1"], target).register(120)

	var addr net.Addr
	deadline := time.Now().Add(30 * time.Second)
	for addr = s2.agent.disc.srv.Addr(); addr == nil; addr = s2.agent.disc.srv.Addr() {
		if time.Now().After(deadline) {
			t.Fatal("the discovery controller never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := discovery.Dial(context.Background(), addr.String(), discovery.ClientOptions{HostNQN: "nqn.2014-08.org.nvmexpress:uuid:h", KATO: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	want := []discovery.Entry{{Transport: discovery.TransportTCP, Addr: target.Addr, Port: 4421, NQN: target.NQN}}
	readUntil(t, c, want)
	s1.links <- l2proto.LinkState{Name: "swp1", Running: false}
	if v, err := c.WaitAEN(30 * time.Second); err != nil || v != discovery.AENDiscoveryChange {
		t.Fatalf("AEN after link down %#x, %v", v, err)
	}
	if _, es, err := c.ReadLog(); err != nil || len(es) != 0 {
		t.Fatalf("after link down: entries %+v, %v", es, err)
	}
}

// TestExampleConfigDiscovery: the example configuration shows the
// discovery controller's defaults.
func TestExampleConfigDiscovery(t *testing.T) {
	o := DefaultOptions()
	if err := daemon.Load(daemon.LoadOptions{File: filepath.Join("..", "..", "docs", "deploy", "inofd-switch.yaml")}, &o); err != nil {
		t.Fatal(err)
	}
	if o.Discovery != DefaultOptions().Discovery || o.Discovery.Enabled || o.Discovery.Listen != ":8009" {
		t.Fatalf("example discovery %+v, defaults %+v", o.Discovery, DefaultOptions().Discovery)
	}
	bad := DefaultOptions()
	bad.Discovery.Enabled, bad.Discovery.Listen, bad.Discovery.MaxConnsPerHost = true, "8009", 0
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "discovery.listen") || !strings.Contains(err.Error(), "discovery.max_conns_per_host") {
		t.Fatalf("invalid discovery options: %v", err)
	}
}

// TestAgentDIMHost: a host that registers with the discovery controller
// (DIM) becomes a device of the fabric as an LLDP host would: another
// switch holds its record (a host on NVMe/TCP at its connection's address,
// with its NQN, on the pseudo port nvme-dim), and when its connection ends
// the record goes inactive with reason 6 (age-out), then after the
// hold-down is withdrawn.
func TestAgentDIMHost(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1")
	s2 := startDiscoverySwitch(t, f, ra, "10.0.0.12", "swp1")
	// s1 wants the host's zone: a target of its own in the default zone.
	newSimHost(t, s1.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget,
		Protocol: inof.ProtocolTCP, Port: 4420, NQN: "nqn.2014-08.org.example:array"}).register(120)
	var addr net.Addr
	waitUntil(t, "the discovery controller listening", func() bool { addr = s2.agent.disc.srv.Addr(); return addr != nil })
	const hostNQN = "nqn.2014-08.org.nvmexpress:uuid:dim-host"
	c, err := discovery.Dial(context.Background(), addr.String(), discovery.ClientOptions{HostNQN: hostNQN, KATO: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	if err := c.DIM(discovery.TaskRegister, discovery.Registration{HostNQN: hostNQN, Name: "h9"}, ""); err != nil {
		t.Fatal(err)
	}
	host := netip.MustParseAddr("127.0.0.1")
	id := record.DeviceID{Switch: inof.MustParseRouterID("10.0.0.12"), Addr: host}
	var rec record.Device
	waitUntil(t, "the host's record at the other switch", func() bool {
		r, ok := s1.agent.table.Get(id)
		rec = r
		return ok && r.State == inof.StateActive
	})
	if rec.Device.Role != inof.RoleHost || rec.Device.Protocol != inof.ProtocolTCP || rec.Device.NQN != hostNQN || rec.AccessPort != dimPort {
		t.Fatalf("record %+v", rec)
	}
	c.Close()
	waitUntil(t, "the host gone, reason 6", func() bool {
		r, ok := s1.agent.table.Get(id)
		return ok && r.State == inof.StateInactive && r.Reason == inof.ReasonAgeOut
	})
}
