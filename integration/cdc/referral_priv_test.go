//go:build privileged

package cdc

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// dualNQN is the host NQN of the dual-homed host of the referral test.
const dualNQN = "nqn.2014-08.org.nvmexpress:uuid:cdc00000-0000-4000-8000-0000000000d2"

// TestPrivDiscoveryReferrals: both leaves serve discovery; a host with one
// NIC on each, registered (LLDP, with its NQN) on both, connects to one
// leaf's controller and finds in its log a referral (SUBTYPE 1) to the
// other leaf's controller at that leaf's address on the host's other
// segment — from the other leaf's discovery record, through the
// reflector. When the host's link to the other leaf is cut, the referral
// goes (AEN); when it is back and the host registers again, it comes back.
// A host NQN registered on one leaf only gets no referral.
func TestPrivDiscoveryReferrals(t *testing.T) {
	requireRoles(t)
	s := topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "h2", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}, {Switch: "leaf2", Role: "host", Protocol: "tcp"}}},
		},
		SwitchConfig: func(_ string, cfg map[string]any) {
			calmBFD(cfg)
			cfg["discovery"] = map[string]any{"enabled": true, "listen": fmt.Sprintf(":%d", port)}
		},
		ReflectorConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 10}
		}}
	f := topo.Start(t, s)
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	h2 := f.Node("h2")
	// Each leaf gets an address on the host's segment, the one its
	// controller is reached at (and announces in its discovery record).
	var gw [2]netip.Addr
	var marks [2]int
	for i, l := range h2.Links {
		gw[i] = l.Prefix.Masked().Addr().Next()
		marks[i] = l.Switch.LogSize()
		l.Switch.NS.Addr(l.Port, netip.PrefixFrom(gw[i], l.Prefix.Bits()).String())
	}
	for i, l := range h2.Links {
		if _, err := l.Switch.WaitLog(marks[i], `msg="discovery controller announced"[^\n]*`+gw[i].String()+"/", wait); err != nil {
			t.Fatal(err)
		}
		if err := h2.Probe(i).Register(inof.RoleHost, inof.ProtocolTCP, 0, dualNQN); err != nil {
			t.Fatal(err)
		}
	}
	referral := func(i int) []discovery.Entry {
		return []discovery.Entry{{Transport: discovery.TransportTCP, Addr: gw[i], Port: port}}
	}
	c1 := dialFrom(t, h2, gw[0], discovery.ClientOptions{HostNQN: dualNQN, KATO: 30 * time.Second})
	if _, err := c1.Start([16]byte{1}); err != nil {
		t.Fatal(err)
	}
	c2 := dialFrom(t, h2, gw[1], discovery.ClientOptions{HostNQN: dualNQN, KATO: 30 * time.Second})
	if _, err := c2.Start([16]byte{2}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, c1, referral(1)) // leaf1 refers to leaf2
	waitLog(t, c2, referral(0)) // and leaf2 to leaf1
	if e := referral(1)[0]; e.Subtype() != 1 {
		t.Fatalf("referral subtype %d, want 1", e.Subtype())
	}

	// Another NQN from the same address is registered nowhere: nothing.
	other := dialFrom(t, h2, gw[0], discovery.ClientOptions{HostNQN: otherNQN})
	if _, err := other.Start([16]byte{3}); err != nil {
		t.Fatal(err)
	}
	if _, es, err := other.ReadLog(); err != nil || len(es) != 0 {
		t.Fatalf("host NQN registered nowhere: %+v, %v; want an empty log", es, err)
	}
	if err := other.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// The host's link to leaf2 is cut: leaf2 reports it down, and leaf1's
	// log drops the referral.
	l := h2.Links[1]
	l.Cut(t)
	nextLog(t, c1, nil)
	swMark := l.Switch.LogSize()
	l.Restore(t)
	if err := topo.Poll(wait, func() (bool, error) {
		if err := h2.Probe(1).Reregister(); err != nil {
			return false, err
		}
		_, err := l.Switch.WaitLog(swMark, `msg="device registered"[^\n]*`+l.Addr().String(), time.Second)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	nextLog(t, c1, referral(1))
}
