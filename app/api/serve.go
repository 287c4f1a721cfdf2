package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/openinof/inof/app/api/apiclient"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/internal/connlimit"
)

// DefaultSocket is where inofd serves the API and inofctl looks for it.
const DefaultSocket = apiclient.DefaultSocket

// ServeOptions say where and how the API is served.
type ServeOptions struct {
	// Socket is the unix socket path (mode 0600, or 0660 with
	// SocketGroup); empty disables it. A caller is its process's user
	// (UnixIdentities; root is always an admin).
	Socket string
	// SocketGroup, if set, owns the socket and may connect (mode 0660).
	SocketGroup    string
	UnixIdentities []UnixIdentity
	// Listen is a TCP address (host:port) for remote clients; empty
	// disables it. It needs TLSCertFile and TLSKeyFile, and a way to tell
	// who calls: client certificates (ClientCA and Clients), tokens
	// (TokensFile) or the one shared token (TokenFile).
	Listen      string
	TLSCertFile string
	TLSKeyFile  string
	// ClientCA verifies client certificates; Clients allows their subjects.
	ClientCA string
	Clients  []CertIdentity
	// TokensFile holds named, hashed tokens with their roles (TokensFile);
	// it is read again when it changes.
	TokensFile string
	// TokenFile holds one bearer token shared by every remote admin (mode
	// 0600): identity "shared-token", role admin.
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
	// ConsoleListen is a TCP address (host:port) of an HTTPS listener for
	// the web console, served by Console with the TLS certificate and the
	// remote identities of Listen (client certificates, tokens); empty
	// disables it.
	ConsoleListen string
	Console       ConsoleHandler
	// Registry, if set, gets the TCP listeners' connection metrics
	// (inof_listener_connections, inof_listener_refused_total).
	Registry prometheus.Registerer
}

// Limits of the TCP listeners (Listen, ConsoleListen): each holds at most
// tcpMaxConns connections, tcpMaxPerSource per source address; a TLS
// handshake (and the HTTP/2 preface) must end within handshakeTimeout, a
// console request header within it too; idle connections are closed. The
// unix socket has none of these: only local users it lets in reach it,
// and the TCP limits keep file descriptors for it (docs/security.md,
// "Listeners").
const (
	tcpMaxConns        = 256
	tcpMaxPerSource    = 32
	handshakeTimeout   = 10 * time.Second
	grpcIdleTimeout    = 5 * time.Minute
	consoleIdleTimeout = 60 * time.Second
	consoleMaxHeader   = 64 << 10
)

// listenTCP listens on addr within the TCP listeners' limits.
func listenTCP(addr, name string, o ServeOptions) (net.Listener, error) {
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l, err := connlimit.New(tl, connlimit.Options{Name: name, MaxConns: tcpMaxConns, MaxPerSource: tcpMaxPerSource,
		Logger: o.Logger, Registry: o.Registry})
	if err != nil {
		tl.Close()
		return nil, err
	}
	return l, nil
}

