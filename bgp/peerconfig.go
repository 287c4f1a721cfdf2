package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

// peerConfig makes GoBGP's configuration of a neighbor (apiPeer) from the
// speaker's options; the speaker adds neighbors with it, and so do the
// collaborators that remove a neighbor and add it back (declareGone,
// dropLost).
type peerConfig struct {
	asn       uint32
	clusterID netip.Addr
	role      SpeakerRole
	gr        GracefulRestart
	gobgp     func() peerAPI
	log       *slog.Logger
	// synced: this restart's deferral is over (restartPending).
	synced atomic.Bool
}

// apiPeer is GoBGP's configuration of neighbor n; ctx bounds the look-up
// of restartPending.
func (c *peerConfig) apiPeer(ctx context.Context, n Neighbor) *api.Peer {
	asn := n.ASN
	if asn == 0 {
		asn = c.asn
	}
	hold, keep := n.HoldTime, n.Keepalive
	if hold == 0 {
		hold = 9 * time.Second
	}
	if keep == 0 {
		keep = hold / 3
	}
	p := &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: n.Address.String(), PeerAsn: asn, AuthPassword: n.Password},
		Transport: &api.Transport{PassiveMode: n.Passive, RemotePort: uint32(n.Port)},
		Timers: &api.Timers{Config: &api.TimersConfig{HoldTime: uint64(hold / time.Second),
			KeepaliveInterval: uint64(keep / time.Second), ConnectRetry: 1, IdleHoldTimeAfterReset: idleHoldAfterReset}},
	}
	if n.LocalAddress.IsValid() {
		p.Transport.LocalAddress = n.LocalAddress.String()
	}
	if n.RRClient {
		p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: c.clusterID.String()}
	}
	if n.TTLSecurity {
		p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 255}
	}
	gr := c.gr
	restarting := gr.Enabled && gr.Restarting && c.restartPending(ctx)
	if gr.Enabled {
		p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(gr.RestartTime / time.Second),
			LocalRestarting: restarting, NotificationEnabled: gr.Notification}
	}
	for _, f := range []*api.Family{familyOpaque, familyRTC} {
		as := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f, Enabled: true}}
		if gr.Enabled {
			as.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
			// A restarting reflector defers its updates anyway (GoBGP's
			// restart sync), and its switches settle its withdraws.
			if f == familyRTC && (c.role == RoleClient || !restarting) {
				as.RouteTargetMembership = &api.RouteTargetMembership{
					Config: &api.RouteTargetMembershipConfig{DeferralTime: uint32(gr.deferral() / time.Second)}}
			}
		}
		p.AfiSafis = append(p.AfiSafis, as)
	}
	return p
}

// membershipDeferral bounds how long a speaker waits, on a new session, for
// the neighbor's route-target memberships (their End-of-RIB, RFC 4684 §6)
// before it sends its records. Both ends wait: each sends its memberships
// and their End-of-RIB at once, so the wait is a round trip. A client
// waits for its reflector's; a reflector for its client's, so that its
// End-of-RIB to a switch whose session only flapped holds every record the
// switch subscribes to: without the wait it held none, the switch flushed
// the reflector's stale routes at that End-of-RIB, and as the reflector
// did not restart, the switch's hosts were told its targets gone
// (TestBFDLossLeavesTheSwitchItsRoutes; docs/design.md §10). Without the wait GoBGP sends
// its table at once, filtered by memberships it does not hold yet: nothing,
// then End-of-RIB. A reflector that keeps the client's records stale
// (graceful restart) drops them all at that End-of-RIB and takes them back
// when they follow: a withdraw at every other switch. A restarting client's
// first sessions are deferred anyway (GoBGP's restart sync); this covers a
// session that comes up after that sync (TestRestartedClientLateReflectorKeepsRecords).
// A neighbor that restarted sends no memberships before our End-of-RIB:
// answerRestarted ends the wait for it at once.
// The deferral timer does nothing once that End-of-RIB came (GoBGP's
// softResetOut), and sends the table if it never does.
const membershipDeferral = 5 * time.Second

// deferral is the route-target membership deferral of gr's sessions.
func (gr GracefulRestart) deferral() time.Duration {
	if gr.membershipDeferral > 0 {
		return gr.membershipDeferral
	}
	return membershipDeferral
}

// restartPending reports whether this speaker, started as a graceful
// restart (GracefulRestart.Restarting), is still deferring its updates.
// GoBGP marks each neighbor configured as restarting (LocalRestarting) and,
// once the neighbors connected so far have sent End-of-RIB, clears the mark
// on all of them at once ("sync finished"; a neighbor's deferral timer, 360
// s, clears its own). A neighbor added after that — added back after a loss
// (reflectorloss.go, clientloss.go, onBFD) or configured later — must not
// be marked: GoBGP would send it nothing, not even this speaker's
// route-target memberships, until every neighbor had sent End-of-RIB again,
// which one that is down never does. A reflector that restarted once and
// later added a switch back after BFD lost it so sent that switch nothing
// for the deferral time; the switch, without the reflector's memberships,
// sent it nothing either, and its new records reached the other switches
// through the other reflector only and were lost with it (found by the
// soak, seed 8496823541670719219 step 5). Once seen over, the sync stays
// over.
func (c *peerConfig) restartPending(ctx context.Context) bool {
	if !c.gr.Restarting || c.synced.Load() {
		return false
	}
	synced := false
	err := c.gobgp().ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		synced = synced || !p.GetGracefulRestart().GetLocalRestarting()
	})
	if err != nil {
		c.log.Warn("graceful restart: cannot tell whether the sync is over; adding the neighbor as restarting", "err", err)
		return true
	}
	if synced {
		c.synced.Store(true)
	}
	return !synced
}
