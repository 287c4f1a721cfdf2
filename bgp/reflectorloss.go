package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/bfd"
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
// routes. A loss is judged again every lostRecheck while its session stays
// down and no other reflector served: one that was passed over as stalled
// may deliver again, and one that was down may be back with its table
// (left alone, the lost reflector's stale copies would shadow it until the
// restart time ends).
type reflectorLoss struct {
	mu sync.Mutex
	// state is each neighbor's last session state.
	state map[netip.Addr]SessionState
	// handled marks neighbors dropped since they were last established,
	// so the BFD and session events of one loss act once.
	handled map[netip.Addr]bool
	// ups counts each neighbor's sessions established: a loss is judged
	// again (goDropLost) only while no new session came since.
	ups map[netip.Addr]uint64

	// What it acts with (its state works from the zero value): the
	// configured neighbors, their BFD sessions (nil without BFD), GoBGP,
	// the speaker's watches (its goroutines end with the speaker), the
	// prompt reconnects.
	neighbors  *neighborTable
	bfds       *bfd.Manager
	conf       *peerConfig
	gobgp      func() peerAPI
	watches    *watchGroup
	reconnects *reconnects
	grEnabled  bool // graceful restart: a reflector serves once it sent End-of-RIB
	log        *slog.Logger
}

// observe records a session state change and reports whether it is the
// loss of an established session not yet handled (lost), or a connection
// that was opened and closed again before its session came up (closed: a
// reflector that does not take the switch yet; GoBGP then waits its 5 s
// idle hold before it tries again).
func (l *reflectorLoss) observe(ev NeighborEvent) (lost, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	prev := l.state[ev.Address]
	l.state[ev.Address] = ev.State
	if ev.State == StateEstablished {
		delete(l.handled, ev.Address)
		if prev != StateEstablished {
			l.ups[ev.Address]++
		}
		return false, false
	}
	closed = ev.State == StateIdle && (prev == StateOpenSent || prev == StateOpenConfirm)
	return prev == StateEstablished && l.claim(ev.Address), closed
}

// bfdDown reports whether a BFD loss towards addr is not yet handled.
func (l *reflectorLoss) bfdDown(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return l.claim(addr)
}

// init makes the maps; l.mu is held.
func (l *reflectorLoss) init() {
	if l.state == nil {
		l.state, l.handled, l.ups = map[netip.Addr]SessionState{}, map[netip.Addr]bool{}, map[netip.Addr]uint64{}
	}
}

// session returns how many sessions to addr were established so far.
func (l *reflectorLoss) session(addr netip.Addr) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return l.ups[addr]
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

// stillDown reports whether addr's session, lost after session
// sessions, is still down with no new one since and its loss not being
// handled, and claims it if so.
func (l *reflectorLoss) stillDown(addr netip.Addr, session uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.ups[addr] != session || l.state[addr] == StateEstablished {
		return false
	}
	return l.claim(addr)
}

// claim marks addr handled; l.mu is held.
func (l *reflectorLoss) claim(addr netip.Addr) bool {
	if l.handled[addr] {
		return false
	}
	l.handled[addr] = true
	return true
}

// sessionChanged follows session changes on a client (GoBGP's watcher
// goroutine: it only hands losses on).
func (l *reflectorLoss) sessionChanged(ev NeighborEvent) {
	lost, closed := l.observe(ev)
	switch {
	case lost:
		l.goDropLost(ev.Address, whySession)
	case closed && l.bfdUp(ev.Address):
		// BFD says the reflector is there: it closed the connection
		// because it had not taken the switch back yet (a switch it
		// declared gone waits for BFD): try again after a short hold,
		// not GoBGP's 5 s. (Closed before BFD came up, the reconnect
		// at BFD up does it.)
		l.reconnects.goReconnect(ev.Address, "connection closed before the session came up")
	}
}

// Why a reflector is lost (goDropLost).
const (
	whySession = "session down"
	whyBFD     = "BFD down"
)

// lostRecheck is how often a session loss is judged again while the
// lost reflector's routes are kept.
const lostRecheck = time.Second

// goDropLost drops addr's routes on a goroutine of its own (GoBGP's API
// must not be called from its watcher), if another reflector still serves.
// A session loss whose routes are kept is judged again every lostRecheck
// until they are dropped, the session is back or the speaker stops. (A BFD
// loss ends the session when its routes are kept, and that loss is judged
// then.)
func (l *reflectorLoss) goDropLost(addr netip.Addr, why string) {
	session := l.session(addr)
	ctx, cancel := l.watches.context(context.Background())
	l.watches.goWatch(ctx, cancel, func(ctx context.Context) {
		for first := true; !l.dropLost(ctx, addr, why, first) && why == whySession; first = false {
			if first {
				// Its routes are kept: the session must come back soon.
				l.reconnects.goReconnect(addr, why)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(lostRecheck):
			}
			if !l.stillDown(addr, session) {
				return
			}
		}
	})
}

