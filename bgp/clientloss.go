package bgp

import (
	"context"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/bfd"
)

// clientLoss drops, on a reflector, the records of a switch whose BGP
// session ended while BFD still sees the switch.
//
// Such a switch is neither gone (BFD would be down: onBFD withdraws its
// records) nor restarting on purpose (BFD would say AdminDown): its path
// carries BFD but not BGP — a filter, a stalled connection — and the
// session's hold time ran out. GoBGP keeps the switch's records stale for
// the restart time (graceful restart on hold-timer expiry, RFC 8538), and
// this reflector's stale copies, which GoBGP does not demote, tie with
// another reflector's fresh ones at every other switch and win there on
// the lower neighbor address: a change on the switch reaches no host until
// the path heals (found by the soak, TestPrivSoakPartitionDoesNotShadow).
// So once BFD had time to say otherwise and the session is still down,
// the neighbor is deleted (its records withdrawn: the other switches use
// the other reflector's identical copies, without a withdraw) and added
// back, to reconnect when the path heals.
type clientLoss struct {
	mu  sync.Mutex
	est map[netip.Addr]bool // clients whose session is established
}

// lost records a session state change and reports whether it ends an
// established session.
func (c *clientLoss) lost(ev NeighborEvent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.est == nil {
		c.est = map[netip.Addr]bool{}
	}
	was := c.est[ev.Address]
	c.est[ev.Address] = ev.State == StateEstablished
	return was && ev.State != StateEstablished
}

func (c *clientLoss) established(a netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.est[a]
}

// watchClientLoss follows the switches' sessions on a reflector with BFD.
func (g *GoBGP) watchClientLoss() error {
	return g.watchPeers(g.watches.lifetime(), func(ev NeighborEvent) {
		if !g.clients.lost(ev) {
			return
		}
		ctx, cancel := g.watches.context(context.Background())
		g.watches.goWatch(ctx, cancel, func(ctx context.Context) { g.dropSilentClient(ctx, ev.Address) })
	})
}

// dropSilentClient waits BFD's detection time (plus a second) after a
// switch's session ended and drops the switch's records if the session is
// still down while BFD is still up.
func (g *GoBGP) dropSilentClient(ctx context.Context, addr netip.Addr) {
	g.mu.Lock()
	n, ok := g.neighbors[addr]
	g.mu.Unlock()
	if !ok || !n.RRClient || n.BFD == nil {
		return
	}
	wait := time.Second
	if s, ok := g.cfg.BFD.Session(bfdKey(n)); ok {
		wait += s.Status().DetectTime
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	g.mu.Lock()
	disabled := g.bfdDown[addr]
	g.mu.Unlock()
	s, ok := g.cfg.BFD.Session(bfdKey(n))
	if disabled || !ok || s.Status().State != bfd.Up || g.clients.established(addr) {
		return
	}
	g.log.Warn("session to a switch lost while BFD still sees it; dropping its stale records", "neighbor", addr)
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
		g.log.Error("dropping a silent switch: removing neighbor", "neighbor", addr, "err", err)
		return
	}
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: g.apiPeer(n)}); err != nil {
		g.log.Error("dropping a silent switch: adding neighbor back", "neighbor", addr, "err", err)
	}
}
