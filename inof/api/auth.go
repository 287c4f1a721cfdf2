package api

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/inof/api/apiclient"
)

// ReadToken reads a bearer token from a file: its content without
// surrounding blanks. The file must not be readable by group or others, and
// the token must not be empty.
func ReadToken(path string) ([]byte, error) { return apiclient.ReadToken(path) }

// tokenAuth checks the "authorization: Bearer TOKEN" metadata of every call
// and logs refusals.
type tokenAuth struct {
	want []byte
	log  *slog.Logger
}

func (a tokenAuth) check(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	var err error
	if len(vals) == 0 {
		err = status.Error(codes.Unauthenticated, "missing bearer token (authorization metadata)")
	} else if tok, ok := strings.CutPrefix(vals[0], "Bearer "); !ok || len(vals) > 1 || subtle.ConstantTimeCompare([]byte(tok), a.want) != 1 {
		err = status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	if err != nil {
		from := "unknown"
		if p, ok := peer.FromContext(ctx); ok {
			from = p.Addr.String()
		}
		a.log.Warn("api: call refused", "method", method, "peer", from, "err", status.Convert(err).Message())
	}
	return err
}

func (a tokenAuth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return next(ctx, req)
}

func (a tokenAuth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return next(srv, ss)
}
