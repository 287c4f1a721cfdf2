package switchagent

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// TestEngineFirstRegistrationTellsHost (docs/realhost.md finding 6): a host
// whose zone query no switch heard registers after the targets did. Its
// first registration tells it every target it may use, as a zone query
// would; the query it sends right after that LLDPDU adds nothing, a later
// one answers everything again; a refresh tells it nothing; a host told
// before a restart is not told again by its LLDPDU after it.
func TestEngineFirstRegistrationTellsHost(t *testing.T) {
	hard := zones.Settings{DefaultZoneEnabled: true, HardZoning: true}
	red := zoned(hard, map[string][]string{"red": {"10.1.0.1", "10.2.0.1"}, "blue": {"10.1.0.2", "10.2.0.2"}})
	e := newEngine(t, red)
	notices(t, "local target", e.Register(registration("swp2", tgt1, at(0)), at(0)))
	notices(t, "remote target", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(0)}}))

	notices(t, "host A registers", e.Register(registration("swp1", hostA, at(1)), at(1)), active("swp1", hostA, tgt1))
	notices(t, "host A's query right after its LLDPDU", e.StartQuery(hostA.Addr))
	notices(t, "host A's LLDPDU again", e.Register(registration("swp1", hostA, at(1)), at(31)))
	notices(t, "a later query answers everything", e.ZoneQuery(hostA.Addr), active("swp1", hostA, tgt1))
	notices(t, "a second query right after an LLDPDU answers everything", e.StartQuery(hostA.Addr), active("swp1", hostA, tgt1))

	// A change between the registration and the query is told once, by
	// the event; the query adds nothing.
	notices(t, "host B registers", e.Register(registration("swp3", hostB, at(2)), at(2)), active("swp3", hostB, tgt2))
	notices(t, "tgt2 goes down", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(3)}}),
		inactive("swp3", hostB, tgt2, inof.ReasonLinkDown))
	notices(t, "host B's query right after its LLDPDU", e.StartQuery(hostB.Addr))

	// A host that sees nothing is told nothing, but is known: a restart
	// keeps it, and the settle-time comparison covers it.
	hostC := inof.Device{Addr: netip.MustParseAddr("10.1.0.3"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	notices(t, "host C (unzoned) registers", e.Register(registration("swp4", hostC, at(4)), at(4)))
	if !e.hosts.plan.Known(hostC.Addr) {
		t.Fatal("a host greeted with nothing is not known")
	}

	// The switch agent restarts: what the hosts were told comes back, and
	// their LLDPDUs tell them nothing again.
	r := newEngine(t, red)
	r.Restore(e.Published(), e.Told(), nil, at(10))
	notices(t, "tgt2 comes back from BGP (still inactive)", r.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(3)}}))
	notices(t, "host A's LLDPDU after the restart", r.Register(registration("swp1", hostA, at(11)), at(11)))
	notices(t, "host B's LLDPDU after the restart", r.Register(registration("swp3", hostB, at(11)), at(11)))
	notices(t, "host C's LLDPDU after the restart", r.Register(registration("swp4", hostC, at(11)), at(11)))
	notices(t, "resync", r.Resync())
	// A restored host was not greeted by this agent: its query (it may
	// have restarted too) answers everything.
	notices(t, "host A's query after the restart", r.StartQuery(hostA.Addr), active("swp1", hostA, tgt1))

	// A host that leaves is greeted again when it returns; one that left
	// before being told anything (away or not) is greeted as new.
	notices(t, "host B ages out", e.Unregister("swp3", hostB.Addr, inof.ReasonAgeOut, at(40)))
	notices(t, "tgt2 comes back while B is away", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(41)}}))
	notices(t, "host B returns", e.Register(registration("swp3", hostB, at(42)), at(42)), active("swp3", hostB, tgt2))
	notices(t, "host B's query right after it", e.StartQuery(hostB.Addr))
}

// TestAgentTellsHostAtFirstRegistration: the agent on in-memory access
// ports. A target registers, then a host that sends only its LLDPDU (its
// query went out before the agent listened) is told the target; a host
// that sends its LLDPDU and query together is told it once, and so is one
// whose query is read after its registration told it; so is one that
// registered before the target. When the target's link goes down
// each has heard exactly "active" and then "inactive".
func TestAgentTellsHostAtFirstRegistration(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	s := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1", "swp2", "swp3", "swp4", "swp5")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420,
		NQN: "nqn.2014-08.org.example:array"}
	hostDev := func(a string) inof.Device {
		return inof.Device{Addr: netip.MustParseAddr(a), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	}
	early := newSimHost(t, s.far["swp2"], hostDev("10.1.0.1"))
	quiet := newSimHost(t, s.far["swp3"], hostDev("10.1.0.2"))
	asker := newSimHost(t, s.far["swp4"], hostDev("10.1.0.3"))
	early.register(120)
	newSimHost(t, s.far["swp1"], target).register(120)
	early.waitFor("early host: target active", last(target.Addr, inof.StateActive, inof.ReasonNone))

	quiet.refresh(120) // the LLDPDU alone
	quiet.waitFor("quiet host: target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	asker.register(120)
	asker.waitFor("asking host: target active", last(target.Addr, inof.StateActive, inof.ReasonNone))

	// A host whose query, sent right after its LLDPDU, is read after its
	// registration told it the target: the query adds nothing. A query
	// for an address not registered, from the same port, comes after it
	// through the loop: once that one is counted, the first was handled.
	late := newSimHost(t, s.far["swp5"], hostDev("10.1.0.4"))
	late.refresh(120)
	late.waitFor("late-asking host: target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	query := func(h *simHost, addr netip.Addr) {
		q, err := l2proto.MessageFrame(h.link.HardwareAddr(), &l2proto.Message{Version: 1, Queries: []l2proto.ZoneQuery{{Host: addr}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.link.WriteFrame(q); err != nil {
			t.Fatal(err)
		}
	}
	query(late, late.dev.Addr)
	query(late, netip.MustParseAddr("10.1.0.99"))
	waitUntil(t, "the second query handled", func() bool { return s.agent.met.drops.Counts()["query-unregistered-host"] == 1 })

	s.links <- l2proto.LinkState{Name: "swp1", Running: false}
	for _, h := range []*simHost{early, quiet, asker, late} {
		h.waitFor("target link down", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
		h.mu.Lock()
		got := slices.Clone(h.got)
		h.mu.Unlock()
		if len(got) != 2 || got[0].State != inof.StateActive || got[0].NQN != target.NQN {
			t.Errorf("host %s heard %+v, want the target active once, then inactive", h.dev.Addr, got)
		}
	}
}
