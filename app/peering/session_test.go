package peering

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
)

// TestSession: every field the API shows comes from the neighbor status;
// addresses not yet known stay empty rather than "invalid IP".
func TestSession(t *testing.T) {
	n := bgp.NeighborStatus{
		Neighbor: bgp.Neighbor{Address: netip.MustParseAddr("10.0.0.2"), LocalAddress: netip.MustParseAddr("10.0.0.1"),
			HoldTime: 9 * time.Second, Keepalive: 3 * time.Second, Passive: true, BFD: &bgp.NeighborBFD{DetectMult: 3}},
		State: bgp.StateEstablished, RouterID: netip.MustParseAddr("10.0.0.2"), Received: 7, Advertised: 5, EndOfRIB: true,
	}
	want := api.Session{Peer: "10.0.0.2", Kind: "client", State: "established", Received: 7, Advertised: 5,
		RouterID: "10.0.0.2", LocalAddress: "10.0.0.1", HoldTime: 9 * time.Second, Keepalive: 3 * time.Second,
		Passive: true, EndOfRIB: true, BFD: true}
	if got := Session(n, "client"); got != want {
		t.Fatalf("Session = %+v, want %+v", got, want)
	}
	bare := bgp.NeighborStatus{Neighbor: bgp.Neighbor{Address: netip.MustParseAddr("10.0.0.3")}, State: bgp.StateActive}
	if got := Session(bare, "reflector"); got != (api.Session{Peer: "10.0.0.3", Kind: "reflector", State: "active"}) {
		t.Fatalf("Session of a session not yet up = %+v", got)
	}
}
