package api

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/zones"
)

// errStale reports that the configuration moved past the revision a client
// edited against.
var errStale = errors.New("configuration changed since the revision you edited against; review it and re-run")

// statusOf turns an error of the zone store, the edits or the backend into
// a gRPC status with the error's own message.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, errStale), errors.Is(err, zones.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, zones.ErrHistoryIncomplete):
		code = codes.Unavailable
	case errors.Is(err, errAliasInUse):
		code = codes.FailedPrecondition
	case errors.Is(err, zones.ErrPin):
		code = codes.InvalidArgument
	case errors.Is(err, zones.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, zones.ErrDuplicate):
		code = codes.AlreadyExists
	case errors.Is(err, zones.ErrName), errors.Is(err, zones.ErrMember), errors.Is(err, zones.ErrOverlap),
		errors.Is(err, zones.ErrReserved), errors.Is(err, zones.ErrAliasNested), errors.Is(err, zones.ErrUnknown):
		code = codes.InvalidArgument
	}
	return status.Error(code, err.Error())
}
