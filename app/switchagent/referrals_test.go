package switchagent

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// TestDiscoverySourceReferrals: a host is referred to the controller of
// every other switch that reports a host with its NQN active, at that
// controller's endpoint on the segment of the host's address there; not
// to its own switch, not for an inactive report or another NQN, not to a
// switch without a controller or without an endpoint on that segment.
func TestDiscoverySourceReferrals(t *testing.T) {
	const self, sw2, sw3 = inof.RouterID(1), inof.RouterID(2), inof.RouterID(3)
	const nqn = "nqn.2014-08.org.nvmexpress:uuid:dual"
	s := newDiscoverySource(self, nil)
	drained(s)
	host := func(sw inof.RouterID, addr string, state inof.State, nqn string) inof.Report {
		return inof.Report{Switch: sw, Device: dev(addr, inof.RoleHost, inof.ProtocolTCP, nqn), Status: inof.Status{State: state}}
	}
	put := func(reports ...inof.Report) bool {
		s.put(reports[0].Device.Addr, inof.Report{}, false, reports)
		return drained(s)
	}
	refs := func(hostNQN, from string) []discovery.Entry {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		es := s.referrals(hostNQN, netip.MustParseAddr(from))
		slices.SortFunc(es, discovery.Entry.Compare)
		return es
	}
	ref := func(addr string, port uint16) discovery.Entry {
		return discovery.Entry{Transport: discovery.TransportTCP, Addr: netip.MustParseAddr(addr), Port: port}
	}

	if !put(host(sw2, "10.2.0.5", inof.StateActive, nqn)) {
		t.Fatal("a remote host with an NQN did not signal")
	}
	if got := refs(nqn, "10.1.0.5"); len(got) != 0 {
		t.Fatalf("referred to a switch without a controller: %v", got)
	}
	s.setController(sw2, &record.Discovery{Switch: sw2, Port: 8009, Endpoints: record.SortEndpoints([]netip.Prefix{
		netip.MustParsePrefix("10.2.0.1/24"), netip.MustParsePrefix("10.22.0.1/24")})})
	if !drained(s) {
		t.Fatal("a new controller did not signal")
	}
	want := []discovery.Entry{ref("10.2.0.1", 8009)}
	if got := refs(nqn, "10.1.0.5"); !slices.Equal(got, want) {
		t.Fatalf("referrals %v, want %v", got, want)
	}
	if got := refs("nqn.2014-08.org.nvmexpress:uuid:other", "10.1.0.5"); len(got) != 0 {
		t.Fatalf("another NQN referred: %v", got)
	}
	if got := refs(nqn, "10.2.0.5"); len(got) != 0 {
		t.Fatalf("a host referred to the switch of the address it connected from: %v", got)
	}
	// Its own switch, an unknown segment, no NQN: nothing more.
	put(host(self, "10.1.0.5", inof.StateActive, nqn))
	put(host(sw3, "10.3.0.5", inof.StateActive, nqn))
	put(host(sw2, "10.99.0.5", inof.StateActive, nqn))
	put(host(sw2, "10.22.0.9", inof.StateActive, ""))
	s.setController(sw3, &record.Discovery{Switch: sw3, Port: 4420, Endpoints: []netip.Prefix{netip.MustParsePrefix("10.33.0.1/24")}})
	if got := refs(nqn, "10.1.0.5"); !slices.Equal(got, want) {
		t.Fatalf("referrals %v, want %v", got, want)
	}
	// The host's report at sw2 goes inactive, then a controller leaves.
	if !put(host(sw2, "10.2.0.5", inof.StateInactive, nqn)) {
		t.Fatal("a remote host going inactive did not signal")
	}
	if got := refs(nqn, "10.1.0.5"); len(got) != 0 {
		t.Fatalf("referred to an inactive host's switch: %v", got)
	}
	put(host(sw2, "10.2.0.5", inof.StateActive, nqn))
	s.setController(sw2, nil)
	if !drained(s) {
		t.Fatal("a controller leaving did not signal")
	}
	if got := refs(nqn, "10.1.0.5"); len(got) != 0 {
		t.Fatalf("referred to a controller that left: %v", got)
	}
	// An address two switches report (a shared segment): each report
	// counts, and going from both to one to none leaves nothing behind.
	s.setController(sw3, &record.Discovery{Switch: sw3, Port: 4420, Endpoints: []netip.Prefix{netip.MustParsePrefix("10.3.0.1/24")}})
	put(host(sw2, "10.3.0.5", inof.StateActive, nqn), host(sw3, "10.3.0.5", inof.StateActive, nqn))
	if got := refs(nqn, "10.1.0.5"); !slices.Equal(got, []discovery.Entry{ref("10.3.0.1", 4420)}) {
		t.Fatalf("referrals %v, want sw3's", got)
	}
	put(host(sw3, "10.3.0.5", inof.StateActive, nqn)) // sw2's report goes
	if got := refs(nqn, "10.1.0.5"); !slices.Equal(got, []discovery.Entry{ref("10.3.0.1", 4420)}) {
		t.Fatalf("referrals %v, want sw3's", got)
	}
	// Nothing is kept for addresses that have no reports left.
	for _, a := range []string{"10.2.0.5", "10.1.0.5", "10.3.0.5", "10.99.0.5", "10.22.0.9"} {
		s.put(netip.MustParseAddr(a), inof.Report{}, false, nil)
	}
	if len(s.hostsAt) != 0 || len(s.byNQN) != 0 {
		t.Fatalf("left behind: %v %v", s.hostsAt, s.byNQN)
	}
}

