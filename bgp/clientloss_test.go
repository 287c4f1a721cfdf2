package bgp

import (
	"net/netip"
	"testing"
)

// TestClientLossOnlyWhatBFDDoesNotExplain: a session loss is reported once,
// when an established session ends, with the client's BFD change count
// then; any BFD change after it (down and up again while the session
// reconnects, AdminDown of a switch that stops) tells the drop not to act.
func TestClientLossOnlyWhatBFDDoesNotExplain(t *testing.T) {
	var c clientLoss
	a := netip.MustParseAddr("10.0.0.11")
	if lost, _ := c.lost(NeighborEvent{Address: a, State: StateActive}); lost {
		t.Fatal("a session never established was lost")
	}
	c.lost(NeighborEvent{Address: a, State: StateEstablished})
	if !c.established(a) {
		t.Fatal("established not recorded")
	}
	c.bfdChanged(a) // BFD came up with the session
	lost, n := c.lost(NeighborEvent{Address: a, State: StateIdle})
	if !lost || c.established(a) {
		t.Fatal("the end of an established session not reported")
	}
	if again, _ := c.lost(NeighborEvent{Address: a, State: StateActive}); again {
		t.Fatal("one loss reported twice")
	}
	if c.bfdSince(a, n) {
		t.Fatal("no BFD change yet, but one reported")
	}
	c.bfdChanged(a)
	if !c.bfdSince(a, n) {
		t.Fatal("a BFD change after the loss not seen")
	}
	if c.bfdSince(netip.MustParseAddr("10.0.0.12"), 0) {
		t.Fatal("another client's count moved")
	}
}
