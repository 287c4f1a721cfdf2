package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/bfd"
)

// restarts follows the neighbors' sessions across restarts, for graceful
// restart: when each session came up and came back, which neighbors are
// away, what BFD showed of each neighbor's process, and GoBGP's session
// state read on demand. From them it says how long a withdraw is held
// (holdUntil, the settler's rule), and it answers a neighbor that came
// back restarted (answerRestarted, restartanswer.go). Session events
// reach it on GoBGP's watcher goroutine (trackRestarts), BFD Ups on the
// BFD watch's (noteBFDUp); the record watches ask it.
type restarts struct {
	mu sync.Mutex
	// reestablished is when each neighbor's session last came back up
	// after having been established before (graceful-restart settling).
	reestablished map[netip.Addr]time.Time
	firstUp       map[netip.Addr]time.Time // when each session was first established
	// away are the neighbors whose established session ended and has not
	// come back, with when it ended (graceful-restart holding).
	away     map[netip.Addr]awayRead
	sessions map[netip.Addr]sessionRead
	discs    map[netip.Addr]peerDisc // what BFD showed of each neighbor's process (restartedAt)

	neighbors *neighborTable
	bfds      *bfd.Manager // nil without BFD
	gobgp     func() peerAPI
	gr        GracefulRestart
	role      SpeakerRole
	loss      *reflectorLoss // a client's lost reflectors
	log       *slog.Logger
}

func newRestarts(neighbors *neighborTable, bfds *bfd.Manager, gobgp func() peerAPI, gr GracefulRestart, role SpeakerRole,
	loss *reflectorLoss, log *slog.Logger) *restarts {
	return &restarts{reestablished: map[netip.Addr]time.Time{}, firstUp: map[netip.Addr]time.Time{},
		away: map[netip.Addr]awayRead{}, sessions: map[netip.Addr]sessionRead{}, discs: map[netip.Addr]peerDisc{},
		neighbors: neighbors, bfds: bfds, gobgp: gobgp, gr: gr, role: role, loss: loss, log: log}
}

// forget drops what is held of a removed neighbor's absence.
func (r *restarts) forget(a netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.away, a)
}

// sessionRead is what GoBGP reported of a neighbor's session: when it was
// established, whether the neighbor's OPEN said it had restarted, and when
// this was read.
type sessionRead struct {
	up, read time.Time
	// restarting is graceful restart's Restart State bit (RFC 4724 §3) in
	// the neighbor's OPEN: its speaker restarted and is re-learning. It is
	// also set when GoBGP shows no graceful restart capability of the
	// neighbor (not yet, or no longer): unknown counts as restarted.
	restarting bool
}

// sessionCacheFor is how long a read of GoBGP's session state is reused:
// withdraws come in bursts.
const sessionCacheFor = 50 * time.Millisecond

// restartStateBit is the Restart State flag of the graceful restart
// capability (the top bit of the 4-bit flags, 0x8 as GoBGP keeps them).
const restartStateBit = 0x08

// settlingSince is the time from which withdraws of records last learned
// from src are held for the settle time: when src's session last came back
// up from a restart of src's speaker, or, while src is dropped as a lost
// reflector (reflectorloss.go), when the latest of the other neighbors
// did. Dropping a lost reflector withdraws the records the serving one
// lacks; one that came back from a restart moments ago may still be
// re-learning them (found by the soak, seed 4501343603921199704 step 16: a
// leaf dropped a partitioned reflector 0.5 s after the other came back
// from a restart, and its hosts were told reason 7 for targets that were
// there).
//
// A neighbor whose session came back without restarting (the session
// flapped, its speaker ran on) is never settled: it sends its whole table
// before its End-of-RIB, so a record missing then, or withdrawn after, is
// gone, and the hosts told it was there must hear so at once. Holding
// those withdraws hid a switch killed 0–4 s after a false BFD down had
// reset every session of its reflector: the other leaves held the
// withdraws of its records for the settle time, the switch came back
// within it, and its hosts' peers never heard of a 12 s outage (issue
// #46, TestPrivKillAfterFlapReason7).
func (r *restarts) settlingSince(src netip.Addr) time.Time {
	at := r.restartedAt(src)
	if !r.loss.lost(src) {
		return at
	}
	r.mu.Lock()
	others := make([]netip.Addr, 0, len(r.firstUp))
	for a := range r.firstUp {
		if a != src {
			others = append(others, a)
		}
	}
	r.mu.Unlock()
	for _, a := range others {
		if t := r.restartedAt(a); t.After(at) {
			at = t
		}
	}
	return at
}

