package bgp

import (
	"context"
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

// TestSilentClientDemoted: a reflector demotes a silent switch's records
// (clientloss.go) with real GoBGP speakers: at another switch the other
// reflector's copies win, with no withdraw; once the other reflector is
// gone, the demoted copies serve, again with no withdraw.
func TestSilentClientDemoted(t *testing.T) {
	ctx := context.Background()
	r1, r2 := startReflector(t, addr("127.0.0.1"), Options{}), startReflector(t, addr("127.0.0.4"), Options{})
	a, b := startClient(t, addr("127.0.0.2"), Options{}), startClient(t, addr("127.0.0.3"), Options{})
	for _, r := range []*node{r1, r2} {
		connect(t, r, a, nil)
		connect(t, r, b, nil)
	}
	waitEstablished(t, a, 2)
	waitEstablished(t, b, 2)
	const n = 10
	publishTo(t, a, b, n)
	b.view.waitFor(t, "every record best from the lower-addressed reflector", allFrom(r1.addr, n))
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: n, r2.addr: n})

	if err := r1.demoteClient(ctx, a.addr, true); err != nil {
		t.Fatal(err)
	}
	b.view.waitFor(t, "every record best from the other reflector", allFrom(r2.addr, n))
	r2.Stop()
	b.view.waitFor(t, "the demoted copies serve once the other reflector is gone", allFrom(r1.addr, n))
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the switch saw %d withdraws", w)
	}
}
