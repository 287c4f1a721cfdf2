package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/internal/echoprobe"
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

// watchBFD hands every BFD state change to onBFD, one at a time, until the
// speaker stops; on a reflector it also runs out the holds of switches'
// BFD downs and their hold-downs (bfdconfirm.go).
func (g *GoBGP) watchBFD(ctx context.Context) {
	sub := g.cfg.BFD.Subscribe()
	defer sub.Cancel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		timer.Stop()
		var timerC <-chan time.Time
		if at, ok := g.confirm.next(); ok {
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
			g.onBFD(ch)
		case <-g.confirm.wake:
		case now := <-timerC:
			g.confirmDue(now)
		case req := <-g.confirm.probes:
			go g.probe(ctx, req)
		case res := <-g.confirm.probed:
			g.onProbe(res, time.Now())
		}
	}
}

// baselineProbe is how long the probe made when a switch's BFD comes up
// waits for an answer.
const baselineProbe = time.Second

// probe runs one echo probe (and its control's, at once) and hands the
// result to watchBFD.
func (g *GoBGP) probe(ctx context.Context, req probeRequest) {
	control := make(chan bool, 1)
	if req.hasControl {
		go func() {
			r, err := g.confirm.cfg.probe(ctx, echoprobe.Options{Local: req.control.LocalAddress, Peer: req.control.Address,
				Timeout: req.timeout})
			control <- err == nil && r == echoprobe.Answered
		}()
	} else {
		control <- false
	}
	r, err := g.confirm.cfg.probe(ctx, echoprobe.Options{Local: req.n.LocalAddress, Peer: req.n.Address, Timeout: req.timeout})
	select {
	case g.confirm.probed <- probeResult{probeRequest: req, result: r, err: err, controlAnswered: <-control}:
	case <-ctx.Done():
	}
}

