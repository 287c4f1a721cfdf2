package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/bfd"
)

// neighborTable is the speaker's configured neighbors, and those a
// reflector disabled because their BFD went down (declareGone), under one
// lock: the speaker and each of its collaborators read it.
type neighborTable struct {
	mu     sync.Mutex
	byAddr map[netip.Addr]Neighbor
	// bfdDown are the neighbors disabled because BFD went down.
	bfdDown map[netip.Addr]bool
}

func newNeighborTable() neighborTable {
	return neighborTable{byAddr: map[netip.Addr]Neighbor{}, bfdDown: map[netip.Addr]bool{}}
}

// get returns neighbor a and whether it is configured.
func (t *neighborTable) get(a netip.Addr) (Neighbor, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.byAddr[a]
	return n, ok
}

// lookup returns neighbor a, whether it is configured, and whether BFD
// took it down, in one look.
func (t *neighborTable) lookup(a netip.Addr) (n Neighbor, ok, disabled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok = t.byAddr[a]
	return n, ok, t.bfdDown[a]
}

// all lists the configured neighbors.
func (t *neighborTable) all() []Neighbor {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns := make([]Neighbor, 0, len(t.byAddr))
	for _, n := range t.byAddr {
		ns = append(ns, n)
	}
	return ns
}

// addrs lists the configured neighbors' addresses.
func (t *neighborTable) addrs() []netip.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]netip.Addr, 0, len(t.byAddr))
	for a := range t.byAddr {
		out = append(out, a)
	}
	return out
}

// add configures n.
func (t *neighborTable) add(n Neighbor) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byAddr[n.Address] = n
}

// remove forgets neighbor a and returns what it was (zero if none).
func (t *neighborTable) remove(a netip.Addr) Neighbor {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.byAddr[a]
	delete(t.byAddr, a)
	delete(t.bfdDown, a)
	return n
}

// takeDown marks a disabled after its BFD down, and reports whether it
// did: not if a is no longer configured or already down.
func (t *neighborTable) takeDown(a netip.Addr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, still := t.byAddr[a]; !still || t.bfdDown[a] {
		return false
	}
	t.bfdDown[a] = true
	return true
}

// bringUp forgets that BFD took a down.
func (t *neighborTable) bringUp(a netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bfdDown, a)
}

// down reports whether BFD took a down.
func (t *neighborTable) down(a netip.Addr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bfdDown[a]
}

// AddNeighbor implements Speaker. A neighbor that is refused leaves no
// trace (policy sets, BFD session).
func (g *GoBGP) AddNeighbor(ctx context.Context, n Neighbor) error {
	switch {
	case !n.Address.IsValid():
		return errors.New("bgp: neighbor without address")
	case n.RRClient && g.cfg.Role != RoleReflector:
		return fmt.Errorf("bgp: neighbor %s: only a reflector has route-reflector clients", n.Address)
	case n.PeerReflector && (g.cfg.Role != RoleReflector || n.RRClient):
		return fmt.Errorf("bgp: neighbor %s: a peer reflector is a plain iBGP neighbor of a reflector", n.Address)
	case n.NoDefaultRT && !n.RRClient:
		return fmt.Errorf("bgp: neighbor %s: NoDefaultRT applies to route-reflector clients", n.Address)
	case g.cfg.TTLSecurity && !n.TTLSecurity:
		return fmt.Errorf("bgp: neighbor %s: the speaker requires GTSM, set TTLSecurity", n.Address)
	case n.BFD != nil && (g.cfg.BFD == nil || !n.LocalAddress.IsValid()):
		return fmt.Errorf("bgp: neighbor %s: BFD needs a BFD manager and the neighbor's local address", n.Address)
	}
	_, dup := g.neighbors.get(n.Address)
	if dup {
		return fmt.Errorf("bgp: neighbor %s is already configured", n.Address)
	}
	if err := g.policies.setNeighborSets(ctx, n, true); err != nil {
		return errors.Join(err, g.policies.setNeighborSets(context.Background(), n, false))
	}
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: g.conf.apiPeer(ctx, n)}); err != nil {
		return errors.Join(fmt.Errorf("bgp: add neighbor %s: %w", n.Address, err),
			g.policies.setNeighborSets(context.Background(), n, false))
	}
	if n.BFD != nil {
		_, err := g.cfg.BFD.Add(bfd.Config{Key: bfdKey(n), DesiredMinTx: n.BFD.DesiredMinTx,
			RequiredMinRx: n.BFD.RequiredMinRx, DetectMult: n.BFD.DetectMult})
		if err != nil {
			undo := g.srv.DeletePeer(context.Background(), &api.DeletePeerRequest{Address: n.Address.String()})
			return errors.Join(fmt.Errorf("bgp: neighbor %s: %w", n.Address, err), undo,
				g.policies.setNeighborSets(context.Background(), n, false))
		}
	}
	g.neighbors.add(n)
	return nil
}

