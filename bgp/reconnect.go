package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

// A switch reconnects promptly to a reflector whose session ended.
//
// GoBGP v3.37 keeps a session that ended in Idle for its idle hold before
// it connects again, and its first attempt then waits 1–2 s more (its
// connect loop's jitter). A new neighbor's hold is 0, but once it has run
// out GoBGP sets it to 5 s (fsm.go, holdtimeIdle), so every later loss
// waits 5 s: a switch that lost its only reflector session learned of
// nothing in the fabric (a switch dead meanwhile: reason 7 at its hosts)
// for 6–7 s. GoBGP's API sets the hold only through a hard ResetPeer (to
// the neighbor's IdleHoldTimeAfterReset: 1 s, the least it takes, in
// apiPeer), and an Idle session restarts its hold timer only when enabled
// again. So reconnect, for an Idle session, is ResetPeer (its Cease, queued
// towards a session that is not there, is discarded at the next state
// change), then DisablePeer and EnablePeer, each waited for (GoBGP drops an
// admin request sent while another is still queued).
//
// It runs when a session to a reflector ends while no other reflector
// serves (one that does is removed and added back at once, reflectorloss.go,
// a new neighbor with no hold) and when BFD towards a reflector comes up
// with its session Idle. A neighbor gets at most reconnectBurst prompt
// reconnects in reconnectWindow; beyond that a flapping session reconnects
// at GoBGP's pace.

// reconnectBurst and reconnectWindow bound the prompt reconnects of one
// neighbor.
const (
	reconnectBurst  = 2
	reconnectWindow = time.Minute
)

// idleHoldAfterReset is the idle hold, in seconds, GoBGP keeps after a hard
// ResetPeer (the least its API takes).
const idleHoldAfterReset = 1

// reconnects reconnects a client's neighbors promptly (goReconnect) and
// remembers each neighbor's recent prompt reconnects. Its state works
// from the zero value; reconnecting needs GoBGP (gobgp), the speaker's
// watches (the goroutines it starts end with the speaker) and a logger.
type reconnects struct {
	mu sync.Mutex
	at map[netip.Addr][]time.Time

	gobgp   func() peerAPI
	watches *watchGroup
	log     *slog.Logger
}

// allow reports whether a may reconnect promptly at now, and counts it.
func (r *reconnects) allow(a netip.Addr, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[netip.Addr][]time.Time{}
	}
	var recent []time.Time
	for _, t := range r.at[a] {
		if now.Sub(t) < reconnectWindow {
			recent = append(recent, t)
		}
	}
	ok := len(recent) < reconnectBurst
	if ok {
		recent = append(recent, now)
	}
	r.at[a] = recent
	return ok
}

// goReconnect reconnects neighbor a promptly, on a goroutine of its own
// (GoBGP's API must not be called from its watcher), if its session is
// Idle.
func (r *reconnects) goReconnect(a netip.Addr, why string) {
	ctx, cancel := r.watches.context(context.Background())
	r.watches.goWatch(ctx, cancel, func(ctx context.Context) { r.reconnect(ctx, a, why) })
}

func (r *reconnects) reconnect(ctx context.Context, a netip.Addr, why string) {
	if st, up, ok := r.peerState(ctx, a); !ok || st != api.PeerState_IDLE || !up {
		return
	}
	if !r.allow(a, time.Now()) {
		r.log.Info("session idle: reconnecting at GoBGP's pace (prompt reconnects used up)", "neighbor", a, "why", why,
			"burst", reconnectBurst, "window", reconnectWindow)
		return
	}
	addr := a.String()
	if err := r.gobgp().ResetPeer(ctx, &api.ResetPeerRequest{Address: addr, Communication: "reconnect"}); err != nil {
		r.log.Warn("session idle: cannot shorten the idle hold", "neighbor", a, "err", err)
		return
	}
	err := r.setAdmin(ctx, a, false)
	// Enabled again whatever happened: a neighbor left disabled would never
	// connect.
	if e := r.setAdmin(ctx, a, true); err == nil {
		err = e
	}
	if err != nil {
		r.log.Warn("session idle: prompt reconnect", "neighbor", a, "err", err)
		return
	}
	r.log.Info("session idle: reconnecting after a short idle hold", "neighbor", a, "why", why, "idle_hold", idleHoldAfterReset*time.Second)
}

// peerState returns GoBGP's session state of neighbor a and whether it is
// administratively up; ok is false when a is not configured or GoBGP
// cannot say.
func (r *reconnects) peerState(ctx context.Context, a netip.Addr) (st api.PeerState_SessionState, up, ok bool) {
	err := r.gobgp().ListPeer(ctx, &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
		st, up, ok = p.GetState().GetSessionState(), p.GetState().GetAdminState() == api.PeerState_UP, true
	})
	return st, up, ok && err == nil
}

// adminPoll is how often setAdmin looks whether GoBGP took its request,
// and adminResend after how many looks it sends the request again.
const (
	adminPoll   = 5 * time.Millisecond
	adminResend = 20
)

// setAdmin enables or disables neighbor a and waits until GoBGP shows it
// so, sending the request again while GoBGP shows otherwise (it drops one
// that finds another queued), until ctx ends or the neighbor is gone.
func (r *reconnects) setAdmin(ctx context.Context, a netip.Addr, up bool) error {
	send := func() error {
		if up {
			return r.gobgp().EnablePeer(ctx, &api.EnablePeerRequest{Address: a.String()})
		}
		return r.gobgp().DisablePeer(ctx, &api.DisablePeerRequest{Address: a.String(), Communication: "reconnect"})
	}
	for i := 0; ; i++ {
		if i%adminResend == 0 {
			if err := send(); err != nil {
				return fmt.Errorf("admin up %v: %w", up, err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(adminPoll):
		}
		_, got, ok := r.peerState(ctx, a)
		if !ok {
			return fmt.Errorf("admin up %v: neighbor gone", up)
		}
		if got == up {
			return nil
		}
	}
}
