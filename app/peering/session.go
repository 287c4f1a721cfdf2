package peering

import (
	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
)

// Session is what the admin API shows of a BGP session, from the speaker's
// neighbor status (app/api does not import bgp); kind names the peer
// ("client", "reflector"). Since is the caller's to set.
func Session(n bgp.NeighborStatus, kind string) api.Session {
	s := api.Session{Peer: n.Address.String(), Kind: kind, State: n.State.String(), Received: n.Received, Advertised: n.Advertised,
		HoldTime: n.HoldTime, Keepalive: n.Keepalive, Passive: n.Passive, EndOfRIB: n.EndOfRIB, BFD: n.BFD != nil}
	if n.RouterID.IsValid() {
		s.RouterID = n.RouterID.String()
	}
	if n.LocalAddress.IsValid() {
		s.LocalAddress = n.LocalAddress.String()
	}
	return s
}
