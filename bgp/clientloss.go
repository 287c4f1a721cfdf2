package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

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
// the switch's records are demoted (policy.go, the silent set): imported
// again with a lower LOCAL_PREF, they lose to another reflector's
// identical copies at every other switch, without a withdraw, and still
// serve where no other copy is left — the other reflector down too, or cut
// from the switch as well. (Deleting the neighbor instead, as before,
// withdrew them: with the other reflector's uplink down too, every other
// switch told its hosts the switch's targets were gone, reason 7; soak
// seed 2359243392859386603 step 18.) When the session is back the
// records are promoted again; graceful restart's timer still ends them.
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
	// lostAt is when each client's established session last ended.
	lostAt map[netip.Addr]time.Time
	// bfd counts each client's BFD state changes (onBFD).
	bfd map[netip.Addr]uint64
	// demoted are the clients in the silent set.
	demoted map[netip.Addr]bool

	// What it acts with (its state works from the zero value): the
	// configured neighbors, their BFD sessions, the speaker's watches (its
	// goroutines end with the speaker), the silent set (policies).
	neighbors *neighborTable
	bfds      *bfd.Manager
	watches   *watchGroup
	policies  *policies
	log       *slog.Logger
}

func (c *clientLoss) init() {
	if c.est == nil {
		c.est, c.bfd, c.demoted = map[netip.Addr]bool{}, map[netip.Addr]uint64{}, map[netip.Addr]bool{}
		c.lostAt = map[netip.Addr]time.Time{}
	}
}

// lost records a session state change and reports whether it ends an
// established session, with the client's BFD change count at that moment.
func (c *clientLoss) lost(ev NeighborEvent) (bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	was := c.est[ev.Address]
	c.est[ev.Address] = ev.State == StateEstablished
	if was && ev.State != StateEstablished {
		c.lostAt[ev.Address] = time.Now()
	}
	return was && ev.State != StateEstablished, c.bfd[ev.Address]
}

// lostBefore reports whether a's session is down and ended before t.
func (c *clientLoss) lostBefore(a netip.Addr, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.lostAt[a]
	return ok && !c.est[a] && at.Before(t)
}

// setDemoted records whether a is in the silent set and reports whether
// that changed.
func (c *clientLoss) setDemoted(a netip.Addr, on bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if c.demoted[a] == on {
		return false
	}
	if on {
		c.demoted[a] = true
	} else {
		delete(c.demoted, a)
	}
	return true
}

// bfdChanged counts a BFD state change towards a.
func (c *clientLoss) bfdChanged(a netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
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

// sessionChanged follows the switches' sessions on a reflector with BFD
// (GoBGP's watcher goroutine: it starts what acts on its own).
func (c *clientLoss) sessionChanged(ev NeighborEvent) {
	lost, bfdCount := c.lost(ev)
	switch {
	case lost:
		ctx, cancel := c.watches.context(context.Background())
		c.watches.goWatch(ctx, cancel, func(ctx context.Context) { c.demoteSilentClient(ctx, ev.Address, bfdCount) })
	case ev.State == StateEstablished && c.setDemoted(ev.Address, false):
		ctx, cancel := c.watches.context(context.Background())
		c.watches.goWatch(ctx, cancel, func(ctx context.Context) {
			c.log.Info("session to a silent switch back; its records no longer demoted", "neighbor", ev.Address)
			if err := c.policies.demoteClient(ctx, ev.Address, false); err != nil {
				c.log.Error("promoting a switch's records again", "neighbor", ev.Address, "err", err)
			}
		})
	}
}

// demoteSilentClient waits BFD's detection time (plus a second) after a
// switch's session ended and demotes the switch's records if the session
// is still down while BFD stayed up all along (no change since its count
// was bfdCount).
func (c *clientLoss) demoteSilentClient(ctx context.Context, addr netip.Addr, bfdCount uint64) {
	n, ok := c.neighbors.get(addr)
	if !ok || !n.RRClient || n.BFD == nil {
		return
	}
	s, ok := c.bfds.Session(bfdKey(n))
	if !ok || s.Status().State != bfd.Up {
		return // BFD already says what happened
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Second + s.Status().DetectTime):
	}
	disabled := c.neighbors.down(addr)
	s, ok = c.bfds.Session(bfdKey(n))
	if disabled || !ok || s.Status().State != bfd.Up || c.bfdSince(addr, bfdCount) || c.established(addr) {
		return
	}
	if !c.setDemoted(addr, true) {
		return
	}
	c.log.Warn("session to a switch lost while BFD still sees it; its stale records now lose to other reflectors' copies", "neighbor", addr)
	if err := c.policies.demoteClient(ctx, addr, true); err != nil {
		c.setDemoted(addr, false)
		c.log.Error("demoting a silent switch's records", "neighbor", addr, "err", err)
		return
	}
	// Back meanwhile: the promotion may have run before the set had it.
	if c.established(addr) && c.setDemoted(addr, false) {
		if err := c.policies.demoteClient(ctx, addr, false); err != nil {
			c.log.Error("promoting a switch's records again", "neighbor", addr, "err", err)
		}
	}
}
