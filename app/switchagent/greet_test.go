package switchagent

import (
	"net/netip"
	"testing"

	"github.com/openinof/inof/inof"
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
	notices(t, "local target", e.Register("swp2", tgt1, at(0), at(0)))
	notices(t, "remote target", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(0)}}))

	notices(t, "host A registers", e.Register("swp1", hostA, at(1), at(1)), active("swp1", hostA, tgt1))
	notices(t, "host A's query right after its LLDPDU", e.StartQuery(hostA.Addr))
	notices(t, "host A's LLDPDU again", e.Register("swp1", hostA, at(1), at(31)))
	notices(t, "a later query answers everything", e.ZoneQuery(hostA.Addr), active("swp1", hostA, tgt1))
	notices(t, "a second query right after an LLDPDU answers everything", e.StartQuery(hostA.Addr), active("swp1", hostA, tgt1))

	// A change between the registration and the query is told once, by
	// the event; the query adds nothing.
	notices(t, "host B registers", e.Register("swp3", hostB, at(2), at(2)), active("swp3", hostB, tgt2))
	notices(t, "tgt2 goes down", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(3)}}),
		inactive("swp3", hostB, tgt2, inof.ReasonLinkDown))
	notices(t, "host B's query right after its LLDPDU", e.StartQuery(hostB.Addr))

	// A host that sees nothing is told nothing, but is known: a restart
	// keeps it, and the settle-time comparison covers it.
	hostC := inof.Device{Addr: netip.MustParseAddr("10.1.0.3"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	notices(t, "host C (unzoned) registers", e.Register("swp4", hostC, at(4), at(4)))
	if !e.plan.Known(hostC.Addr) {
		t.Fatal("a host greeted with nothing is not known")
	}

	// The switch agent restarts: what the hosts were told comes back, and
	// their LLDPDUs tell them nothing again.
	r := newEngine(t, red)
	r.Restore(e.Published(), e.Told(), nil, at(10))
	notices(t, "tgt2 comes back from BGP (still inactive)", r.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(3)}}))
	notices(t, "host A's LLDPDU after the restart", r.Register("swp1", hostA, at(11), at(11)))
	notices(t, "host B's LLDPDU after the restart", r.Register("swp3", hostB, at(11), at(11)))
	notices(t, "host C's LLDPDU after the restart", r.Register("swp4", hostC, at(11), at(11)))
	notices(t, "resync", r.Resync())
	// A restored host was not greeted by this agent: its query (it may
	// have restarted too) answers everything.
	notices(t, "host A's query after the restart", r.StartQuery(hostA.Addr), active("swp1", hostA, tgt1))

	// A host that leaves is greeted again when it returns; one that left
	// before being told anything (away or not) is greeted as new.
	notices(t, "host B ages out", e.Unregister("swp3", hostB.Addr, inof.ReasonAgeOut, at(40)))
	notices(t, "tgt2 comes back while B is away", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(41)}}))
	notices(t, "host B returns", e.Register("swp3", hostB, at(42), at(42)), active("swp3", hostB, tgt2))
	notices(t, "host B's query right after it", e.StartQuery(hostB.Addr))
}