func bfdKey(n Neighbor) bfd.SessionKey { return bfd.SessionKey{Local: n.LocalAddress, Peer: n.Address} }

// RemoveNeighbor implements Speaker.
func (g *GoBGP) RemoveNeighbor(ctx context.Context, addr netip.Addr) error {
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
		return fmt.Errorf("bgp: remove neighbor %s: %w", addr, err)
	}
	n := g.neighbors.remove(addr)
	g.restarts.forget(addr)
	if g.clients.setDemoted(addr, false) {
		if err := g.policies.neighborSet(ctx, setSilent, addr, false); err != nil {
			return fmt.Errorf("bgp: remove neighbor %s: %w", addr, err)
		}
	}
	if n.BFD != nil {
		if err := g.cfg.BFD.Remove(bfdKey(n)); err != nil {
			return fmt.Errorf("bgp: neighbor %s: %w", addr, err)
		}
	}
	return g.policies.setNeighborSets(ctx, n, false)
}

// WatchNeighbors implements Speaker. The watch ends with ctx or Stop; fn
// runs on the watch's own goroutine. After an overflow of its queue it
// gets the current state of every neighbor instead of the lost events.
func (g *GoBGP) WatchNeighbors(ctx context.Context, fn func(NeighborEvent)) error {
	wctx, cancel := g.watches.context(ctx)
	w := &neighborWatch{q: newWatchQueue[NeighborEvent](g.cfg.WatchQueue, false), fn: fn,
		snapshot: func(ctx context.Context) ([]NeighborEvent, error) {
			ns, err := g.Neighbors(ctx)
			out := make([]NeighborEvent, 0, len(ns))
			for _, n := range ns {
				out = append(out, NeighborEvent{Address: n.Address, State: n.State})
			}
			return out, err
		}}
	err := g.watchPeers(wctx, func(ev NeighborEvent) {
		if w.q.push(ev) {
			g.watches.resyncs.Add(1)
		}
	})
	if err != nil {
		cancel()
		return err
	}
	g.watches.goWatch(wctx, cancel, w.run)
	return nil
}

// watchPeers calls fn on GoBGP's watcher goroutine for every session state
// change until ctx ends; fn must not block. The graceful-restart tracker
// uses it directly, so a neighbor's return is recorded before the record
// watch (one hop further) delivers the withdraws that follow it.
func (g *GoBGP) watchPeers(ctx context.Context, fn func(NeighborEvent)) error {
	err := g.srv.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, func(r *api.WatchEventResponse) {
		pe := r.GetPeer()
		if pe == nil || pe.Type != api.WatchEventResponse_PeerEvent_STATE {
			return
		}
		addr, err := netip.ParseAddr(pe.Peer.GetState().GetNeighborAddress())
		if err != nil {
			return
		}
		fn(NeighborEvent{Address: addr, State: sessionState(pe.Peer.GetState().GetSessionState())})
	})
	if err != nil {
		return fmt.Errorf("bgp: watch neighbors: %w", err)
	}
	return nil
}

// Neighbors implements Speaker.
func (g *GoBGP) Neighbors(ctx context.Context) ([]NeighborStatus, error) {
	return g.listNeighbors(ctx, false)
}

// NeighborsAdvertised implements Speaker.
func (g *GoBGP) NeighborsAdvertised(ctx context.Context) ([]NeighborStatus, error) {
	return g.listNeighbors(ctx, true)
}

// listNeighbors lists the neighbors, with the advertised counts when
// advertised is set.
func (g *GoBGP) listNeighbors(ctx context.Context, advertised bool) ([]NeighborStatus, error) {
	var out []NeighborStatus
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: advertised}, func(p *api.Peer) {
		addr, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		if err != nil {
			return
		}
		n, _ := g.neighbors.get(addr)
		st := NeighborStatus{Neighbor: n, State: sessionState(p.GetState().GetSessionState())}
		st.RouterID, _ = netip.ParseAddr(p.GetState().GetRouterId())
		for _, as := range p.GetAfiSafis() {
			if isOpaque(as.GetConfig().GetFamily()) {
				st.Received = as.GetState().GetAccepted()
				st.Advertised = as.GetState().GetAdvertised()
				st.EndOfRIB = as.GetMpGracefulRestart().GetState().GetEndOfRibReceived()
			}
		}
		out = append(out, st)
	})
	if err != nil {
		return nil, fmt.Errorf("bgp: list neighbors: %w", err)
	}
	return out, nil
}

func sessionState(s api.PeerState_SessionState) SessionState {
	switch s {
	case api.PeerState_IDLE:
		return StateIdle
	case api.PeerState_CONNECT:
		return StateConnect
	case api.PeerState_ACTIVE:
		return StateActive
	case api.PeerState_OPENSENT:
		return StateOpenSent
	case api.PeerState_OPENCONFIRM:
		return StateOpenConfirm
	case api.PeerState_ESTABLISHED:
		return StateEstablished
	}
	return StateUnknown
}
