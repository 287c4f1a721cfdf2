//go:build privileged

package cdc

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// report collects the AEN latencies; TestMain prints the summary.
var report topo.LatencyReport

func TestMain(m *testing.M) {
	code := topo.Main(m)
	if s := report.Summary(); s != "" {
		fmt.Print(s)
	}
	os.Exit(code)
}

const (
	// wait bounds every wait for something the fabric should do at once;
	// generous, because two shared cores may be busy with other tests.
	wait = 30 * time.Second
	// trials is how many link cuts each scenario measures.
	trials   = 20
	hostNQN  = "nqn.2014-08.org.nvmexpress:uuid:cdc00000-0000-4000-8000-000000000001"
	otherNQN = "nqn.2014-08.org.nvmexpress:uuid:cdc00000-0000-4000-8000-000000000002"
	port     = 8009
)

// targets of the fabric: name → switch, subsystem NQN.
var targets = []struct{ name, sw, nqn string }{
	{"t1", "leaf2", "nqn.2024-01.io.example:t1"}, // zone z1, remote
	{"t2", "leaf1", "nqn.2024-01.io.example:t2"}, // zone z1, local
	{"t3", "leaf2", "nqn.2024-01.io.example:t3"}, // zone z2
	{"t4", "leaf2", "nqn.2024-01.io.example:t4"}, // no zone
}

func requireRoles(t *testing.T) {
	t.Helper()
	if ok, err := topo.HasSwitchRole(); err != nil || !ok {
		t.Skipf("switch role not built (%v)", err)
	}
	if ok, err := topo.HasReflectorAPI(); err != nil || !ok {
		t.Skipf("reflector API not built (%v): zones cannot be defined with inofctl", err)
	}
}

// spec: one reflector, two leaves; leaf1 serves discovery. h1 is a host
// that runs nothing of ours (a probe that never registers); the targets
// are probes the test registers.
func spec() topo.Spec {
	devs := []topo.Device{{Name: "h1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}}}
	for _, tg := range targets {
		devs = append(devs, topo.Device{Name: tg.name, Probe: true,
			NICs: []topo.NIC{{Switch: tg.sw, Role: "target", Protocol: "tcp", Port: 4420, NQN: tg.nqn}}})
	}
	return topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"}, Devices: devs,
		SwitchConfig: func(name string, cfg map[string]any) {
			calmBFD(cfg)
			if name == "leaf1" {
				cfg["discovery"] = map[string]any{"enabled": true, "listen": fmt.Sprintf(":%d", port)}
			}
		},
		ReflectorConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
		}}
}

// calmBFD sets a switch's BFD to 300 ms × 10: with the default 100 ms × 3,
// a test binary starved of CPU for a third of a second (two cores shared
// by many tests) takes a switch for gone, and its targets vanish from every
// host's log — the fabric working as designed, but not what is measured
// here.
func calmBFD(cfg map[string]any) {
	cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
}

func entryOf(f *topo.Fabric, name string) discovery.Entry {
	for _, tg := range targets {
		if tg.name == name {
			return discovery.Entry{Transport: discovery.TransportTCP, Addr: f.Node(name).Links[0].Addr(), Port: 4420, NQN: tg.nqn}
		}
	}
	panic("unknown target " + name)
}

func sorted(es ...discovery.Entry) []discovery.Entry {
	slices.SortFunc(es, discovery.Entry.Compare)
	return es
}

