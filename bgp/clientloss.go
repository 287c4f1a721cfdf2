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
//
// Only a loss BFD says nothing about is such a partition: BFD Up when the
// session ended and no BFD change since. A switch that stops on purpose
// signals AdminDown (graceful restart keeps its records, as it should); a
// killed or cut-off one takes BFD down within the wait (onBFD acts); and
// one that BFD lost and found again while its session reconnects is not
// reset a second time (found by the soak: a machine stall took BFD down
// and up, and the reconnecting sessions were deleted again).
type clientLoss struct {
	mu  sync.Mutex
	est map[netip.Addr]bool // clients whose session is established
	// bfd counts each client's BFD state changes (onBFD).
	bfd map[netip.Addr]uint64
}

// lost records a session state change and reports whether it ends an
// established session, with the client's BFD change count at that moment.
func (c *clientLoss) lost(ev NeighborEvent) (bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.est == nil {
		c.est, c.bfd = map[netip.Addr]bool{}, map[netip.Addr]uint64{}
	}
	was := c.est[ev.Address]
	c.est[ev.Address] = ev.State == StateEstablished
	return was && ev.State != StateEstablished, c.bfd[ev.Address]
}

// bfdChanged counts a BFD state change towards a.
func (c *clientLoss) bfdChanged(a netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bfd == nil {
		c.est, c.bfd = map[netip.Addr]bool{}, map[netip.Addr]uint64{}
	}
	c.bfd[a]++
}

// bfdSince reports whether a's BFD changed since its count was n.
func (c *clientLoss) bfdSince(a netip.Addr, n uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bfd[a] != n
}

func (c *clientLoss) established(a netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.est[a]
}

// watchClientLoss follows the switches' sessions on a reflector with BFD.
func (g *GoBGP) watchClientLoss() error {
	return g.watchPeers(g.watches.lifetime(), func(ev NeighborEvent) {
		lost, bfdCount := g.clients.lost(ev)
		if !lost {
			return
		}
		ctx, cancel := g.watches.context(context.Background())
		g.watches.goWatch(ctx, cancel, func(ctx context.Context) { g.dropSilentClient(ctx, ev.Address, bfdCount) })
	})
}

// dropSilentClient waits BFD's detection time (plus a second) after a
// switch's session ended and drops the switch's records if the session is
// still down while BFD stayed up all along (no change since its count was
// bfdCount).
func (g *GoBGP) dropSilentClient(ctx context.Context, addr netip.Addr, bfdCount uint64) {
	g.mu.Lock()
	n, ok := g.neighbors[addr]
	g.mu.Unlock()
	if !ok || !n.RRClient || n.BFD == nil {
		return
	}
	s, ok := g.cfg.BFD.Session(bfdKey(n))
	if !ok || s.Status().State != bfd.Up {
		return // BFD already says what happened
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Second + s.Status().DetectTime):
	}
	g.mu.Lock()
	disabled := g.bfdDown[addr]
	g.mu.Unlock()
	s, ok = g.cfg.BFD.Session(bfdKey(n))
	if disabled || !ok || s.Status().State != bfd.Up || g.clients.bfdSince(addr, bfdCount) || g.clients.established(addr) {
		return
	}
	g.log.Warn("session to a switch lost while BFD still sees it; dropping its stale records", "neighbor", addr)
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
		g.log.Error("dropping a silent switch: removing neighbor", "neighbor", addr, "err", err)
		return
	}
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: g.apiPeer(ctx, n)}); err != nil {
		g.log.Error("dropping a silent switch: adding neighbor back", "neighbor", addr, "err", err)
	}
}
