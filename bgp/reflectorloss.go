package bgp

import (
	"context"
	"net/netip"
	"sync"

	api "github.com/osrg/gobgp/v3/api"
)

// reflectorLoss drops a lost reflector's routes on a client that still has
// another reflector.
//
// A client learns every record from each of its reflectors. When one is
// lost — its BGP session ends (graceful restart keeps its routes, marked
// stale) or BFD towards it goes down (the session itself may live on until
// the hold time) — GoBGP goes on choosing that reflector's copies as best:
// it does not demote stale routes, and the reflectors' copies tie until the
// lower neighbor address. Newer records the other reflector sends (a target
// that left, say) are then not used until the restart time ends. So, while
// another reflector's session is established and has sent End-of-RIB, the
// lost reflector is removed and added again at once, as after a hard reset:
// its routes go, the other reflector's identical copies become best with no
// withdraw, and the session comes back by itself. Graceful restart still
// does what it is for: the only (or last) reflector restarting keeps its
// routes.
type reflectorLoss struct {
	mu sync.Mutex
	// state is each neighbor's last session state.
	state map[netip.Addr]SessionState
	// handled marks neighbors dropped since they were last established,
	// so the BFD and session events of one loss act once.
	handled map[netip.Addr]bool
}

// observe records a session state change and reports whether it is the
// loss of an established session not yet handled.
func (l *reflectorLoss) observe(ev NeighborEvent) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == nil {
		l.state, l.handled = map[netip.Addr]SessionState{}, map[netip.Addr]bool{}
	}
	prev := l.state[ev.Address]
	l.state[ev.Address] = ev.State
	if ev.State == StateEstablished {
		delete(l.handled, ev.Address)
		return false
	}
	return prev == StateEstablished && l.claim(ev.Address)
}

// bfdDown reports whether a BFD loss towards addr is not yet handled.
func (l *reflectorLoss) bfdDown(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == nil {
		l.state, l.handled = map[netip.Addr]SessionState{}, map[netip.Addr]bool{}
	}
	return l.claim(addr)
}

// release forgets that addr's loss was handled.
func (l *reflectorLoss) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.handled, addr)
}

// lost reports whether addr's loss is being handled (it was dropped, or
// is about to be, and has not been established since).
func (l *reflectorLoss) lost(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handled[addr]
}

// claim marks addr handled; l.mu is held.
func (l *reflectorLoss) claim(addr netip.Addr) bool {
	if l.handled[addr] {
		return false
	}
	l.handled[addr] = true
	return true
}

// watchReflectorLoss follows session changes on a client (GoBGP's watcher
// goroutine: it only hands losses on).
func (g *GoBGP) watchReflectorLoss() error {
	return g.watchPeers(g.watches.lifetime(), func(ev NeighborEvent) {
		if g.loss.observe(ev) {
			g.goDropLost(ev.Address, whySession)
		}
	})
}

// Why a reflector is lost (goDropLost).
const (
	whySession = "session down"
	whyBFD     = "BFD down"
)

// goDropLost drops addr's routes on a goroutine of its own (GoBGP's API
// must not be called from its watcher), if another reflector still serves.
func (g *GoBGP) goDropLost(addr netip.Addr, why string) {
	ctx, cancel := g.watches.context(context.Background())
	g.watches.goWatch(ctx, cancel, func(ctx context.Context) { g.dropLost(ctx, addr, why) })
}

func (g *GoBGP) dropLost(ctx context.Context, addr netip.Addr, why string) {
	g.mu.Lock()
	n, ok := g.neighbors[addr]
	g.mu.Unlock()
	if !ok {
		return
	}
	other, err := g.servingNeighbor(ctx, addr)
	if err != nil {
		g.log.Error("reflector lost: cannot list sessions", "neighbor", addr, "err", err)
		return
	}
	if !other.IsValid() {
		g.loss.release(addr) // a later event of this loss may find one
		g.log.Info("reflector lost; keeping its routes (no other reflector serves)", "neighbor", addr, "why", why)
		// After BFD loss the session may live on until its hold time, and
		// deliver, once the path is back, what the reflector sent while
		// cut off: a reflector whose own uplink went down lost every
		// switch by BFD and withdrew their records, queued towards this
		// one; its only copies gone, its hosts were told reason 7 for
		// targets that were there (found by the soak, seed
		// 16268759559226152336 step 115). Ended here, the session keeps
		// the routes stale under graceful restart, as a dead connection
		// does.
		if why == whyBFD && n.LocalAddress.IsValid() {
			if _, err := shutdownSessions(n.LocalAddress, addr); err != nil {
				g.log.Warn("reflector lost: could not end its session", "neighbor", addr, "err", err)
			}
		}
		return
	}
	g.log.Warn("reflector lost; dropping its routes, another reflector serves", "neighbor", addr, "why", why, "serving", other)
	a := addr.String()
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: a}); err != nil {
		g.log.Error("reflector lost: removing neighbor", "neighbor", addr, "err", err)
		return
	}
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: g.apiPeer(ctx, n)}); err != nil {
		g.log.Error("reflector lost: adding neighbor back", "neighbor", addr, "err", err)
	}
}

// servingNeighbor returns a neighbor other than lost whose session is
// established and, with graceful restart, has sent End-of-RIB for the
// opaque family (so it holds the whole table); invalid if there is none.
func (g *GoBGP) servingNeighbor(ctx context.Context, lost netip.Addr) (netip.Addr, error) {
	var out netip.Addr
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		a, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		// A neighbor whose own loss is being handled does not serve: when an
		// uplink goes down BFD loses both reflectors at once, and each drop
		// found the other still established and dropped too, withdrawing
		// every remote record (found by the soak,
		// TestPrivSoakUplinkFlapKeepsRemoteTargets, now and then).
		if err != nil || a == lost || out.IsValid() || p.GetState().GetSessionState() != api.PeerState_ESTABLISHED || g.loss.lost(a) {
			return
		}
		for _, as := range p.GetAfiSafis() {
			if !isOpaque(as.GetConfig().GetFamily()) {
				continue
			}
			if !g.cfg.GracefulRestart.Enabled || as.GetMpGracefulRestart().GetState().GetEndOfRibReceived() {
				out = a
			}
		}
	})
	return out, err
}