// dialFrom opens a discovery connection from inside the host's namespace to
// the switch address on its access link, retrying until the controller
// listens.
func dialFrom(t *testing.T, h *topo.Node, addr netip.Addr, o discovery.ClientOptions) *discovery.Client {
	t.Helper()
	var c *discovery.Client
	err := topo.Poll(wait, func() (bool, error) {
		err := h.NS.Do(func() error {
			var err error
			c, err = discovery.Dial(context.Background(), netip.AddrPortFrom(addr, port).String(), o)
			return err
		})
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitLog reads the log; unless it holds want, it waits for change notices
// (nextLog).
func waitLog(t *testing.T, c *discovery.Client, want []discovery.Entry) {
	t.Helper()
	_, es, err := c.ReadLog()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(es, want) {
		settle(t, c)
		return
	}
	nextLog(t, c, want)
}

// nextLog waits for a change notice and reads the log after each (re-arming
// the AER) until the log holds want; it returns when the first notice
// arrived.
func nextLog(t *testing.T, c *discovery.Client, want []discovery.Entry) time.Time {
	t.Helper()
	deadline := time.Now().Add(wait)
	var first time.Time
	var es []discovery.Entry
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("discovery log %+v, want %+v", es, want)
		}
		v, err := c.WaitAEN(left)
		if err != nil || v != discovery.AENDiscoveryChange {
			t.Fatalf("waiting for %+v (have %+v): AEN %#x, %v", want, es, v, err)
		}
		if first.IsZero() {
			first = time.Now()
		}
		if _, es, err = c.ReadLog(); err != nil {
			t.Fatal(err)
		}
		if err := c.AsyncEventRequest(); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(es, want) {
			settle(t, c)
			return first
		}
	}
}

// settle re-arms an AER for every notice that completed before the last
// log read (the read already showed what they announced): afterwards the
// next notice is the next change's.
func settle(t *testing.T, c *discovery.Client) {
	t.Helper()
	for range c.TakeAENs() {
		if err := c.AsyncEventRequest(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrivDiscoveryZonesAndAEN: leaf1's discovery controller shows the
// host exactly the targets of its zone (z1, by its host NQN: t1 on leaf2
// and t2 on leaf1), another host NQN from the same address only the
// unzoned target (hard zoning), and the persistent connection gets the
// discovery log change notice each time a z1 target's link is cut and
// restored. The cut → AEN latency is printed for a target on the same
// switch and one on the other leaf (through the reflector).
func TestPrivDiscoveryZonesAndAEN(t *testing.T) {
	requireRoles(t)
	f := topo.Start(t, spec())
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	leaf1, rr := f.Node("leaf1"), f.Node("rr1")
	mark := leaf1.LogSize()
	if _, err := rr.Inofctl("zone", "create", "z1", f.Node("t1").Links[0].Addr().String(), f.Node("t2").Links[0].Addr().String(),
		hostNQN, "--yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Inofctl("zone", "create", "z2", f.Node("t3").Links[0].Addr().String(), "--yes"); err != nil {
		t.Fatal(err)
	}
	for _, z := range []string{"z1", "z2"} {
		if _, err := leaf1.WaitLog(mark, `msg="zone configuration changed"[^\n]*`+z, wait); err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range targets {
		if err := f.Node(tg.name).Probe(0).Register(inof.RoleTarget, inof.ProtocolTCP, 4420, tg.nqn); err != nil {
			t.Fatal(err)
		}
	}
	// The host reaches leaf1 over its access link: give the switch end an
	// address in the host's subnet.
	h1 := f.Node("h1")
	hl := h1.Links[0]
	gw := hl.Prefix.Masked().Addr().Next()
	hl.Switch.NS.Addr(hl.Port, netip.PrefixFrom(gw, hl.Prefix.Bits()).String())

	c := dialFrom(t, h1, gw, discovery.ClientOptions{HostNQN: hostNQN, KATO: 30 * time.Second})
	id, err := c.Start([16]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if id[111] != 2 {
		t.Fatalf("identify: controller type %d, want 2 (discovery)", id[111])
	}
	z1 := sorted(entryOf(f, "t1"), entryOf(f, "t2"))
	waitLog(t, c, z1)

	// Another host NQN from the same address is in no zone: with hard
	// zoning (the default) it sees only the unzoned target.
	other := dialFrom(t, h1, gw, discovery.ClientOptions{HostNQN: otherNQN})
	if _, err := other.Start([16]byte{2}); err != nil {
		t.Fatal(err)
	}
	if _, es, err := other.ReadLog(); err != nil || !slices.Equal(es, []discovery.Entry{entryOf(f, "t4")}) {
		t.Fatalf("unzoned host: %+v, %v; want only t4", es, err)
	}
	if err := other.Shutdown(); err != nil {
		t.Fatal(err)
	}

	for _, sc := range []struct{ name, target string }{
		{"cdc-aen-local (target on the discovery switch: cut → AEN at the host)", "t2"},
		{"cdc-aen-remote (target on the other leaf: cut → AEN at the host)", "t1"},
	} {
		tn := f.Node(sc.target)
		tl, probe := tn.Links[0], tn.Probe(0)
		rest := slices.DeleteFunc(slices.Clone(z1), func(e discovery.Entry) bool { return e.Addr == tl.Addr() })
		var lat []time.Duration
		for range trials {
			at := tl.Cut(t)
			lat = append(lat, nextLog(t, c, rest).Sub(at))
			sw := tl.Switch
			swMark := sw.LogSize()
			tl.Restore(t)
			// The target registers again once its link is up (as a host
			// would at its next check); the first frame may beat the
			// carrier, so repeat until its switch has it.
			re := `msg="device registered"[^\n]*` + tl.Addr().String()
			if err := topo.Poll(wait, func() (bool, error) {
				if err := probe.Reregister(); err != nil {
					return false, err
				}
				_, err := sw.WaitLog(swMark, re, time.Second)
				return err == nil, err
			}); err != nil {
				t.Fatal(err)
			}
			nextLog(t, c, z1)
		}
		slices.Sort(lat)
		report.Record(t, sc.name, lat)
	}
	if err := c.KeepAlive(); err != nil {
		t.Fatal(err)
	}
	if n, err := leaf1.Metric("inof_discovery_aens_total"); err != nil || n < 2*trials {
		t.Fatalf("leaf1 counted %v AENs (%v), want at least %d", n, err, 2*trials)
	}
}
