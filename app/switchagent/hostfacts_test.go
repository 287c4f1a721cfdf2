package switchagent

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// What a host relies on being told (issue "failover"): regression tests
// with the real agent on the fake fabric and in-memory access ports.

// restoredFabric starts a reflector, switch 1 with a target on swp2 and
// switch 2 with a host, waits until the host knows the target, then
// restarts switch 1 from its state file. The target sends nothing after
// the restart, as a device that died with its link still up (or whose
// port went down while the agent was away) does.
func restoredFabric(t *testing.T, ttl uint16) (s1 *testSwitch, host *simHost, target inof.Device) {
	t.Helper()
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	dir1 := t.TempDir()
	s1 = startSwitch(t, f, ra, "10.0.0.11", dir1, "swp1", "swp2")
	s2 := startSwitch(t, f, ra, "10.0.0.12", t.TempDir(), "swp1")
	target = inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host = newSimHost(t, s2.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s1.far["swp2"], target)
	host.register(120)
	tgt.register(ttl)
	host.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	s1.waitSettled(t)
	s1.stop()
	s1 = startSwitch(t, f, ra, "10.0.0.11", dir1, "swp1", "swp2")
	s1.waitSettled(t)
	return s1, host, target
}

// TestRestoredRecordCarrierLoss: a record restored from the state file is
// tracked like a live registration: carrier loss on its port is reported
// (reason 1) although the restarted agent never saw an LLDPDU from it.
func TestRestoredRecordCarrierLoss(t *testing.T) {
	s1, host, target := restoredFabric(t, 120)
	s1.links <- l2proto.LinkState{Name: "swp2", Running: false}
	host.waitFor("restored target's link down", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
}

// TestRestoredRecordAgesOut: a restored record whose device sends no
// LLDPDU ages out at its registration's deadline (reason 6), saved in the
// state file, instead of staying active for ever.
func TestRestoredRecordAgesOut(t *testing.T) {
	_, host, target := restoredFabric(t, 2) // a 2 s TTL, saved with the state
	host.waitFor("restored target aged out", last(target.Addr, inof.StateInactive, inof.ReasonAgeOut))
}

// TestHostOwnLinkDownIsNoZoneChange: a host's own link goes down and comes
// back. While it is away it is told nothing (before the fix: an inactive
// "zone change" for every target, which nvme-snsd obeys at link-up by
// deleting its controllers); when it registers again with only its
// periodic LLDPDU (nvme-snsd sends no zone query after a flap) it is told
// the current set.
func TestHostOwnLinkDownIsNoZoneChange(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	s := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1", "swp2")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host := newSimHost(t, s.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s.far["swp2"], target)
	tgt.register(120)
	host.register(120)
	host.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	s.waitSettled(t)
	told := host.count()

	s.links <- l2proto.LinkState{Name: "swp1", Running: false}
	waitRegistered(t, s, "swp1", host.dev.Addr, false)
	// A marker: the target leaves and comes back; a host that left must
	// hear none of it, and nothing else either.
	s.links <- l2proto.LinkState{Name: "swp2", Running: false}
	waitRegistered(t, s, "swp2", target.Addr, false)
	tgt.register(120)
	waitRegistered(t, s, "swp2", target.Addr, true)
	time.Sleep(200 * time.Millisecond) // notices go out at once; give a wrong one time to arrive
	host.mu.Lock()
	away := append([]l2proto.Notification(nil), host.got[told:]...)
	host.mu.Unlock()
	if len(away) != 0 {
		t.Fatalf("a host whose link is down was told %+v", away)
	}

	host.refresh(120) // link up: the periodic LLDPDU, no query
	host.waitFor("current set after the return", func(ns []l2proto.Notification) bool { return len(ns) > told })
	host.mu.Lock()
	back := append([]l2proto.Notification(nil), host.got[told:]...)
	host.mu.Unlock()
	for _, n := range back {
		if n.State != inof.StateActive || n.Target != target.Addr {
			t.Errorf("after its return the host was told %+v, want only the target active", n)
		}
	}
}

// waitRegistered waits until the switch's registration table holds addr
// on port (want), or no longer does.
func waitRegistered(t *testing.T, s *testSwitch, port string, addr netip.Addr, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.agent.ports.mu.Lock()
		reg := s.agent.ports.reg
		s.agent.ports.mu.Unlock()
		if _, ok := reg.Lookup(port, addr); ok == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s registered on %s: never %v", addr, port, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSavedDeadlinesFollowRefreshes: registrations that are only refreshed
// change nothing else, yet their deadlines move on; the state file must
// follow (within a quarter of the TTL), or an agent that crashes a TTL
// after the last change restarts with every restored registration past
// its deadline and ages them all out at once (reason 6; found by the soak,
// TestPrivSoakCrashKeepsRegistrations).
func TestSavedDeadlinesFollowRefreshes(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	dir := t.TempDir()
	s := startSwitch(t, f, ra, "10.0.0.11", dir, "swp1")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	tgt := newSimHost(t, s.far["swp1"], target)
	tgt.register(4)
	saved := func() time.Time {
		st, ok, err := loadState(s.agent.opts.stateFile())
		if err != nil || !ok {
			return time.Time{}
		}
		for _, r := range st.Registrations {
			if r.Addr == target.Addr {
				return r.Expires
			}
		}
		return time.Time{}
	}
	var first time.Time
	deadline := time.Now().Add(30 * time.Second)
	for first.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the registration was never saved")
		}
		time.Sleep(50 * time.Millisecond)
		first = saved()
	}
	for {
		tgt.refresh(4)
		if got := saved(); got.After(first) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("saved deadline still %s after refreshes for 30 s", first)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
