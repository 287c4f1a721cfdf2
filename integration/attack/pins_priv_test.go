//go:build privileged

package attack

import (
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

// TestPrivPinnedNQN: issue #47 item 3, a device on another access port
// registers over LLDP as a target with a zoned array's NQN. The NQN is
// pinned to the array's port (inofctl pin set on the reflector), so the
// rogue is refused: by its own switch (leaf2, whose host h2 is in the
// array's zone) and by the other switch, which receives its record
// through the default zone (u1 keeps leaf1 subscribed to it) and would
// put it in the zone by its NQN; no host is told about it and the real
// array keeps working. Every switch and the reflector count the refusal,
// the reflector's and leaf2's event feeds carry it, the device list says
// so. Pinned to both ports (a dual-ported array), the second device
// joins.
func TestPrivPinnedNQN(t *testing.T) {
	spec := topo.Spec{
		Reflectors: []string{"rr1"},
		Switches:   []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "t1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}}, // the array
			{Name: "h1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "u1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}}, // unzoned: leaf1 takes the default zone
			{Name: "h2", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}},
			{Name: "x1", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}}, // the rogue
		},
		ReflectorConfig: func(_ string, cfg map[string]any) { cfg["bfd"] = relaxedBFD() },
		SwitchConfig:    func(_ string, cfg map[string]any) { cfg["bfd"] = relaxedBFD() },
	}
	f := topo.Start(t, spec)
	rr1, leaf1, leaf2 := f.Node("rr1"), f.Node("leaf1"), f.Node("leaf2")
	expectClients(t, rr1, 2)
	t1, h1, u1, h2, x1 := f.Node("t1").Probe(0), f.Node("h1").Probe(0), f.Node("u1").Probe(0), f.Node("h2").Probe(0), f.Node("x1").Probe(0)
	arrayAt := leaf1.Addr.String() + ":" + t1.Link.Port
	rogueAt := leaf2.Addr.String() + ":" + x1.Link.Port

	mustCtl := func(n *topo.Node, args ...string) string {
		t.Helper()
		out, err := n.Inofctl(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	mustCtl(rr1, "zone", "create", "z1", h1.Addr().String(), h2.Addr().String(), arrayNQN, "--yes")
	mustCtl(rr1, "pin", "set", arrayNQN, "--at", arrayAt, "--yes")
	for _, sw := range []*topo.Node{leaf1, leaf2} {
		waitFor(t, sw.Name+" has the pin", wait, func() (bool, error) {
			out, err := sw.Inofctl("pin", "list")
			return strings.Contains(out, arrayAt), err
		})
	}

	if err := t1.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, arrayNQN); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*topo.Probe{h1, h2} {
		if err := h.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := h.Query(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			return n.Target == t1.Addr() && n.State == inof.StateActive
		}); err != nil {
			t.Fatalf("%s: the pinned array: %v", h.Link.Device.Name, err)
		}
	}
	if err := u1.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}

	// The rogue claims the array's NQN on leaf2.
	if err := x1.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, arrayNQN); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		node   *topo.Node
		metric string
	}{{leaf2, "inof_switch_pin_refusals_total"}, {leaf1, "inof_switch_pin_refusals_total"}, {rr1, "inof_reflector_pin_refusals_total"}} {
		if _, err := n.node.WaitMetric(wait, func(v float64) bool { return v >= 1 }, n.metric); err != nil {
			t.Fatalf("%s: %v", n.node.Name, err)
		}
	}
	for _, n := range []*topo.Node{rr1, leaf2} {
		out := mustCtl(n, "events", "--kind", "pin")
		if !strings.Contains(out, x1.Addr().String()) || !strings.Contains(out, rogueAt) || !strings.Contains(out, arrayAt) {
			t.Errorf("%s events --kind pin:\n%s", n.Name, out)
		}
	}
	list := mustCtl(rr1, "device", "list")
	if !strings.Contains(list, x1.Addr().String()) || !strings.Contains(list, "(none: pin refused)") {
		t.Errorf("rr1 device list:\n%s", list)
	}
	show := mustCtl(rr1, "device", "show", t1.Addr().String())
	if !strings.Contains(show, "NQN claimed on 2 ports") {
		t.Errorf("rr1 device show %s:\n%s", t1.Addr(), show)
	}

	// Every notification the hosts get from here on is kept: none may
	// name the rogue until the admin pins its port too.
	heard := map[*topo.Probe][]l2proto.Notification{}
	hear := func(h *topo.Probe, what string, want func(l2proto.Notification) bool) {
		t.Helper()
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			heard[h] = append(heard[h], n)
			return want(n)
		}); err != nil {
			t.Fatalf("%s: %s: %v", h.Link.Device.Name, what, err)
		}
	}
	// The hosts' zone queries: the array, never the rogue.
	for _, h := range []*topo.Probe{h1, h2} {
		if err := h.Query(); err != nil {
			t.Fatal(err)
		}
		hear(h, "the array after the rogue", func(n l2proto.Notification) bool {
			return n.Target == t1.Addr() && n.State == inof.StateActive
		})
	}
	// A real change: the array's link is cut, every host concerned hears
	// it; nothing about the rogue came before.
	t1.Link.Cut(t)
	for _, h := range []*topo.Probe{h1, h2} {
		hear(h, "the array's link cut", func(n l2proto.Notification) bool {
			return n.Target == t1.Addr() && n.State == inof.StateInactive && n.Reason == inof.ReasonLinkDown
		})
	}
	// The array comes back: registered again until its switch hears it
	// (the port may not be up at the first one), as the array's own
	// LLDP would every 30 s.
	t1.Link.Restore(t)
	back := func(n l2proto.Notification) bool { return n.Target == t1.Addr() && n.State == inof.StateActive }
	waitFor(t, "h1 told the array is back", wait, func() (bool, error) {
		if err := t1.Reregister(); err != nil {
			return false, err
		}
		r, ok := h1.Next(time.Second)
		for _, n := range notices([]topo.Received{r}) {
			if ok && n.Host == h1.Addr() {
				heard[h1] = append(heard[h1], n)
				if back(n) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	hear(h2, "the array back", back)
	for _, h := range []*topo.Probe{h1, h2} {
		for _, n := range append(heard[h], notices(h.Drain())...) {
			if n.Target == x1.Addr() {
				t.Errorf("%s was told about the rogue: %+v", h.Link.Device.Name, n)
			}
		}
	}

	// The admin says both ports hold the array (a dual-ported array): the
	// second device joins z1 and the hosts are told.
	mustCtl(rr1, "pin", "set", arrayNQN, "--at", arrayAt, "--at", rogueAt, "--yes")
	for _, h := range []*topo.Probe{h1, h2} {
		if _, err := h.WaitNotification(wait, func(n l2proto.Notification) bool {
			return n.Target == x1.Addr() && n.State == inof.StateActive
		}); err != nil {
			t.Fatalf("%s: the second port once pinned: %v", h.Link.Device.Name, err)
		}
	}
}

// notices are the notifications of frames a probe read.
func notices(frames []topo.Received) []l2proto.Notification {
	var out []l2proto.Notification
	for _, n := range topo.Notices(frames) {
		out = append(out, n.N)
	}
	return out
}
