package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/internal/echoprobe"
	"github.com/openinof/inof/internal/ratelimit"
)

// bfdWatch follows the neighbors' BFD sessions (watchBFD) and acts on
// their changes (onBFD): a reflector confirms a switch's BFD down before
// it declares the switch gone, and dampens a flapping switch
// (bfdconfirm.go); a client confirms a BFD down towards a reflector
// before it drops the reflector (reflectorconfirm.go). Its state is
// confirm's; BFD changes, the holds' deadlines and the probes' results
// reach it on the watch's goroutine, and the probes run on their own.
type bfdWatch struct {
	confirm *confirmState
	role    SpeakerRole
	bfds    *bfd.Manager
	// The speaker's parts it reads and acts through: the configured
	// neighbors, the restart tracking (a BFD Up's discriminator), a
	// reflector's switches' sessions, a client's lost reflectors and
	// prompt reconnects, a neighbor's GoBGP configuration, GoBGP.
	neighbors  *neighborTable
	restarts   *restarts
	clients    *clientLoss
	loss       *reflectorLoss
	reconnects *reconnects
	conf       *peerConfig
	gobgp      func() peerAPI
	log        *slog.Logger
	// probeLog: a probe that cannot be made fails the same way at every
	// BFD change (no CAP_NET_RAW); said once a minute.
	probeLog                                  *ratelimit.Log
	bfdConfirmed, bfdUnconfirmed, bfdDampened atomic.Uint64
}

// watchBFD hands every BFD state change to onBFD, one at a time, until the
// speaker stops; on a reflector it also runs out the holds of switches'
// BFD downs and their hold-downs (bfdconfirm.go).
func (b *bfdWatch) watchBFD(ctx context.Context) {
	sub := b.bfds.Subscribe()
	defer sub.Cancel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		var timerC <-chan time.Time
		if at, ok := b.confirm.next(); ok {
			timer.Reset(time.Until(at))
			timerC = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case ch, ok := <-sub.C:
			if !ok {
				return
			}
			b.onBFD(ch)
		case <-b.confirm.wake:
		case now := <-timerC:
			b.confirmDue(now)
		case req := <-b.confirm.probes:
			go b.probe(ctx, req)
		case res := <-b.confirm.probed:
			b.onProbe(res, time.Now())
		}
	}
}

// baselineProbe is how long the probe made when a switch's BFD comes up
// waits for an answer.
const baselineProbe = time.Second

// probe runs one echo probe (and its control's, at once) and hands the
// result to watchBFD.
func (b *bfdWatch) probe(ctx context.Context, req probeRequest) {
	control := make(chan bool, 1)
	if req.hasControl {
		go func() {
			r, err := b.confirm.cfg.probe(ctx, echoprobe.Options{Local: req.control.LocalAddress, Peer: req.control.Address,
				Timeout: req.timeout})
			control <- err == nil && r == echoprobe.Answered
		}()
	} else {
		control <- false
	}
	r, err := b.confirm.cfg.probe(ctx, echoprobe.Options{Local: req.n.LocalAddress, Peer: req.n.Address, Timeout: req.timeout})
	select {
	case b.confirm.probed <- probeResult{probeRequest: req, result: r, err: err, controlAnswered: <-control}:
	case <-ctx.Done():
	}
}

// witnesses looks at the reflector's other switches with BFD, seen from
// switch a's down: whether there are any (others), whether any of them
// has BFD up (hears: the reflector still hears its fabric), and one that
// can serve as the control of a's probe (BFD up, answered echo before,
// no down of its own pending). The caller holds b.confirm.mu.
func (b *bfdWatch) witnesses(a netip.Addr) (control Neighbor, hasControl, others, hears bool) {
	var ns []Neighbor
	for _, n := range b.neighbors.all() {
		if n.Address != a && n.RRClient && n.BFD != nil {
			ns = append(ns, n)
		}
	}
	c := b.confirm
	for _, n := range ns {
		others = true
		s, ok := b.bfds.Session(bfdKey(n))
		if !ok || s.Status().State != bfd.Up {
			continue
		}
		hears = true
		if _, pending := c.pending[n.Address]; !hasControl && c.answers[n.Address] && !pending {
			control, hasControl = n, true
		}
	}
	return control, hasControl, others, hears
}