// TestAgentRefersDualHomedHost runs two switches with discovery
// controllers over the fake fabric: a host with an NQN registered on the
// second is referred, in the first's discovery log, to the second's
// controller at its address on the host's segment (its announced
// discovery record), and the referral goes, with an AEN, when the host's
// link there goes down.
func TestAgentRefersDualHomedHost(t *testing.T) {
	const hostNQN = "nqn.2014-08.org.nvmexpress:uuid:dual-homed"
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	s1 := startDiscoverySwitch(t, f, ra, "10.0.0.11", "swp1")
	s2 := startDiscoverySwitch(t, f, ra, "10.0.0.12", "swp1")
	newSimHost(t, s2.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.12.0.5"), Role: inof.RoleHost,
		Protocol: inof.ProtocolTCP, NQN: hostNQN}).register(120)
	var a1, a2 net.Addr
	waitUntil(t, "both controllers listening", func() bool {
		a1, a2 = s1.agent.disc.srv.Addr(), s2.agent.disc.srv.Addr()
		return a1 != nil && a2 != nil
	})
	c, err := discovery.Dial(context.Background(), a1.String(), discovery.ClientOptions{HostNQN: hostNQN, KATO: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Start([16]byte{}); err != nil {
		t.Fatal(err)
	}
	port := uint16(a2.(*net.TCPAddr).Port)
	want := []discovery.Entry{{Transport: discovery.TransportTCP, Addr: netip.MustParseAddr("10.12.0.1"), Port: port}}
	readUntil(t, c, want)
	s2.links <- l2proto.LinkState{Name: "swp1", Running: false}
	readUntil(t, c, nil)
}

// readUntil reads the log, and again after each AEN, until it holds want.
func readUntil(t *testing.T, c *discovery.Client, want []discovery.Entry) {
	t.Helper()
	for {
		_, es, err := c.ReadLog()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(es, want) {
			return
		}
		if v, err := c.WaitAEN(30 * time.Second); err != nil || v != discovery.AENDiscoveryChange {
			t.Fatalf("log %+v, want %+v; then AEN %#x, %v", es, want, v, err)
		}
		if err := c.AsyncEventRequest(); err != nil {
			t.Fatal(err)
		}
	}
}
