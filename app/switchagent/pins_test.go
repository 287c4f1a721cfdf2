package switchagent

import (
	"reflect"
	"testing"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

const arrayNQN = "nqn.2014-08.org.example:array1"

// pinned returns a configuration with zone z1 (hostA and arrayNQN) and, if
// at is not empty, arrayNQN pinned there.
func pinned(t *testing.T, at ...zones.Location) *zones.Config {
	t.Helper()
	cfg := zoned(zones.DefaultSettings(), map[string][]string{"z1": {hostA.Addr.String(), arrayNQN}})
	if len(at) > 0 {
		p, err := zones.NewPin(arrayNQN, at...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pins[arrayNQN] = p
	}
	return cfg
}

func refusals(t *testing.T, what string, out Output, want ...inof.Device) {
	t.Helper()
	var got []inof.Device
	for _, r := range out.Refused {
		if !r.Claim.Refused() {
			t.Errorf("%s: a refusal of an allowed claim %s", what, r.Claim)
		}
		got = append(got, r.Record.Device)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: refused %v, want %v", what, got, want)
	}
}

// A claim to a pinned NQN from a port outside the pin is refused whether
// it comes from this switch's registrations or another switch's records:
// no host is told about it, it is published in no zone, and the real
// device keeps working; it is reported once. The unpinned NQN is judged
// as before.
func TestEnginePins(t *testing.T) {
	real := tgt1
	real.NQN = arrayNQN
	rogue := tgt2
	rogue.NQN = arrayNQN
	e := newEngine(t, pinned(t, zones.Location{Switch: remote, Port: "eth3"}))
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)

	out := e.Record(inof.Report{Switch: remote, AccessPort: "eth3", Device: real, Status: inof.Status{State: inof.StateActive}})
	notices(t, "the pinned array joins", out, active("swp1", hostA, real))
	refusals(t, "the pinned array", out)

	// A rogue on another switch's port (a rogue or misconfigured switch).
	out = e.Record(inof.Report{Switch: other, AccessPort: "eth3", Device: rogue, Status: inof.Status{State: inof.StateActive}})
	notices(t, "a remote rogue", out)
	refusals(t, "a remote rogue", out, rogue)
	out = e.Record(inof.Report{Switch: other, AccessPort: "eth3", Device: rogue, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown}})
	refusals(t, "the same rogue again", out)
	notices(t, "the same rogue again", out)
	e.Gone(other, rogue.Addr)

	// A rogue on a local port: refused, published in no zone, subscribing
	// to nothing on its behalf.
	out = e.Register(registration("swp9", rogue, at(1)), at(1))
	notices(t, "a local rogue", out)
	refusals(t, "a local rogue", out, rogue)
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Publish[0].Zones, []string{zones.DefaultZone}) {
		t.Fatalf("the local rogue published %+v, want under the default zone only", out.Publish)
	}
	notices(t, "the host's query", e.ZoneQuery(hostA.Addr), active("swp1", hostA, real))
	if ts := e.usable(hostA.Addr); len(ts) != 1 {
		t.Fatalf("hostA may use %v", ts)
	}

	// The admin pins the NQN to the rogue's port as well: it joins (the
	// host is told), and its record is published again in z1.
	out = e.Config(pinned(t, zones.Location{Switch: remote, Port: "eth3"}, zones.Location{Switch: self, Port: "swp9"}))
	notices(t, "pinned there too", out, active("swp1", hostA, rogue))
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Publish[0].Zones, []string{"z1"}) {
		t.Fatalf("published %+v, want the local device in z1", out.Publish)
	}
	// Pinned back: refused again, the host is told it went (zone change).
	out = e.Config(pinned(t, zones.Location{Switch: remote, Port: "eth3"}))
	notices(t, "pinned back", out, inactive("swp1", hostA, rogue, inof.ReasonZoneChange))
	refusals(t, "pinned back", out, rogue)
	// No pin: an unpinned NQN behaves as before pins.
	out = e.Config(pinned(t))
	notices(t, "unpinned", out, active("swp1", hostA, rogue))
	refusals(t, "unpinned", out)
	if len(e.pins.refused) != 0 {
		t.Errorf("refused left: %v", e.pins.refused)
	}
}

// A restored local record claiming a pinned NQN outside its pin is kept out
// of the index and reported.
func TestEngineRestoreRefused(t *testing.T) {
	rogue := tgt2
	rogue.NQN = arrayNQN
	e := newEngine(t, pinned(t, zones.Location{Switch: remote, Port: "eth3"}))
	r := registration("swp9", rogue, at(0))
	out := e.Restore([]inof.Report{r}, nil, nil, at(0))
	refusals(t, "restored", out, rogue)
	if _, ok := e.ix.Device(rogue.Addr); ok {
		t.Error("the restored rogue is in the index")
	}
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Publish[0].Zones, []string{zones.DefaultZone}) {
		t.Errorf("published %+v", out.Publish)
	}
}

// The discovery controller does not list a target the pins refuse.
func TestDiscoverySourcePins(t *testing.T) {
	rogue := tgt2
	rogue.NQN = arrayNQN
	s := newDiscoverySource(self, pinned(t, zones.Location{Switch: remote, Port: "eth3"}))
	r := inof.Report{Switch: other, AccessPort: "eth3", Device: rogue, Status: inof.Status{State: inof.StateActive}}
	s.put(rogue.Addr, r, true, []inof.Report{r})
	if got := s.Visible("nqn.2014-08.org.example:host", hostA.Addr); len(got) != 0 {
		t.Errorf("discovery lists %v", got)
	}
	s.setConfig(pinned(t))
	s.put(rogue.Addr, r, true, []inof.Report{r})
	if got := s.Visible("nqn.2014-08.org.example:host", hostA.Addr); len(got) != 1 {
		t.Errorf("unpinned: discovery lists %v, want the target", got)
	}
}

// A device claiming the pinned array's NQN and its address from another
// switch's port does not take the array out of its zone, whichever record
// the merge prefers.
func TestEnginePinSameAddress(t *testing.T) {
	real := tgt1
	real.NQN = arrayNQN
	e := newEngine(t, pinned(t, zones.Location{Switch: remote, Port: "eth3"}))
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	notices(t, "the array", e.Record(inof.Report{Switch: remote, AccessPort: "eth3", Device: real,
		Status: inof.Status{State: inof.StateActive, Changed: at(1)}}), active("swp1", hostA, real))
	rogue := real
	rogue.Port = 4421 // a view of its own: the merge prefers it (the newer change)
	out := e.Record(inof.Report{Switch: other, AccessPort: "eth9", Device: rogue, Status: inof.Status{State: inof.StateActive, Changed: at(2)}})
	notices(t, "the same address and NQN from elsewhere", out)
	if ts := e.usable(hostA.Addr); len(ts) != 1 {
		t.Fatalf("hostA may use %v, want the array", ts)
	}
	e.Gone(remote, real.Addr) // the array's own record goes: only the refused claim is left
	if ts := e.usable(hostA.Addr); len(ts) != 0 {
		t.Fatalf("hostA may use %v after the array left", ts)
	}
}