// onProbe applies a probe's result: a switch that answered when its BFD
// came up is one whose later silence counts; a pending down whose switch
// is silent is confirmed at once.
func (b *bfdWatch) onProbe(res probeResult, now time.Time) {
	a := res.n.Address
	c := b.confirm
	c.mu.Lock()
	answered := res.err == nil && res.result == echoprobe.Answered
	client := b.role == RoleClient
	if res.down.until.IsZero() {
		c.answers[a] = answered
		c.mu.Unlock()
		wait := "its BFD downs wait out their hold"
		if client {
			wait = "a BFD down towards it drops it at once"
		}
		if res.err != nil {
			b.probeLog.Warn(b.log, "BFD: could not probe the neighbor; "+wait, "neighbor", a, "err", res.err)
		} else if !answered {
			b.log.Info("BFD: the neighbor does not answer echo requests; "+wait, "neighbor", a)
		}
		return
	}
	// A reflector's silence is evidence; a switch goes on without a
	// reflector whose kernel does not answer for any reason.
	evidence := res.err == nil && res.result == echoprobe.Silent && (!res.hasControl || res.controlAnswered)
	if client {
		evidence = !answered
	}
	p, pending := c.pending[a]
	confirmed := pending && p.until.Equal(res.down.until) && evidence
	if confirmed {
		delete(c.pending, a)
	}
	c.mu.Unlock()
	switch {
	case confirmed:
		if s, ok := b.bfds.Session(bfdKey(p.n)); ok && s.Status().State == bfd.Up {
			return // back: its Up is on its way to onBFD, which counts it unconfirmed
		}
		if res.err != nil {
			b.probeLog.Warn(b.log, "BFD down confirmed: could not probe the neighbor", "neighbor", a, "err", res.err)
		} else {
			b.log.Warn("BFD down confirmed: the neighbor does not answer echo requests", "neighbor", a, "probe", res.timeout)
		}
		b.confirmedDown(p, now)
	case res.err != nil && !client:
		b.probeLog.Warn(b.log, "BFD down: could not probe the neighbor; waiting out the hold", "neighbor", a, "err", res.err)
	case pending && !answered && res.hasControl:
		b.log.Warn("BFD down: the switch is silent, and so is the control switch asked beside it: this reflector may be the one cut off; waiting out the hold",
			"neighbor", a, "control", res.control.Address, "hold", p.hold)
	case pending && answered && client:
		// Asked again at every hold (askAgain): said once a minute.
		b.probeLog.Info(b.log, "BFD down: the reflector's kernel answers echo requests; session kept, asking again every hold", "neighbor", a,
			"hold", p.hold)
	case pending && answered:
		b.log.Info("BFD down: the neighbor's kernel answers echo requests; waiting for BFD within the hold", "neighbor", a,
			"hold", p.hold)
	}
}

// confirmedDown acts on a confirmed BFD down: a reflector declares the
// switch gone, a switch drops the reflector.
func (b *bfdWatch) confirmedDown(p pendingDown, now time.Time) {
	if b.role == RoleClient {
		b.dropReflectorAfterBFD(p.n.Address, now)
		return
	}
	b.declareGone(p.n, p.diag, now)
}

// confirmDue declares gone the switches whose hold ran out with BFD still
// down, and enables the sessions whose hold-down ended.
func (b *bfdWatch) confirmDue(now time.Time) {
	var gone []pendingDown
	var enable []netip.Addr
	b.confirm.mu.Lock()
	for a, p := range b.confirm.pending {
		if !now.Before(p.until) {
			delete(b.confirm.pending, a)
			gone = append(gone, p)
		}
	}
	for a, at := range b.confirm.enable {
		if !now.Before(at) {
			delete(b.confirm.enable, a)
			enable = append(enable, a)
		}
	}
	b.confirm.mu.Unlock()
	for _, p := range gone {
		if s, ok := b.bfds.Session(bfdKey(p.n)); ok && s.Status().State == bfd.Up {
			continue // its Up is on its way to onBFD
		}
		if b.role == RoleReflector && b.cutOff(p, now) {
			continue
		}
		if b.role == RoleClient && b.askAgain(p, now) {
			continue
		}
		b.log.Warn("BFD down confirmed: not back within the hold", "neighbor", p.n.Address, "hold", p.hold)
		b.confirmedDown(p, now)
	}
	for _, a := range enable {
		b.enableAfterBFD(a)
	}
}

