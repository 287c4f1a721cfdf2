package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/openinof/inof/inof/api/apiclient"
	inofv1 "github.com/openinof/inof/inof/api/v1"
)

// DefaultSocket is where inofd serves the API and inofctl looks for it.
const DefaultSocket = apiclient.DefaultSocket

// ServeOptions say where and how the API is served.
type ServeOptions struct {
	// Socket is the unix socket path (mode 0600: only the daemon's user may
	// connect, and no token is asked); empty disables it.
	Socket string
	// Listen is a TCP address (host:port) for remote clients; empty
	// disables it. It needs TLSCertFile, TLSKeyFile and TokenFile: remote
	// calls are always encrypted and need the bearer token.
	Listen      string
	TLSCertFile string
	TLSKeyFile  string
	// TokenFile holds the bearer token remote clients must send (mode 0600).
	TokenFile string
	// ReadOnly refuses zoning edits (dry runs too: they need the store's
	// transactions) and profile changes (inofd --role switch).
	ReadOnly bool
	// Events is the feed WatchEvents serves and zoning commits are published
	// to (a new feed if nil).
	Events *Feed
	// StopTimeout bounds the wait for running calls at shutdown (default 5 s).
	StopTimeout time.Duration
	Logger      *slog.Logger
	// Role is the daemon's role as Version reports it ("reflector",
	// "switch").
	Role string
}

// Server is the API on its listeners. Run serves until its context ends.
type Server struct {
	opts    ServeOptions
	servers []*grpc.Server
	lis     []net.Listener
	health  []*health.Server
	closing chan struct{} // closed at shutdown: ends following streams
}

// Serve listens as opts say and serves b until ctx ends.
func Serve(ctx context.Context, opts ServeOptions, b Backend) error {
	s, err := NewServer(opts, b)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// NewServer opens the listeners. Run serves them; if Run is never called,
// Close releases them.
func NewServer(opts ServeOptions, b Backend) (*Server, error) {
	if opts.Socket == "" && opts.Listen == "" {
		return nil, errors.New("api: neither a socket nor a TCP address to serve on")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = NewFeed(FeedOptions{})
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 5 * time.Second
	}
	s := &Server{opts: opts, closing: make(chan struct{})}
	impl := &server{b: b, events: opts.Events, readOnly: opts.ReadOnly, log: opts.Logger, closing: s.closing,
		role: opts.Role, started: time.Now()}
	if opts.Socket != "" {
		l, err := listenUnix(opts.Socket)
		if err != nil {
			return nil, err
		}
		s.add(l, impl)
	}
	if opts.Listen != "" {
		srvOpts, err := tcpOptions(opts)
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := net.Listen("tcp", opts.Listen)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("api: %w", err)
		}
		s.add(l, impl, srvOpts...)
	}
	return s, nil
}

// tcpOptions are the TLS credentials and the token check of the TCP
// listener.
func tcpOptions(opts ServeOptions) ([]grpc.ServerOption, error) {
	if opts.TLSCertFile == "" || opts.TLSKeyFile == "" || opts.TokenFile == "" {
		return nil, errors.New("api: a TCP listener needs a TLS certificate, its key and a token file (plaintext or unauthenticated remote access is not offered)")
	}
	cert, err := tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("api: TLS: %w", err)
	}
	tok, err := ReadToken(opts.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	auth := tokenAuth{want: tok, log: opts.Logger}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	return []grpc.ServerOption{grpc.Creds(creds), grpc.ChainUnaryInterceptor(auth.unary), grpc.ChainStreamInterceptor(auth.stream)}, nil
}

// add registers the service, health and reflection on a new grpc.Server
// for l.
func (s *Server) add(l net.Listener, impl *server, opts ...grpc.ServerOption) {
	g := grpc.NewServer(opts...)
	inofv1.RegisterFabricServer(g, impl)
	h := health.NewServer()
	h.SetServingStatus(inofv1.Fabric_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	s.servers = append(s.servers, g)
	s.lis = append(s.lis, l)
	s.health = append(s.health, h)
}

// listenUnix listens on a unix socket of mode 0600, replacing a stale
// socket file that nobody answers on; its directory is created with mode
// 0700 if missing.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("api: socket directory: %w", err)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("api: %s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("api: %s: another server answers on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("api: remove stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("api: socket mode: %w", err)
	}
	return l, nil
}

// TCPAddr returns the TCP listener's address (nil without one).
func (s *Server) TCPAddr() net.Addr {
	if s.opts.Listen == "" {
		return nil
	}
	return s.lis[len(s.lis)-1].Addr()
}

// Run serves until ctx ends, then stops accepting calls, ends event
// streams, waits up to StopTimeout for running calls and returns.
func (s *Server) Run(ctx context.Context) error {
	errs := make(chan error, len(s.servers))
	var wg sync.WaitGroup
	for i, g := range s.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Serve(s.lis[i]); err != nil {
				errs <- fmt.Errorf("api: serve %s: %w", s.lis[i].Addr(), err)
			}
		}()
		s.opts.Logger.Info("api: serving", "addr", s.lis[i].Addr().String())
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	s.stop()
	wg.Wait()
	return err
}

// stop shuts every server down: gracefully, then forcibly after the timeout.
func (s *Server) stop() {
	close(s.closing)
	for _, h := range s.health {
		h.Shutdown()
	}
	done := make(chan struct{})
	go func() {
		for _, g := range s.servers {
			g.GracefulStop()
		}
		close(done)
	}()
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		for _, g := range s.servers {
			g.Stop()
		}
		<-done
	}
}

// Close releases the listeners of a Server that never ran.
func (s *Server) Close() {
	for _, l := range s.lis {
		l.Close()
	}
}