// restartedAt is when the session to a last came back up from a restart of
// a's speaker (zero if never, or if a's speaker did not restart then).
//
// The Restart State bit of a's OPEN alone does not tell: GoBGP clears it
// on every neighbor of a restarting speaker once the neighbors connected so
// far have sent End-of-RIB, and a neighbor that connects later is told the
// speaker did not restart although it is still re-learning (found by
// TestGracefulRestart). BFD tells: a new process draws new discriminators
// (bfd.Manager), so a's speaker is the same process as in the session
// before when BFD is Up now with the remote discriminator it had then, and
// its OPEN does not say otherwise. Without that proof (no BFD towards a,
// BFD not Up, the session's state unreadable) a counts as restarted:
// holding a withdraw for the settle time is the old, safe side.
func (r *restarts) restartedAt(a netip.Addr) time.Time {
	now := time.Now()
	at := r.reestablishedAt(a, now)
	if at.IsZero() || !r.sameProcess(a) {
		return at
	}
	if s, ok := r.session(a, now); ok && !s.restarting {
		return time.Time{}
	}
	return at
}

// peerDisc is what BFD showed of a neighbor's process: the remote
// discriminator of its last Up, and when a discriminator first seen (a new
// process) came Up.
type peerDisc struct {
	disc    uint32
	newAt   time.Time
	prevBGP time.Time // when the BGP session before the current one came up
	lastBGP time.Time // when the current BGP session came up
}

// noteBFDUp records the remote discriminator of a neighbor's BFD session
// that came Up (onBFD).
func (r *restarts) noteBFDUp(a netip.Addr, key bfd.SessionKey) {
	s, ok := r.bfds.Session(key)
	if !ok {
		return
	}
	disc := s.Status().RemoteDisc
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.discs[a]
	if disc != d.disc {
		d.disc, d.newAt = disc, time.Now()
	}
	r.discs[a] = d
}

// noteBGPUp records that a's BGP session came up (trackRestarts); r.mu is
// held.
func (r *restarts) noteBGPUpLocked(a netip.Addr, now time.Time) {
	d := r.discs[a]
	d.prevBGP, d.lastBGP = d.lastBGP, now
	r.discs[a] = d
}

// sameProcess reports whether BFD proves a's speaker the same process as
// during a's BGP session before the current one: BFD Up now, with the
// remote discriminator it came Up with before that session.
func (r *restarts) sameProcess(a netip.Addr) bool {
	n, configured := r.neighbors.get(a)
	r.mu.Lock()
	d := r.discs[a]
	r.mu.Unlock()
	if !configured || n.BFD == nil || r.bfds == nil || d.disc == 0 || d.prevBGP.IsZero() || d.newAt.After(d.prevBGP) {
		return false
	}
	s, ok := r.bfds.Session(bfdKey(n))
	if !ok {
		return false
	}
	st := s.Status()
	return st.State == bfd.Up && st.RemoteDisc == d.disc
}

// reestablishedAt is when the session to a last came back up after having
// been established before (zero if never). Neighbor events reach us on
// another GoBGP watcher than record events, so a withdraw can arrive
// before the event of the re-establishment that caused it: when the
// tracked time is not recent, GoBGP's own session uptime is asked (whole
// seconds, so rounded up).
func (r *restarts) reestablishedAt(a netip.Addr, now time.Time) time.Time {
	r.mu.Lock()
	at, first, seen := r.reestablished[a], r.firstUp[a], !r.firstUp[a].IsZero()
	r.mu.Unlock()
	if !seen || now.Sub(at) < r.gr.SettleTime {
		return at
	}
	s, ok := r.session(a, now)
	if ok && s.up.After(first.Add(time.Second)) && s.up.After(at) {
		return s.up
	}
	return at
}

// session reads a's session from GoBGP, or reuses a read younger than
// sessionCacheFor.
func (r *restarts) session(a netip.Addr, now time.Time) (sessionRead, bool) {
	r.mu.Lock()
	cached := r.sessions[a]
	r.mu.Unlock()
	if now.Sub(cached.read) < sessionCacheFor {
		return cached, true
	}
	s := sessionRead{read: now}
	err := r.gobgp().ListPeer(context.Background(), &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
		if p.GetState().GetSessionState() == api.PeerState_ESTABLISHED && p.GetTimers().GetState().GetUptime() != nil {
			s.up = p.GetTimers().GetState().GetUptime().AsTime().Add(time.Second)
		}
		s.restarting = restartState(p.GetState().GetRemoteCap())
	})
	if err != nil {
		return sessionRead{}, false
	}
	r.mu.Lock()
	r.sessions[a] = s
	r.mu.Unlock()
	return s, true
}

// restartState reports whether capabilities received in an OPEN carry
// graceful restart with the Restart State bit set, or no graceful restart
// capability at all.
func restartState(caps []*anypb.Any) bool {
	flags, ok := restartFlags(caps)
	return !ok || flags&restartStateBit != 0
}

func (r *restarts) trackRestarts(ev NeighborEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ev.State == StateEstablished:
		delete(r.away, ev.Address)
		r.noteBGPUpLocked(ev.Address, time.Now())
		if r.firstUp[ev.Address].IsZero() {
			r.firstUp[ev.Address] = time.Now()
		} else {
			r.reestablished[ev.Address] = time.Now()
		}
	case !r.firstUp[ev.Address].IsZero():
		if _, ok := r.away[ev.Address]; !ok {
			r.away[ev.Address] = awayRead{since: time.Now()}
		}
	}
}

// awayRead is when a neighbor's session ended and the restart time it had
// announced (zero until read).
type awayRead struct {
	since   time.Time
	restart time.Duration
}

// holdUntil is the settler's rule (see WatchRecords): until when a
// withdraw of a record last delivered from o is held. Withdraws of records
// from a neighbor that came back are held for the settle time
// (settlingSince). On a client, withdraws of records graceful restart kept
// stale are held too, until the neighbor's restart time is over, while it
// is away and not dropped as a lost reflector: GoBGP drops a restarting
// neighbor's stale routes as soon as one attempt to reconnect fails after
// the TCP connection is up (OpenSent to Idle), not when the restart time
// ends — and a reflector accepts and closes the connection of a switch it
// holds down after BFD loss, or one it has not configured yet while it
// starts (TestRefusedReconnectKeepsStaleRecords).
func (r *restarts) holdUntil(o origin, now time.Time) time.Time {
	until := r.settlingSince(o.src).Add(r.gr.SettleTime)
	if !o.stale || r.role != RoleClient || r.loss.lost(o.src) {
		return until
	}
	// Asked again at least every settle time: the neighbor's return may
	// reach us after its End-of-RIB's withdraws (another GoBGP watcher),
	// and from then on only the settle time holds (restartEnds reads the
	// session too, so an End-of-RIB's withdraws seldom wait for that).
	end := r.restartEnds(o.src, now)
	if next := now.Add(r.gr.SettleTime); end.After(next) {
		end = next
	}
	if end.After(until) {
		until = end
	}
	return until
}

// restartEnds is when the restart time of an away neighbor ends (zero if
// it is not away, or GoBGP says its session is back since it went away):
// the restart time it announced, read from GoBGP once per absence, or
// ours.
func (r *restarts) restartEnds(a netip.Addr, now time.Time) time.Time {
	r.mu.Lock()
	away, ok := r.away[a]
	r.mu.Unlock()
	_, configured := r.neighbors.get(a)
	if !ok || !configured {
		return time.Time{}
	}
	if s, read := r.session(a, now); read && s.up.After(away.since) {
		return time.Time{}
	}
	if away.restart == 0 {
		away.restart = r.gr.RestartTime
		err := r.gobgp().ListPeer(context.Background(), &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
			if t := p.GetGracefulRestart().GetPeerRestartTime(); t > 0 {
				away.restart = time.Duration(t) * time.Second
			}
		})
		if err == nil {
			r.mu.Lock()
			if cur, still := r.away[a]; still && cur.since.Equal(away.since) {
				r.away[a] = away
			}
			r.mu.Unlock()
		}
	}
	return away.since.Add(away.restart)
}
