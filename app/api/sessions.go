package api

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// statusAPI takes the calls on the daemon's state: its BGP and BFD
// sessions, the fabric's reflectors and its version.
type statusAPI struct {
	b       Backend
	events  *Feed     // a session's kept events (GetSession)
	role    string    // what Version reports
	started time.Time // when the server was made
}

// ListSessions lists the BGP sessions as the backend reports them.
func (s *statusAPI) ListSessions(ctx context.Context, _ *inofv1.ListSessionsRequest) (*inofv1.ListSessionsResponse, error) {
	ss, err := s.b.Sessions(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("sessions: %w", err))
	}
	out := &inofv1.ListSessionsResponse{}
	for _, x := range ss {
		p := &inofv1.Session{Peer: x.Peer, Kind: x.Kind, State: x.State, Received: x.Received, Advertised: x.Advertised,
			RouterId: x.RouterID, LocalAddress: x.LocalAddress, HoldTimeMs: uint32(x.HoldTime.Milliseconds()),
			KeepaliveMs: uint32(x.Keepalive.Milliseconds()), Passive: x.Passive, EndOfRib: x.EndOfRIB, Bfd: x.BFD}
		if !x.Since.IsZero() {
			p.Since = timestamppb.New(x.Since)
		}
		out.Sessions = append(out.Sessions, p)
	}
	return out, nil
}

// ListBFDSessions lists the BFD sessions as the backend reports them.
func (s *statusAPI) ListBFDSessions(ctx context.Context, _ *inofv1.ListBFDSessionsRequest) (*inofv1.ListBFDSessionsResponse, error) {
	ss, err := s.b.BFDSessions(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("bfd sessions: %w", err))
	}
	out := &inofv1.ListBFDSessionsResponse{}
	for _, x := range ss {
		p := &inofv1.BFDSession{Peer: x.Peer, Local: x.Local, State: x.State, Diagnostic: x.Diagnostic,
			TxIntervalMs: uint32(x.TxInterval.Milliseconds()), RxIntervalMs: uint32(x.RxInterval.Milliseconds()),
			DetectMult: uint32(x.DetectMult)}
		if !x.Since.IsZero() {
			p.Since = timestamppb.New(x.Since)
		}
		out.Sessions = append(out.Sessions, p)
	}
	return out, nil
}

// GetSession tells everything the server knows about one BGP session.
func (s *statusAPI) GetSession(ctx context.Context, req *inofv1.GetSessionRequest) (*inofv1.SessionDetail, error) {
	peer, err := parseAddr("peer", req.GetPeer())
	if err != nil {
		return nil, err
	}
	ss, err := s.ListSessions(ctx, &inofv1.ListSessionsRequest{})
	if err != nil {
		return nil, err
	}
	out := &inofv1.SessionDetail{}
	for _, x := range ss.GetSessions() {
		if a, err := netip.ParseAddr(x.GetPeer()); err == nil && a == peer {
			out.Session = x
		}
	}
	if out.Session == nil {
		return nil, status.Errorf(codes.NotFound, "no BGP session with %s", peer)
	}
	bs, err := s.ListBFDSessions(ctx, &inofv1.ListBFDSessionsRequest{})
	if err != nil {
		return nil, err
	}
	for _, x := range bs.GetSessions() {
		if a, err := netip.ParseAddr(x.GetPeer()); err == nil && a == peer {
			out.Bfd = x
		}
	}
	out.Events = keptEvents(s.events, func(e Event) bool { return e.Kind == "session" && e.Subject == peer.String() })
	return out, nil
}
