package peering

import (
	"log/slog"
	"net/netip"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
)

// SessionLog logs the BGP and BFD session changes of one inofd, in its own
// words and keys (GoBGP's own lines are debug output): a session
// established or back Up at info, one lost at warn, the steps between at
// debug. Each method is called from one watch goroutine.
type SessionLog struct {
	Log *slog.Logger
	// Kind names a neighbor ("client", "reflector").
	Kind func(netip.Addr) string
	last map[netip.Addr]bgp.SessionState
}

// BGP logs a session state change; a repeat of the state is ignored.
func (s *SessionLog) BGP(ev bgp.NeighborEvent) {
	if s.last == nil {
		s.last = map[netip.Addr]bgp.SessionState{}
	}
	prev, known := s.last[ev.Address]
	if known && prev == ev.State {
		return
	}
	s.last[ev.Address] = ev.State
	attrs := []any{"neighbor", ev.Address.String(), "kind", s.Kind(ev.Address), "state", ev.State.String()}
	switch {
	case ev.State == bgp.StateEstablished:
		s.Log.Info("BGP session established", attrs...)
	case prev == bgp.StateEstablished:
		s.Log.Warn("BGP session lost", attrs...)
	default:
		s.Log.Debug("BGP session state", attrs...)
	}
}

// BFD logs a BFD session state change: Up at info; Up to anything else at
// warn, unless the peer signalled AdminDown (it stops on purpose: info);
// the rest at debug.
func (s *SessionLog) BFD(ch bfd.StateChange) {
	attrs := []any{"neighbor", ch.Key.Peer.String(), "kind", s.Kind(ch.Key.Peer), "from", ch.Old.String(),
		"state", ch.New.String(), "diag", ch.Diag.String()}
	switch {
	case ch.New == bfd.Up:
		s.Log.Info("BFD session up", attrs...)
	case ch.Old == bfd.Up && ch.PeerAdminDown:
		s.Log.Info("BFD session down: the neighbor stopped it", attrs...)
	case ch.Old == bfd.Up:
		s.Log.Warn("BFD session down", attrs...)
	default:
		s.Log.Debug("BFD session state", attrs...)
	}
}