// dropLost judges addr's loss and reports whether it is done with: the
// routes dropped, or the neighbor no longer configured. first says it is
// the loss's first judgement (later ones log only what they do).
func (l *reflectorLoss) dropLost(ctx context.Context, addr netip.Addr, why string, first bool) bool {
	n, ok := l.neighbors.get(addr)
	if !ok {
		return true
	}
	other, err := l.servingNeighbor(ctx, addr, first)
	if err != nil {
		l.log.Error("reflector lost: cannot list sessions", "neighbor", addr, "err", err)
		l.release(addr)
		return false
	}
	if !other.IsValid() {
		l.release(addr) // a later judgement of this loss may find one
		if !first {
			return false
		}
		l.log.Info("reflector lost; keeping its routes (no other reflector serves)", "neighbor", addr, "why", why)
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
				l.log.Warn("reflector lost: could not end its session", "neighbor", addr, "err", err)
			}
		}
		return false
	}
	l.log.Warn("reflector lost; dropping its routes, another reflector serves", "neighbor", addr, "why", why, "serving", other)
	a := addr.String()
	if err := l.gobgp().DeletePeer(ctx, &api.DeletePeerRequest{Address: a}); err != nil {
		l.log.Error("reflector lost: removing neighbor", "neighbor", addr, "err", err)
		return true
	}
	if err := l.gobgp().AddPeer(ctx, &api.AddPeerRequest{Peer: l.conf.apiPeer(ctx, n)}); err != nil {
		l.log.Error("reflector lost: adding neighbor back", "neighbor", addr, "err", err)
	}
	return true
}

// servingNeighbor returns a neighbor other than lost whose session is
// established and, with graceful restart, has sent End-of-RIB for the
// opaque family (so it holds the whole table), and whose connection shows
// that it delivers (stalledSession); invalid if there is none. Those
// passed over as stalled are logged when logStalled is set.
func (l *reflectorLoss) servingNeighbor(ctx context.Context, lost netip.Addr, logStalled bool) (netip.Addr, error) {
	type candidate struct {
		addr      netip.Addr
		keepalive time.Duration
	}
	var cands []candidate
	err := l.gobgp().ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		a, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		// A neighbor whose own loss is being handled does not serve: when an
		// uplink goes down BFD loses both reflectors at once, and each drop
		// found the other still established and dropped too, withdrawing
		// every remote record (found by the soak,
		// TestPrivSoakUplinkFlapKeepsRemoteTargets, now and then).
		if err != nil || a == lost || p.GetState().GetSessionState() != api.PeerState_ESTABLISHED || l.lost(a) {
			return
		}
		for _, as := range p.GetAfiSafis() {
			if !isOpaque(as.GetConfig().GetFamily()) {
				continue
			}
			if !l.grEnabled || as.GetMpGracefulRestart().GetState().GetEndOfRibReceived() {
				// The peer keeps a keepalive interval of at most a third
				// of the hold time both sides agreed.
				hold := time.Duration(p.GetTimers().GetState().GetNegotiatedHoldTime()) * time.Second
				cands = append(cands, candidate{a, hold / 3})
				return
			}
		}
	})
	if err != nil {
		return netip.Addr{}, err
	}
	slices.SortFunc(cands, func(x, y candidate) int { return x.addr.Compare(y.addr) })
	for _, c := range cands {
		n, _ := l.neighbors.get(c.addr)
		if why := stalledSession(n.LocalAddress, c.addr, c.keepalive); why != "" {
			if logStalled {
				l.log.Warn("reflector lost: another is established but does not count as serving", "lost", lost, "other", c.addr, "why", why)
			}
			continue
		}
		return c.addr, nil
	}
	return netip.Addr{}, nil
}

// stalledSession says why the session to peer (from local, when valid)
// cannot be counted on to deliver, "" if nothing says so. The session is
// up until its hold time runs out, 9 s by default, but a connection cut
// off (its BGP traffic dropped on the way, found by the soak, seed
// 12092418969741957540 step 4) or a reflector that hangs stops delivering
// at once: a client that lost the other reflector and dropped its routes
// for this one's would lose every record this one did not send before it
// went quiet (the memberships the client took since), and tell its hosts
// their targets are gone. One live connection is enough; none found (the
// tables unreadable) leaves the session's state to judge.
func stalledSession(local, peer netip.Addr, keepalive time.Duration) string {
	qs, err := sessionQuiet(local, peer)
	if err != nil || len(qs) == 0 {
		return ""
	}
	var why string
	for _, q := range qs {
		if why = stalled(q, keepalive); why == "" {
			return ""
		}
	}
	return why
}

// bfdUp reports whether neighbor a has a BFD session that is up.
func (l *reflectorLoss) bfdUp(a netip.Addr) bool {
	n, ok := l.neighbors.get(a)
	if !ok || n.BFD == nil || l.bfds == nil {
		return false
	}
	s, ok := l.bfds.Session(bfdKey(n))
	return ok && s.Status().State == bfd.Up
}
