package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// ListSessions lists the BGP sessions as the backend reports them.
func (s *server) ListSessions(ctx context.Context, _ *inofv1.ListSessionsRequest) (*inofv1.ListSessionsResponse, error) {
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
func (s *server) ListBFDSessions(ctx context.Context, _ *inofv1.ListBFDSessionsRequest) (*inofv1.ListBFDSessionsResponse, error) {
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