// askAgain keeps a switch's BFD down towards a reflector pending for
// another hold, and probes the reflector again, when its kernel answered
// the probes so far: a reflector that answers echo is there, its BFD late
// (its CPU) or filtered; the switch keeps the session and leaves a hung
// daemon to the BGP hold timer rather than ending a live session (and
// then waiting for the reflector to take it back). The next silent probe
// drops it. It reports whether it kept the down.
func (b *bfdWatch) askAgain(p pendingDown, now time.Time) bool {
	c := b.confirm
	c.mu.Lock()
	_, taken := c.pending[p.n.Address]
	keep := !taken && c.answers[p.n.Address]
	if keep {
		p.until = now.Add(p.hold)
		if keep = c.requestProbe(probeRequest{n: p.n, timeout: c.cfg.probeTimeout(b.detectTime(p.n)), down: p}); keep {
			c.pending[p.n.Address] = p
		}
	}
	c.mu.Unlock()
	if keep {
		c.poke()
	}
	return keep
}

// cutOff keeps a switch's down pending for another hold when the
// reflector hears none of its other switches with BFD: every session down
// at once is the reflector cut off (its uplink), not its whole fabric gone
// (and were it gone, no host would be left to tell). It reports whether
// it kept the down; a lone switch is never kept.
func (b *bfdWatch) cutOff(p pendingDown, now time.Time) bool {
	c := b.confirm
	c.mu.Lock()
	_, _, others, hears := b.witnesses(p.n.Address)
	_, taken := c.pending[p.n.Address]
	keep := others && !hears && !taken
	if keep {
		p.until = now.Add(p.hold)
		c.pending[p.n.Address] = p
	}
	c.mu.Unlock()
	if keep {
		c.poke()
		b.probeLog.Warn(b.log, "BFD down towards every switch: this reflector seems cut off; confirming no switch gone until it hears one again",
			"neighbor", p.n.Address, "hold", p.hold)
	}
	return keep
}

// detectTime is the detection time of neighbor n's BFD session, as the
// session last agreed it.
func (b *bfdWatch) detectTime(n Neighbor) time.Duration {
	detect := time.Duration(n.BFD.DetectMult) * max(n.BFD.DesiredMinTx, n.BFD.RequiredMinRx)
	if s, ok := b.bfds.Session(bfdKey(n)); ok && s.Status().DetectTime > 0 {
		detect = s.Status().DetectTime
	}
	return detect
}

// onBFD applies the asymmetry of docs/design.md §3. On a reflector, a client whose
// BFD session goes from Up to Down is gone once confirmed (bfdconfirm.go):
// its BGP session is shut down (its records are withdrawn everywhere) and
// kept down until BFD is Up again, and then for its hold-down if it flaps.
// On a client, BFD Down towards a reflector, unless its kernel still
// answers echo (onReflectorBFD), drops that reflector's routes when another
// reflector serves (reflectorloss.go); otherwise they stay, as graceful
// restart keeps them if the TCP session dies.
func (b *bfdWatch) onBFD(ch bfd.StateChange) {
	b.clients.bfdChanged(ch.Key.Peer)
	a, now := ch.Key.Peer, time.Now()
	n, ok, disabled := b.neighbors.lookup(a)
	ok = ok && n.BFD != nil && bfdKey(n) == ch.Key
	if !ok {
		return
	}
	down := ch.Old == bfd.Up && ch.New != bfd.Up
	if ch.New == bfd.Up {
		b.restarts.noteBFDUp(a, ch.Key)
	}
	switch {
	case b.role == RoleClient:
		b.onReflectorBFD(n, ch, down, now)
		return
	case !n.RRClient:
		if down {
			b.log.Warn("BFD down towards neighbor", "neighbor", a, "diag", ch.Diag.String())
		}
		return
	}
	c := b.confirm
	c.mu.Lock()
	defer c.poke()
	_, pending := c.pending[a]
	if ch.New == bfd.Up {
		// Does its kernel answer echo? Only then does its silence after a
		// BFD down confirm anything. The wait is long: a slow answer here
		// only leaves the switch unprobed.
		c.requestProbe(probeRequest{n: n, timeout: baselineProbe})
	}
	switch {
	case down && ch.PeerAdminDown:
		// The switch stopped its BFD on purpose (its daemon is stopping or
		// restarting): not a failure (RFC 5882 §3.2). Its BGP session
		// decides, with graceful restart.
		delete(c.pending, a)
		c.mu.Unlock()
		b.log.Info("BFD: neighbor signalled AdminDown; leaving its session to BGP", "neighbor", a)
	case down && disabled:
		// Back and lost again during its hold-down: it stays down.
		delete(c.enable, a)
		c.mu.Unlock()
		b.log.Warn("BFD down again during the switch's hold-down", "neighbor", a, "diag", ch.Diag.String())
	case down && !c.cfg.Disabled && !b.clients.lostBefore(a, now.Add(-b.detectTime(n)/3)):
		// Confirmed at once only by a session that ended well before BFD
		// went down: a killed daemon's connection closes at once and its
		// BFD falls silent a detection time later ((mult-1) intervals at
		// least). A switch that lost BFD itself ends its session on purpose
		// (reflectorloss.go, dropLost) within about an interval of our BFD
		// down: that confirms nothing.
		detect := b.detectTime(n)
		hold := c.cfg.hold(detect, c.recent(a, now).unconfirmed)
		p := pendingDown{n: n, diag: ch.Diag.String(), hold: hold, until: now.Add(hold)}
		c.pending[a] = p
		control, hasControl, others, _ := b.witnesses(a)
		// With other switches, silence confirms only beside a control
		// that answers; a lone switch's silence confirms by itself.
		probing := c.answers[a] && (hasControl || !others) &&
			c.requestProbe(probeRequest{n: n, timeout: c.cfg.probeTimeout(detect), down: p, control: control, hasControl: hasControl})
		c.mu.Unlock()
		b.log.Warn("BFD down; confirming before the switch is declared gone",
			"neighbor", a, "diag", ch.Diag.String(), "hold", hold, "probing", probing)
	case down:
		c.mu.Unlock()
		b.declareGone(n, ch.Diag.String(), now)
	case ch.New == bfd.Up && pending:
		delete(c.pending, a)
		f := c.down(a, false, now)
		c.mu.Unlock()
		b.bfdUnconfirmed.Add(1)
		b.log.Warn("BFD down not confirmed: back within the hold; nothing withdrawn", "neighbor", a,
			"unconfirmed_recently", f.unconfirmed, "unconfirmed_total", b.bfdUnconfirmed.Load())
	case ch.New == bfd.Up && disabled:
		f := c.recent(a, now)
		d := c.cfg.holdDown(f.confirmed)
		if d > 0 {
			c.enable[a] = now.Add(d)
		}
		c.mu.Unlock()
		if d > 0 {
			b.bfdDampened.Add(1)
			b.log.Warn("BFD up again; switch flapping, session held down", "neighbor", a,
				"hold_down", d, "confirmed_recently", f.confirmed, "dampened_total", b.bfdDampened.Load())
			return
		}
		b.enableAfterBFD(a)
	default:
		c.mu.Unlock()
	}
}

