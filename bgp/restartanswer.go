package bgp

import (
	"context"
	"fmt"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"
)

// answerRestarted ends, on a session that came up, GoBGP's wait for the
// neighbor's route-target memberships when the neighbor restarted: then
// it sends this speaker's records (what its memberships, none yet, let
// through: nothing) and End-of-RIB at once instead of after
// membershipDeferral.
//
// Both waits are right alone and wrong together. This speaker defers its
// records on a new session until the neighbor's route-target End-of-RIB
// (membershipDeferral). A neighbor that restarted (the Restart State bit
// in its OPEN, RFC 4724 §4.1) defers everything, its memberships too,
// until it has End-of-RIB from all its neighbors (GoBGP's restart sync).
// Each waits for the other until this speaker's deferral timer gives up,
// 5 s later. GoBGP itself gives up the wait at once, for the same reason,
// when it kept the restarted neighbor's routes stale; it does not when it
// took the neighbor as new: a switch a reflector declared gone (removed
// and added back), or a reflector a switch dropped as lost. A switch
// declared gone so came back into BGP 5 s late after its restart, and
// hosts whose path through it had come back waited for it (issue #51:
// link back 7.3–9.4 s; TestRestartedNeighborAnsweredAtOnce). What is sent
// is what the deferral timer would have sent; the records follow the
// neighbor's memberships as they come (RFC 4684 §6), and a switch holds
// its zone configuration until the reflector's End-of-RIB and a quiet time
// after the last zone record (app/switchagent, configHold).
func (r *restarts) answerRestarted(ctx context.Context, ev NeighborEvent) {
	if ev.State != StateEstablished {
		return
	}
	waits := false
	err := r.gobgp().ListPeer(ctx, &api.ListPeerRequest{Address: ev.Address.String()}, func(p *api.Peer) {
		waits = waitsForRestarted(p)
	})
	if err == nil && waits {
		err = r.gobgp().ResetPeer(ctx, &api.ResetPeerRequest{Address: ev.Address.String(), Soft: true,
			Direction: api.ResetPeerRequest_OUT})
		if err == nil {
			r.log.Info("neighbor restarted: records and End-of-RIB sent without waiting for its memberships",
				"neighbor", ev.Address)
		}
	}
	if err != nil && ctx.Err() == nil {
		r.log.Warn("answer to a restarted neighbor", "neighbor", ev.Address, "err", fmt.Errorf("bgp: %w", err))
	}
}

// waitsForRestarted reports whether GoBGP holds back this speaker's
// records from an established neighbor that restarted: the neighbor's OPEN
// has the Restart State bit, GoBGP kept no stale routes of it (then it
// waits for nothing) and is not itself in its restart sync, and the
// route-target deferral is configured and still waiting for the
// neighbor's End-of-RIB of memberships.
func waitsForRestarted(p *api.Peer) bool {
	if p.GetState().GetSessionState() != api.PeerState_ESTABLISHED {
		return false
	}
	gr := p.GetGracefulRestart()
	if gr.GetLocalRestarting() || gr.GetPeerRestarting() {
		return false
	}
	if flags, ok := restartFlags(p.GetState().GetRemoteCap()); !ok || flags&restartStateBit == 0 {
		return false
	}
	for _, as := range p.GetAfiSafis() {
		f := as.GetConfig().GetFamily()
		if f.GetAfi() == familyRTC.Afi && f.GetSafi() == familyRTC.Safi {
			return as.GetRouteTargetMembership().GetConfig().GetDeferralTime() > 0 &&
				!as.GetMpGracefulRestart().GetState().GetEndOfRibReceived()
		}
	}
	return false
}

// restartFlags returns the flags of the graceful restart capability among
// capabilities received in an OPEN, and whether there was one.
func restartFlags(caps []*anypb.Any) (uint32, bool) {
	for _, c := range caps {
		var gr api.GracefulRestartCapability
		if c.MessageIs(&gr) && c.UnmarshalTo(&gr) == nil {
			return gr.GetFlags(), true
		}
	}
	return 0, false
}
