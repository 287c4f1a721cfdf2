package bgp

import (
	"net/netip"
	"time"

	"github.com/openinof/inof/bgp/bfd"
)

// onReflectorBFD applies, on a client, a BFD change towards reflector n.
//
// A BFD down towards a reflector used to drop it at once (its routes, or
// its session when no other reflector serves: reflectorloss.go). On a
// busy box a live reflector's BFD goes down too (its packets, or ours,
// late by a detection time), and the switch then threw away a healthy
// session. The reflector's kernel is the witness, as it is for the
// reflector's confirmation of a switch's down (bfdconfirm.go, with the
// same BFDConfirm): when BFD comes up the client asks whether the
// reflector answers ICMP echo; at a down it asks again with a short probe
// (a tenth of the detection time, 5–50 ms). An answer holds the drop for
// the hold (BFDConfirm.hold: the detection time, doubling with recent
// unconfirmed downs) and BFD back within it cancels it (counted
// unconfirmed); silence, a probe that cannot be made, a reflector that
// never answered echo, or confirmation off drop at once as before. The
// BGP session's hold timer still ends a session whose reflector is really
// gone (reflectorLoss.sessionChanged).
func (b *bfdWatch) onReflectorBFD(n Neighbor, ch bfd.StateChange, down bool, now time.Time) {
	a := n.Address
	c := b.confirm
	c.mu.Lock()
	defer c.poke()
	if ch.New == bfd.Up {
		c.requestProbe(probeRequest{n: n, timeout: baselineProbe})
		_, pending := c.pending[a]
		delete(c.pending, a)
		var f flaps
		if pending {
			f = c.down(a, false, now)
		}
		c.mu.Unlock()
		if pending {
			b.bfdUnconfirmed.Add(1)
			b.log.Warn("BFD down towards reflector not confirmed: back within the hold; session and routes kept", "neighbor", a,
				"unconfirmed_recently", f.unconfirmed, "unconfirmed_total", b.bfdUnconfirmed.Load())
		}
		// The reflector is reachable again: a session that ended
		// meanwhile need not wait out GoBGP's idle hold.
		b.reconnects.goReconnect(a, "BFD up")
		return
	}
	if !down {
		c.mu.Unlock()
		return
	}
	if ch.PeerAdminDown {
		// The reflector stopped its BFD on purpose (RFC 5882 §3.2): its BGP
		// session decides, with graceful restart.
		delete(c.pending, a)
		c.mu.Unlock()
		b.log.Info("BFD: reflector signalled AdminDown; leaving its session to BGP", "neighbor", a)
		return
	}
	held := false
	var p pendingDown
	if !c.cfg.Disabled && c.answers[a] {
		detect := b.detectTime(n)
		hold := c.cfg.hold(detect, c.recent(a, now).unconfirmed)
		p = pendingDown{n: n, diag: ch.Diag.String(), hold: hold, until: now.Add(hold)}
		if held = c.requestProbe(probeRequest{n: n, timeout: c.cfg.probeTimeout(detect), down: p}); held {
			c.pending[a] = p
		}
	}
	c.mu.Unlock()
	if held {
		b.log.Warn("BFD down towards reflector; asking its kernel before dropping it", "neighbor", a,
			"diag", ch.Diag.String(), "hold", p.hold)
		return
	}
	b.log.Warn("BFD down towards neighbor", "neighbor", a, "diag", ch.Diag.String())
	b.dropReflectorAfterBFD(a, now)
}

// dropReflectorAfterBFD drops reflector a after a confirmed BFD down
// (goDropLost), counted confirmed.
func (b *bfdWatch) dropReflectorAfterBFD(a netip.Addr, now time.Time) {
	b.confirm.mu.Lock()
	b.confirm.down(a, true, now)
	b.confirm.mu.Unlock()
	b.bfdConfirmed.Add(1)
	if b.loss.bfdDown(a) {
		b.loss.goDropLost(a, whyBFD)
	}
}