// enableAfterBFD lets a switch that BFD found again connect.
func (b *bfdWatch) enableAfterBFD(a netip.Addr) {
	b.neighbors.bringUp(a)
	b.log.Info("BFD up again; enabling neighbor", "neighbor", a)
	if err := b.gobgp().EnablePeer(context.Background(), &api.EnablePeerRequest{Address: a.String()}); err != nil {
		b.log.Error("enabling neighbor after BFD up", "neighbor", a, "err", err)
	}
}

// declareGone shuts the session of a switch whose BFD down is confirmed:
// its records are withdrawn at once and it stays down until BFD is Up.
func (b *bfdWatch) declareGone(n Neighbor, diag string, now time.Time) {
	a := n.Address
	if !b.neighbors.takeDown(a) {
		return
	}
	b.confirm.mu.Lock()
	f := b.confirm.down(a, true, now)
	b.confirm.mu.Unlock()
	b.bfdConfirmed.Add(1)
	ctx := context.Background()
	b.log.Warn("BFD down: switch gone, shutting its session", "neighbor", a, "diag", diag,
		"confirmed_recently", f.confirmed, "confirmed_total", b.bfdConfirmed.Load())
	// End the connection before GoBGP can say goodbye with a Hard Reset,
	// which a switch that was only cut off would obey when its link came
	// back (sessionclose.go).
	if _, err := shutdownSessions(n.LocalAddress, a); err != nil {
		b.log.Warn("BFD down: could not shut the session's socket; the switch may get a Hard Reset", "neighbor", a, "err", err)
	}
	// The switch's TCP session may have died first (a killed process): the
	// session is then in graceful restart and GoBGP keeps its records stale
	// for the restart time, which shutting the idle session does not end.
	// Deleting the neighbor does: its records, stale or not, are withdrawn
	// at once. It is added again born disabled (AdminDown in its
	// configuration, not a DisablePeer request: GoBGP would still show it
	// enabled until the queued request lands, and drop an enable sent
	// meanwhile) until BFD is back.
	if err := b.gobgp().DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
		b.log.Error("removing neighbor after BFD down", "neighbor", a, "err", err)
		return
	}
	p := b.conf.apiPeer(ctx, n)
	p.Conf.AdminDown = true
	if err := b.gobgp().AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
		b.log.Error("adding neighbor back after BFD down", "neighbor", a, "err", err)
		return
	}
}
