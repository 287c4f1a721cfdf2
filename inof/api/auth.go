package api

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// ReadToken reads a bearer token from a file: its content without
// surrounding blanks. The file must not be readable by group or others, and
// the token must not be empty.
func ReadToken(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return nil, fmt.Errorf("token file %s: mode %04o lets others read it; chmod 600 it", path, m)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("token file %s: empty", path)
	}
	return tok, nil
}

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

// bearer sends a token with every call; it refuses connections without
// transport security.
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }
