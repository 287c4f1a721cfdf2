package switchagent

import (
	"context"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
)

// Reports implements api.ReportsBackend: the device records the switch
// holds, with the switch port each names.
func (b switchBackend) Reports(context.Context) ([]api.Report, error) {
	recs := b.a.table.Records()
	out := make([]api.Report, len(recs))
	for i, d := range recs {
		out[i] = api.Report{Report: d.Report, AccessPort: d.AccessPort, FirstSeen: d.Since}
	}
	return out, nil
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