// Server is the API on its listeners. Run serves until its context ends.
type Server struct {
	opts    ServeOptions
	servers []*grpc.Server
	lis     []net.Listener
	health  []*health.Server
	closing chan struct{} // closed at shutdown: ends following streams
	web     *http.Server  // the console, if ConsoleListen is set
	webLis  net.Listener
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
	if opts.Socket == "" && opts.Listen == "" && opts.ConsoleListen == "" {
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
	impl := newServer(b, opts, s.closing)
	auth, err := newAuthenticator(opts)
	if err != nil {
		return nil, err
	}
	if opts.Socket != "" {
		l, err := listenUnix(opts.Socket, opts.SocketGroup)
		if err != nil {
			return nil, err
		}
		s.add(l, impl, append(auth.interceptors(), grpc.Creds(peerCreds{}))...)
	}
	if opts.Listen != "" {
		if opts.TLSCertFile == "" || opts.TLSKeyFile == "" || (opts.TokenFile == "" && opts.TokensFile == "" && opts.ClientCA == "") {
			s.Close()
			return nil, errors.New("api: a TCP listener needs a TLS certificate, its key and client certificates or tokens (plaintext or unauthenticated remote access is not offered)")
		}
		cfg, err := tlsConfig(opts)
		if err != nil {
			s.Close()
			return nil, err
		}
		l, err := listenTCP(opts.Listen, "api", opts)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("api: %w", err)
		}
		s.add(l, impl, append(auth.interceptors(), grpc.Creds(credentials.NewTLS(cfg)), grpc.ConnectionTimeout(handshakeTimeout),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: grpcIdleTimeout, Time: time.Minute, Timeout: 20 * time.Second}))...)
	}
	if opts.ConsoleListen != "" {
		if err := s.listenConsole(impl, auth); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// add registers the service, health and reflection on a new grpc.Server
// for l.
func (s *Server) add(l net.Listener, impl *server, opts ...grpc.ServerOption) {
	g := grpc.NewServer(append(opts, sanitiseInterceptors()...)...)
	inofv1.RegisterFabricServer(g, impl)
	h := health.NewServer()
	h.SetServingStatus(inofv1.Fabric_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	s.servers = append(s.servers, g)
	s.lis = append(s.lis, l)
	s.health = append(s.health, h)
}

// listenUnix listens on a unix socket of mode 0600 (0660 owned by group,
// if set), replacing a stale socket file that nobody answers on. The
// socket is made in a private directory (mode 0700) beside it, given its
// mode and group there and only then renamed into place, so it is never
// reachable with wider permissions, whatever the umask. The socket's
// directory must exist, or its parent (it is then made, mode 0755: the
// socket's own mode protects it), so a mistyped path is an error rather
// than a tree of new directories.
func listenUnix(path, group string) (net.Listener, error) {
	gid := -1
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("api: socket group: %w", err)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return nil, fmt.Errorf("api: socket group %s: gid %q", group, g.Gid)
		}
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if _, perr := os.Stat(filepath.Dir(dir)); perr != nil {
			return nil, fmt.Errorf("api: socket directory %s does not exist, nor its parent: %w", dir, err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("api: socket directory: %w", err)
		}
	} else if err != nil {
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
	private, err := os.MkdirTemp(dir, ".api-sock-")
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	defer os.RemoveAll(private)
	tmp := filepath.Join(private, "sock")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	// The socket file is renamed away from where it was made: the
	// listener must not try to remove it there when it closes.
	ul.SetUnlinkOnClose(false)
	mode := os.FileMode(0o600)
	if gid >= 0 {
		mode = 0o660
		if err := os.Chown(tmp, -1, gid); err != nil {
			ul.Close()
			return nil, fmt.Errorf("api: socket group: %w", err)
		}
	}
	if err := os.Chmod(tmp, mode); err != nil {
		ul.Close()
		return nil, fmt.Errorf("api: socket mode: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ul.Close()
		return nil, fmt.Errorf("api: socket: %w", err)
	}
	return &unixListener{UnixListener: ul, path: path}, nil
}

// unixListener removes its socket file when it closes.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
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
	errs := make(chan error, len(s.servers)+1)
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
	if s.web != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.web.ServeTLS(s.webLis, "", ""); !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("api: console %s: %w", s.webLis.Addr(), err)
			}
		}()
		s.opts.Logger.Info("api: serving the console", "addr", s.webLis.Addr().String(), "path", "/ui/")
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
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	go func() {
		for _, g := range s.servers {
			g.GracefulStop()
		}
		close(done)
	}()
	if s.web != nil {
		// Live pages end with the closing channel; give the rest the same
		// time as the calls.
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout)
		if err := s.web.Shutdown(ctx); err != nil {
			s.web.Close()
		}
		cancel()
	}
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
	if s.webLis != nil {
		s.webLis.Close()
	}
}
