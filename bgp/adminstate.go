package bgp

import (
	"context"
	"net/netip"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

// adminRetry is how often the admin keeper checks a neighbor whose GoBGP
// admin state is not yet the one it should have.
const adminRetry = 200 * time.Millisecond

// adminKeeper holds the neighbors whose admin state (enabled, or disabled
// because BFD declared them down) is to be checked against GoBGP's.
//
// GoBGP queues one enable or disable request per neighbor and drops a
// second one, without an error, while the first is still queued
// (server.setAdminState logs "previous setting admin state request is
// still remaining"). A reflector starved of CPU sees every client's BFD
// expire at once and come back tens of milliseconds later: the enable
// after the quick BFD up was dropped behind the disable, and the switch's
// session stayed down for good. The keeper re-applies the wanted state
// until GoBGP reports it. Fields are guarded by GoBGP.mu.
type adminKeeper struct {
	pending map[netip.Addr]uint64 // neighbor → generation of its last change
	gen     uint64
	kick    chan struct{}
}

func newAdminKeeper() adminKeeper {
	return adminKeeper{pending: map[netip.Addr]uint64{}, kick: make(chan struct{}, 1)}
}

// recheckAdmin asks the keeper to make GoBGP's admin state of a match
// g.bfdDown; g.mu must not be held.
func (g *GoBGP) recheckAdmin(a netip.Addr) {
	g.mu.Lock()
	g.admin.gen++
	g.admin.pending[a] = g.admin.gen
	g.mu.Unlock()
	select {
	case g.admin.kick <- struct{}{}:
	default:
	}
}

// keepAdmin runs the keeper until ctx ends.
func (g *GoBGP) keepAdmin(ctx context.Context) {
	t := time.NewTicker(adminRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.admin.kick:
		case <-t.C:
		}
		g.mu.Lock()
		todo := make(map[netip.Addr]uint64, len(g.admin.pending))
		for a, gen := range g.admin.pending {
			todo[a] = gen
		}
		g.mu.Unlock()
		for a, gen := range todo {
			if !g.applyAdmin(ctx, a) {
				continue
			}
			g.mu.Lock()
			if g.admin.pending[a] == gen { // no change since
				delete(g.admin.pending, a)
			}
			g.mu.Unlock()
		}
	}
}

// applyAdmin reports whether GoBGP's admin state of a is the wanted one,
// and asks for it again if not.
func (g *GoBGP) applyAdmin(ctx context.Context, a netip.Addr) bool {
	g.mu.Lock()
	wantDown := g.bfdDown[a]
	_, known := g.neighbors[a]
	g.mu.Unlock()
	if !known {
		return true // removed: nothing to keep
	}
	found, down := false, false
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
		found = true
		down = p.GetState().GetAdminState() == api.PeerState_DOWN
	})
	if err != nil || !found {
		return false // being deleted and added again (onBFD): look later
	}
	if down == wantDown {
		return true
	}
	g.log.Warn("neighbor admin state not applied; asking again", "neighbor", a, "want_disabled", wantDown)
	if wantDown {
		err = g.srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: a.String(), Communication: "BFD down"})
	} else {
		err = g.srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: a.String()})
	}
	if err != nil {
		g.log.Error("re-applying neighbor admin state", "neighbor", a, "err", err)
	}
	return false
}