// witnesses looks at the reflector's other switches with BFD, seen from
// switch a's down: whether there are any (others), whether any of them
// has BFD up (hears: the reflector still hears its fabric), and one that
// can serve as the control of a's probe (BFD up, answered echo before,
// no down of its own pending). The caller holds g.confirm.mu.
func (g *GoBGP) witnesses(a netip.Addr) (control Neighbor, hasControl, others, hears bool) {
	var ns []Neighbor
	for _, n := range g.neighbors.all() {
		if n.Address != a && n.RRClient && n.BFD != nil {
			ns = append(ns, n)
		}
	}
	c := g.confirm
	for _, n := range ns {
		others = true
		s, ok := g.cfg.BFD.Session(bfdKey(n))
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
func (g *GoBGP) onProbe(res probeResult, now time.Time) {
	a := res.n.Address
	c := g.confirm
	c.mu.Lock()
	answered := res.err == nil && res.result == echoprobe.Answered
	client := g.cfg.Role == RoleClient
	if res.down.until.IsZero() {
		c.answers[a] = answered
		c.mu.Unlock()
		wait := "its BFD downs wait out their hold"
		if client {
			wait = "a BFD down towards it drops it at once"
		}
		if res.err != nil {
			g.probeLog.Warn(g.log, "BFD: could not probe the neighbor; "+wait, "neighbor", a, "err", res.err)
		} else if !answered {
			g.log.Info("BFD: the neighbor does not answer echo requests; "+wait, "neighbor", a)
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
		if s, ok := g.cfg.BFD.Session(bfdKey(p.n)); ok && s.Status().State == bfd.Up {
			return // back: its Up is on its way to onBFD, which counts it unconfirmed
		}
		if res.err != nil {
			g.probeLog.Warn(g.log, "BFD down confirmed: could not probe the neighbor", "neighbor", a, "err", res.err)
		} else {
			g.log.Warn("BFD down confirmed: the neighbor does not answer echo requests", "neighbor", a, "probe", res.timeout)
		}
		g.confirmedDown(p, now)
	case res.err != nil && !client:
		g.probeLog.Warn(g.log, "BFD down: could not probe the neighbor; waiting out the hold", "neighbor", a, "err", res.err)
	case pending && !answered && res.hasControl:
		g.log.Warn("BFD down: the switch is silent, and so is the control switch asked beside it: this reflector may be the one cut off; waiting out the hold",
			"neighbor", a, "control", res.control.Address, "hold", p.hold)
	case pending && answered && client:
		// Asked again at every hold (askAgain): said once a minute.
		g.probeLog.Info(g.log, "BFD down: the reflector's kernel answers echo requests; session kept, asking again every hold", "neighbor", a,
			"hold", p.hold)
	case pending && answered:
		g.log.Info("BFD down: the neighbor's kernel answers echo requests; waiting for BFD within the hold", "neighbor", a,
			"hold", p.hold)
	}
}

// confirmedDown acts on a confirmed BFD down: a reflector declares the
// switch gone, a switch drops the reflector.
func (g *GoBGP) confirmedDown(p pendingDown, now time.Time) {
	if g.cfg.Role == RoleClient {
		g.dropReflectorAfterBFD(p.n.Address, now)
		return
	}
	g.declareGone(p.n, p.diag, now)
}

// confirmDue declares gone the switches whose hold ran out with BFD still
// down, and enables the sessions whose hold-down ended.
func (g *GoBGP) confirmDue(now time.Time) {
	var gone []pendingDown
	var enable []netip.Addr
	g.confirm.mu.Lock()
	for a, p := range g.confirm.pending {
		if !now.Before(p.until) {
			delete(g.confirm.pending, a)
			gone = append(gone, p)
		}
	}
	for a, at := range g.confirm.enable {
		if !now.Before(at) {
			delete(g.confirm.enable, a)
			enable = append(enable, a)
		}
	}
	g.confirm.mu.Unlock()
	for _, p := range gone {
		if s, ok := g.cfg.BFD.Session(bfdKey(p.n)); ok && s.Status().State == bfd.Up {
			continue // its Up is on its way to onBFD
		}
		if g.cfg.Role == RoleReflector && g.cutOff(p, now) {
			continue
		}
		if g.cfg.Role == RoleClient && g.askAgain(p, now) {
			continue
		}
		g.log.Warn("BFD down confirmed: not back within the hold", "neighbor", p.n.Address, "hold", p.hold)
		g.confirmedDown(p, now)
	}
	for _, a := range enable {
		g.enableAfterBFD(a)
	}
}

// askAgain keeps a switch's BFD down towards a reflector pending for
// another hold, and probes the reflector again, when its kernel answered
// the probes so far: a reflector that answers echo is there, its BFD late
// (its CPU) or filtered; the switch keeps the session and leaves a hung
// daemon to the BGP hold timer rather than ending a live session (and
// then waiting for the reflector to take it back). The next silent probe
// drops it. It reports whether it kept the down.
func (g *GoBGP) askAgain(p pendingDown, now time.Time) bool {
	c := g.confirm
	c.mu.Lock()
	_, taken := c.pending[p.n.Address]
	keep := !taken && c.answers[p.n.Address]
	if keep {
		p.until = now.Add(p.hold)
		if keep = c.requestProbe(probeRequest{n: p.n, timeout: c.cfg.probeTimeout(g.detectTime(p.n)), down: p}); keep {
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
func (g *GoBGP) cutOff(p pendingDown, now time.Time) bool {
	c := g.confirm
	c.mu.Lock()
	_, _, others, hears := g.witnesses(p.n.Address)
	_, taken := c.pending[p.n.Address]
	keep := others && !hears && !taken
	if keep {
		p.until = now.Add(p.hold)
		c.pending[p.n.Address] = p
	}
	c.mu.Unlock()
	if keep {
		c.poke()
		g.probeLog.Warn(g.log, "BFD down towards every switch: this reflector seems cut off; confirming no switch gone until it hears one again",
			"neighbor", p.n.Address, "hold", p.hold)
	}
	return keep
}

// detectTime is the detection time of neighbor n's BFD session, as the
// session last agreed it.
func (g *GoBGP) detectTime(n Neighbor) time.Duration {
	detect := time.Duration(n.BFD.DetectMult) * max(n.BFD.DesiredMinTx, n.BFD.RequiredMinRx)
	if s, ok := g.cfg.BFD.Session(bfdKey(n)); ok && s.Status().DetectTime > 0 {
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
func (g *GoBGP) onBFD(ch bfd.StateChange) {
	g.clients.bfdChanged(ch.Key.Peer)
	a, now := ch.Key.Peer, time.Now()
	n, ok, disabled := g.neighbors.lookup(a)
	ok = ok && n.BFD != nil && bfdKey(n) == ch.Key
	if !ok {
		return
	}
	down := ch.Old == bfd.Up && ch.New != bfd.Up
	if ch.New == bfd.Up {
		g.restarts.noteBFDUp(a, ch.Key)
	}
	switch {
	case g.cfg.Role == RoleClient:
		g.onReflectorBFD(n, ch, down, now)
		return
	case !n.RRClient:
		if down {
			g.log.Warn("BFD down towards neighbor", "neighbor", a, "diag", ch.Diag.String())
		}
		return
	}
	c := g.confirm
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
		g.log.Info("BFD: neighbor signalled AdminDown; leaving its session to BGP", "neighbor", a)
	case down && disabled:
		// Back and lost again during its hold-down: it stays down.
		delete(c.enable, a)
		c.mu.Unlock()
		g.log.Warn("BFD down again during the switch's hold-down", "neighbor", a, "diag", ch.Diag.String())
	case down && !c.cfg.Disabled && !g.clients.lostBefore(a, now.Add(-g.detectTime(n)/3)):
		// Confirmed at once only by a session that ended well before BFD
		// went down: a killed daemon's connection closes at once and its
		// BFD falls silent a detection time later ((mult-1) intervals at
		// least). A switch that lost BFD itself ends its session on purpose
		// (reflectorloss.go, dropLost) within about an interval of our BFD
		// down: that confirms nothing.
		detect := g.detectTime(n)
		hold := c.cfg.hold(detect, c.recent(a, now).unconfirmed)
		p := pendingDown{n: n, diag: ch.Diag.String(), hold: hold, until: now.Add(hold)}
		c.pending[a] = p
		control, hasControl, others, _ := g.witnesses(a)
		// With other switches, silence confirms only beside a control
		// that answers; a lone switch's silence confirms by itself.
		probing := c.answers[a] && (hasControl || !others) &&
			c.requestProbe(probeRequest{n: n, timeout: c.cfg.probeTimeout(detect), down: p, control: control, hasControl: hasControl})
		c.mu.Unlock()
		g.log.Warn("BFD down; confirming before the switch is declared gone",
			"neighbor", a, "diag", ch.Diag.String(), "hold", hold, "probing", probing)
	case down:
		c.mu.Unlock()
		g.declareGone(n, ch.Diag.String(), now)
	case ch.New == bfd.Up && pending:
		delete(c.pending, a)
		f := c.down(a, false, now)
		c.mu.Unlock()
		g.bfdUnconfirmed.Add(1)
		g.log.Warn("BFD down not confirmed: back within the hold; nothing withdrawn", "neighbor", a,
			"unconfirmed_recently", f.unconfirmed, "unconfirmed_total", g.bfdUnconfirmed.Load())
	case ch.New == bfd.Up && disabled:
		f := c.recent(a, now)
		d := c.cfg.holdDown(f.confirmed)
		if d > 0 {
			c.enable[a] = now.Add(d)
		}
		c.mu.Unlock()
		if d > 0 {
			g.bfdDampened.Add(1)
			g.log.Warn("BFD up again; switch flapping, session held down", "neighbor", a,
				"hold_down", d, "confirmed_recently", f.confirmed, "dampened_total", g.bfdDampened.Load())
			return
		}
		g.enableAfterBFD(a)
	default:
		c.mu.Unlock()
	}
}

// enableAfterBFD lets a switch that BFD found again connect.
func (g *GoBGP) enableAfterBFD(a netip.Addr) {
	g.neighbors.bringUp(a)
	g.log.Info("BFD up again; enabling neighbor", "neighbor", a)
	if err := g.srv.EnablePeer(context.Background(), &api.EnablePeerRequest{Address: a.String()}); err != nil {
		g.log.Error("enabling neighbor after BFD up", "neighbor", a, "err", err)
	}
}

// declareGone shuts the session of a switch whose BFD down is confirmed:
// its records are withdrawn at once and it stays down until BFD is Up.
func (g *GoBGP) declareGone(n Neighbor, diag string, now time.Time) {
	a := n.Address
	if !g.neighbors.takeDown(a) {
		return
	}
	g.confirm.mu.Lock()
	f := g.confirm.down(a, true, now)
	g.confirm.mu.Unlock()
	g.bfdConfirmed.Add(1)
	ctx := context.Background()
	g.log.Warn("BFD down: switch gone, shutting its session", "neighbor", a, "diag", diag,
		"confirmed_recently", f.confirmed, "confirmed_total", g.bfdConfirmed.Load())
	// End the connection before GoBGP can say goodbye with a Hard Reset,
	// which a switch that was only cut off would obey when its link came
	// back (sessionclose.go).
	if _, err := shutdownSessions(n.LocalAddress, a); err != nil {
		g.log.Warn("BFD down: could not shut the session's socket; the switch may get a Hard Reset", "neighbor", a, "err", err)
	}
	// The switch's TCP session may have died first (a killed process): the
	// session is then in graceful restart and GoBGP keeps its records stale
	// for the restart time, which shutting the idle session does not end.
	// Deleting the neighbor does: its records, stale or not, are withdrawn
	// at once. It is added again born disabled (AdminDown in its
	// configuration, not a DisablePeer request: GoBGP would still show it
	// enabled until the queued request lands, and drop an enable sent
	// meanwhile) until BFD is back.
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
		g.log.Error("removing neighbor after BFD down", "neighbor", a, "err", err)
		return
	}
	p := g.conf.apiPeer(ctx, n)
	p.Conf.AdminDown = true
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
		g.log.Error("adding neighbor back after BFD down", "neighbor", a, "err", err)
		return
	}
}

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
