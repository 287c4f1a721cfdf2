package api

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// ReflectorsBackend is served beside Backend by a reflector: what it hears
// of the fabric's reflectors. A backend without it answers ListReflectors
// with UNIMPLEMENTED.
type ReflectorsBackend interface {
	// Reflectors returns this reflector first, then each peer reflector it
	// heard configuration from, with its wall clock.
	Reflectors(ctx context.Context) (ReflectorsStatus, error)
}

// ReflectorsStatus is the fabric's reflectors as one reflector sees them.
type ReflectorsStatus struct {
	Now        time.Time // the serving reflector's wall clock
	Reflectors []ReflectorStatus
}

// ReflectorStatus is one reflector (see inofv1.Reflector for the fields).
type ReflectorStatus struct {
	RouterID inof.RouterID
	Self     bool
	Address  string // a peer's neighbor address
	Session  string // a peer: the BGP session's state
	Revision string // self: the zoning revision in force
	// Generation: self, the store's generation clock; a peer, the newest
	// generation among its parts (0: none), written by Writer.
	Generation    uint64
	Writer        inof.RouterID
	Parts         int
	Behind        int    // a peer: our parts it lacks or carries older
	RefusedFuture uint64 // a peer: its versions refused as from the future
	Deferred      int    // a peer: those still held back
}

// ListReflectors shows the fabric's reflectors side by side with their
// clocks against this reflector's wall clock.
func (s *statusAPI) ListReflectors(ctx context.Context, _ *inofv1.ListReflectorsRequest) (*inofv1.ListReflectorsResponse, error) {
	rb, ok := s.b.(ReflectorsBackend)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this daemon replicates no configuration (ask a reflector)")
	}
	st, err := rb.Reflectors(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("reflectors: %w", err))
	}
	out := &inofv1.ListReflectorsResponse{Now: timestamppb.New(st.Now), MaxSkewMs: inof.MaxGenerationSkew.Milliseconds()}
	for _, x := range st.Reflectors {
		p := &inofv1.Reflector{Self: x.Self, Address: x.Address, Session: x.Session, Revision: x.Revision,
			Generation: x.Generation, Parts: uint32(x.Parts), BehindParts: uint32(x.Behind),
			RefusedFuture: x.RefusedFuture, DeferredParts: uint32(x.Deferred)}
		if x.RouterID != 0 {
			p.RouterId = x.RouterID.String()
		}
		if x.Writer != 0 {
			p.Writer = x.Writer.String()
		}
		if x.Generation != 0 {
			at := inof.GenerationTime(x.Generation)
			p.Clock = timestamppb.New(at)
			ahead := max(0, at.Sub(st.Now))
			p.AheadMs = ahead.Milliseconds()
			p.RefusedByPeers = x.Self && ahead > inof.MaxGenerationSkew
		}
		out.Reflectors = append(out.Reflectors, p)
	}
	return out, nil
}
