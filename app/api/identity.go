package api

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// Who may call the API (docs/security.md). Every call is made by an
// identity with a role: an admin may change the zoning and the lossless
// profile, a viewer may read everything. On the unix socket the caller is
// its process's user (SO_PEERCRED), mapped through api.unix_identities (root
// is always an admin); over TCP it is a TLS client certificate's subject in
// the api.clients allow-list, or a bearer token of api.tokens_file (or the
// one shared api.token_file). Every change and every refused call is
// logged with the identity, and the events of changes carry it.

// Role is what an identity may do.
type Role string

// Roles.
const (
	RoleAdmin  Role = "admin"  // read and change
	RoleViewer Role = "viewer" // read only
)

func (r Role) valid() bool { return r == RoleAdmin || r == RoleViewer }

// Identity is who makes a call.
type Identity struct {
	Name string
	Role Role
	// Via says how it was established: "unix uid=1001", "certificate",
	// "token".
	Via string
}

func (id Identity) String() string {
	if id.Name == "" {
		return "unknown"
	}
	return id.Name
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity a call was made with (the zero
// Identity, "unknown", outside the API).
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// UnixIdentity maps local users to an identity on the unix socket: a
// user (name or uid), or every member of a group (name or gid).
type UnixIdentity struct {
	User  string `yaml:"user"`
	Group string `yaml:"group"`
	// Name is the identity's name in logs and events (default: the user
	// or group name).
	Name string `yaml:"name"`
	Role Role   `yaml:"role"`
}

// CertIdentity allows a TLS client certificate by its subject's common
// name.
type CertIdentity struct {
	Subject string `yaml:"subject"` // the certificate's subject CN
	Role    Role   `yaml:"role"`
}

// unixPeer is what the kernel says of the process at the other end of a
// unix socket.
type unixPeer struct {
	credentials.CommonAuthInfo
	uid, gid uint32
	pid      int32
}

func (unixPeer) AuthType() string { return "unix" }

// peerCreds are the transport credentials of the unix socket: no
// encryption (the kernel carries the bytes), the peer's credentials read
// with SO_PEERCRED at accept.
type peerCreds struct{}

func (peerCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, nil, errors.New("api: not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("api: peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, nil, fmt.Errorf("api: peer credentials: %w", err)
	}
	if serr != nil {
		return nil, nil, fmt.Errorf("api: peer credentials: %w", serr)
	}
	return c, unixPeer{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		uid: cred.Uid, gid: cred.Gid, pid: cred.Pid}, nil
}

func (peerCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("api: server-side credentials only")
}
func (peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "unix"}
}
func (p peerCreds) Clone() credentials.TransportCredentials { return p }
func (peerCreds) OverrideServerName(string) error           { return nil }

// authenticator establishes the identity of every call.
type authenticator struct {
	log    *slog.Logger
	rl     *ratelimit.Log // refusals of unauthenticated parties
	unix   []UnixIdentity
	certs  map[string]Role // by subject CN
	shared []byte          // api.token_file, if set
	tokens string          // api.tokens_file, if set

	mu      sync.Mutex
	loaded  time.Time // mtime of the tokens file read last
	entries map[string]apiclient.TokenEntry
}

func newAuthenticator(o ServeOptions) (*authenticator, error) {
	a := &authenticator{log: o.Logger, rl: ratelimit.NewLog(0, nil), unix: o.UnixIdentities, certs: map[string]Role{}, tokens: o.TokensFile}
	for _, c := range o.Clients {
		a.certs[c.Subject] = c.Role
	}
	if o.TokenFile != "" {
		tok, err := apiclient.ReadToken(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
		a.shared = tok
	}
	if a.tokens != "" {
		if _, err := a.tokenEntries(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// tokenEntries returns the tokens file's entries, read again when the
// file changed (so a revoked token stops working at once).
func (a *authenticator) tokenEntries() (map[string]apiclient.TokenEntry, error) {
	st, err := os.Stat(a.tokens)
	if err != nil {
		return nil, fmt.Errorf("api: tokens file: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.entries != nil && st.ModTime().Equal(a.loaded) {
		return a.entries, nil
	}
	if m := st.Mode().Perm(); m&0o022 != 0 {
		return nil, fmt.Errorf("api: tokens file %s: mode %04o lets others change it", a.tokens, m)
	}
	b, err := os.ReadFile(a.tokens)
	if err != nil {
		return nil, fmt.Errorf("api: tokens file: %w", err)
	}
	f, err := apiclient.ParseTokensFile(b)
	if err != nil {
		return nil, fmt.Errorf("api: tokens file %s: %w", a.tokens, err)
	}
	entries := map[string]apiclient.TokenEntry{}
	for _, e := range f.Tokens {
		entries[e.SHA256] = e
	}
	a.entries, a.loaded = entries, st.ModTime()
	return entries, nil
}

// identify establishes the caller's identity.
func (a *authenticator) identify(ctx context.Context) (Identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, status.Error(codes.Unauthenticated, "no peer")
	}
	switch info := p.AuthInfo.(type) {
	case unixPeer:
		return a.unixIdentity(info)
	case credentials.TLSInfo:
		md, _ := metadata.FromIncomingContext(ctx)
		return a.remoteIdentity(info.State.VerifiedChains, md.Get("authorization"))
	}
	return Identity{}, status.Error(codes.Unauthenticated, "unknown transport")
}

// remoteIdentity establishes the identity of a TLS caller (the TCP API or
// the console): its verified client certificate's subject, else its bearer
// token (authz holds the values of its authorization metadata or header).
func (a *authenticator) remoteIdentity(chains [][]*x509.Certificate, authz []string) (Identity, error) {
	if len(chains) > 0 && len(chains[0]) > 0 {
		cn := chains[0][0].Subject.CommonName
		role, ok := a.certs[cn]
		if !ok {
			return Identity{}, status.Errorf(codes.PermissionDenied, "certificate subject %q is not in api.clients", cn)
		}
		return Identity{Name: cn, Role: role, Via: "certificate"}, nil
	}
	return a.tokenIdentity(authz)
}

func (a *authenticator) unixIdentity(p unixPeer) (Identity, error) {
	via := fmt.Sprintf("unix uid=%d pid=%d", p.uid, p.pid)
	uid := strconv.FormatUint(uint64(p.uid), 10)
	u, uerr := user.LookupId(uid)
	groups := []string{strconv.FormatUint(uint64(p.gid), 10)}
	name := uid
	if uerr == nil {
		name = u.Username
		if gs, err := u.GroupIds(); err == nil {
			groups = append(groups, gs...)
		}
	}
	for _, m := range a.unix {
		switch {
		case m.User != "" && (m.User == uid || m.User == name):
			return Identity{Name: or(m.Name, name), Role: m.Role, Via: via}, nil
		case m.Group != "" && matchGroup(m.Group, groups):
			return Identity{Name: or(m.Name, name), Role: m.Role, Via: via + " group=" + m.Group}, nil
		}
	}
	if p.uid == 0 { // root is an admin unless a mapping says otherwise
		return Identity{Name: "root", Role: RoleAdmin, Via: via}, nil
	}
	return Identity{}, status.Errorf(codes.PermissionDenied, "local user %s (uid %d) is not in api.unix_identities", name, p.uid)
}

// matchGroup reports whether group (a name or a gid) is among gids.
func matchGroup(group string, gids []string) bool {
	if slices.Contains(gids, group) {
		return true
	}
	g, err := user.LookupGroup(group)
	return err == nil && slices.Contains(gids, g.Gid)
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func (a *authenticator) tokenIdentity(vals []string) (Identity, error) {
	if len(vals) == 0 {
		return Identity{}, status.Error(codes.Unauthenticated, "no client certificate and no bearer token")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok || len(vals) > 1 || tok == "" {
		return Identity{}, status.Error(codes.Unauthenticated, "malformed authorization metadata")
	}
	if a.shared != nil && subtle.ConstantTimeCompare([]byte(tok), a.shared) == 1 {
		return Identity{Name: "shared-token", Role: RoleAdmin, Via: "token"}, nil
	}
	if a.tokens != "" {
		entries, err := a.tokenEntries()
		if err != nil {
			a.log.Error("api: tokens file unreadable; refusing tokens", "err", err)
			return Identity{}, status.Error(codes.Unavailable, "the server cannot read its tokens file")
		}
		if e, ok := entries[apiclient.HashToken(tok)]; ok {
			return Identity{Name: e.Name, Role: Role(e.Role), Via: "token"}, nil
		}
	}
	return Identity{}, status.Error(codes.Unauthenticated, "unknown or revoked bearer token")
}

// interceptors establish the identity of each call (refusing those with
// none) and put it in the call's context.
func (a *authenticator) interceptors() []grpc.ServerOption {
	check := func(ctx context.Context, method string) (context.Context, error) {
		id, err := a.identify(ctx)
		if err != nil {
			from := "unknown"
			if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
				from = p.Addr.String()
			}
			if u, ok := peerInfo(ctx); ok {
				from = u
			}
			a.rl.Warn(a.log, "api: call refused", "method", inof.Truncate(method, 128), "peer", from,
				"err", inof.Truncate(status.Convert(err).Message(), 256))
			return nil, err
		}
		return WithIdentity(ctx, id), nil
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		ctx, err := check(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
		ctx, err := check(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return next(srv, &identityStream{ServerStream: ss, ctx: ctx})
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// peerInfo describes a unix caller for logs.
func peerInfo(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	if u, ok := p.AuthInfo.(unixPeer); ok {
		return fmt.Sprintf("unix uid=%d gid=%d pid=%d", u.uid, u.gid, u.pid), true
	}
	return "", false
}

// identityStream is a stream whose context carries the identity.
type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }

// adminCheck is the check every call that changes the fabric makes
// before it changes anything: the parts of the server that take such
// calls each hold one.
type adminCheck struct {
	log    *slog.Logger
	events *Feed // refusals are published here
}

// require refuses a change by an identity that may only read, and logs
// (and publishes) the refusal.
func (s adminCheck) require(ctx context.Context, what string) error {
	id := IdentityFrom(ctx)
	if id.Role == RoleAdmin {
		return nil
	}
	s.log.Warn("api: change refused: the identity may only read", "identity", id.String(), "role", string(id.Role),
		"via", id.Via, "change", what)
	s.events.Publish(Event{Kind: "access", Subject: id.String(), Message: fmt.Sprintf("%s refused to %s (%s)", what, id, id.Role),
		Attributes: map[string]string{"identity": id.String(), "role": string(id.Role), "via": id.Via}})
	return status.Errorf(codes.PermissionDenied, "%s: identity %s is a %s; only an admin may change the fabric", what, id, id.Role)
}

// tlsConfig is the TLS of the TCP listener: the server's certificate and,
// with a client CA, client certificates verified if given (callers without
// one authenticate with a token).
func tlsConfig(o ServeOptions) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("api: TLS: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if o.ClientCA != "" {
		if cfg.ClientCAs, err = apiclient.CertPool(o.ClientCA); err != nil {
			return nil, fmt.Errorf("api: client CA: %w", err)
		}
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}
