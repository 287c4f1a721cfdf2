package api

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// The web console (app/console) is served on its own HTTPS listener,
// ServeOptions.ConsoleListen, with the TLS certificate and the remote
// identities of the TCP API: a client certificate listed in api.clients, or
// a token (named or shared) sent as a bearer token or as the password of the
// browser's login prompt (HTTP Basic; the user name is ignored). The
// console's handler calls the very implementation the gRPC API serves, with
// the request's identity in its context, so it gets the same answers and
// the same refusals.

// ConsoleHandler makes the console's handler from the API's implementation.
type ConsoleHandler func(inofv1.FabricServer) http.Handler

// listenConsole opens the console's HTTPS listener and its server.
func (s *Server) listenConsole(impl *server, auth *authenticator) error {
	o := s.opts
	if o.Console == nil {
		return errors.New("api: a console address without a console")
	}
	if o.TLSCertFile == "" || o.TLSKeyFile == "" || (o.TokenFile == "" && o.TokensFile == "" && o.ClientCA == "") {
		return errors.New("api: the console listener needs a TLS certificate, its key and client certificates or tokens")
	}
	cfg, err := tlsConfig(o)
	if err != nil {
		return err
	}
	l, err := listenTCP(o.ConsoleListen, "console", o)
	if err != nil {
		return fmt.Errorf("api: console: %w", err)
	}
	// No ReadTimeout nor WriteTimeout: the events page streams for as long
	// as it is open (net/http cancels a request when its read deadline
	// passes), and the console takes no request bodies.
	s.web = &http.Server{Handler: auth.httpHandler(o.Console(impl)), TLSConfig: cfg,
		ReadHeaderTimeout: handshakeTimeout, IdleTimeout: consoleIdleTimeout,
		MaxHeaderBytes: consoleMaxHeader, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	s.webLis = l
	return nil
}

// ConsoleAddr returns the console listener's address (nil without one).
func (s *Server) ConsoleAddr() net.Addr {
	if s.webLis == nil {
		return nil
	}
	return s.webLis.Addr()
}

// httpHandler establishes the identity of every request (refusing those
// with none, logged like refused calls) and puts it in the request's
// context.
func (a *authenticator) httpHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var chains [][]*x509.Certificate
		if r.TLS != nil {
			chains = r.TLS.VerifiedChains
		}
		authz := r.Header.Values("Authorization")
		if _, pw, ok := r.BasicAuth(); ok { // the browser's login prompt: the token is the password
			authz = []string{"Bearer " + pw}
		}
		id, err := a.remoteIdentity(chains, authz)
		if err != nil {
			msg := status.Convert(err).Message()
			a.rl.Warn(a.log, "api: console request refused", "method", inof.Truncate(r.Method, 16),
				"path", inof.Truncate(r.URL.Path, 128), "peer", r.RemoteAddr, "err", inof.Truncate(msg, 256))
			code := http.StatusUnauthorized
			switch status.Code(err) {
			case codes.PermissionDenied:
				code = http.StatusForbidden
			case codes.Unavailable:
				code = http.StatusServiceUnavailable
			default:
				w.Header().Set("WWW-Authenticate", `Basic realm="inof console (password: your API token)", charset="UTF-8"`)
			}
			http.Error(w, msg, code)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
	})
}
