package switchagent

import (
	"context"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
)

// Reports implements api.ReportsBackend: the device records the switch
// holds, with the switch port each names.
func (b switchBackend) Reports(context.Context) ([]api.Device, error) {
	return b.a.table.Reports(), nil
}

// sessionDetails fills what the API shows of a session beyond its state
// from the speaker's neighbor status.
func sessionDetails(s *api.Session, n bgp.NeighborStatus) {
	if n.RouterID.IsValid() {
		s.RouterID = n.RouterID.String()
	}
	if n.LocalAddress.IsValid() {
		s.LocalAddress = n.LocalAddress.String()
	}
	s.HoldTime, s.Keepalive, s.Passive, s.EndOfRIB, s.BFD = n.HoldTime, n.Keepalive, n.Passive, n.EndOfRIB, n.BFD != nil
}
