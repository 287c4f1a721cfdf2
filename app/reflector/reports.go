package reflector

import (
	"context"
	"fmt"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
)

// Reports implements api.ReportsBackend: every client's report of every
// device, with the switch port its record names.
func (b backend) Reports(context.Context) ([]api.Device, error) {
	if err := b.r.Healthy(); err != nil {
		return nil, fmt.Errorf("reflector: %w", err)
	}
	return b.r.fabric.devices.Reports(), nil
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
