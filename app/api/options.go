package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
)

// Options say, in a daemon's configuration (key "api"), where the gRPC
// admin API is served.
type Options struct {
	// Socket is the unix socket (mode 0600, 0660 with SocketGroup); empty
	// disables it.
	Socket string `yaml:"socket"`
	// SocketGroup may connect to the socket too (docs/security.md).
	SocketGroup string `yaml:"socket_group"`
	// UnixIdentities map local users and groups to identities and roles
	// (root is always an admin).
	UnixIdentities []UnixIdentity `yaml:"unix_identities"`
	// Listen is a TCP address for remote clients; empty disables it. It
	// needs TLSCert, TLSKey, and client certificates (ClientCA with
	// Clients), a tokens file or the shared token file.
	Listen  string `yaml:"listen"`
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// ClientCA verifies client certificates; Clients allows subjects.
	ClientCA string         `yaml:"client_ca"`
	Clients  []CertIdentity `yaml:"clients"`
	// TokensFile holds named tokens (their SHA-256) with roles.
	TokensFile string `yaml:"tokens_file"`
	// TokenFile holds one token shared by every remote admin.
	TokenFile string `yaml:"token_file"`
	// ConsoleListen is a TCP address for the web console (HTTPS, /ui/,
	// docs/console.md) with the TLS and the remote identities of Listen;
	// empty disables it. Only a reflector serves it.
	ConsoleListen string `yaml:"console_listen"`
}

// Enabled reports whether the API is served at all.
func (o Options) Enabled() bool { return o.Socket != "" || o.Listen != "" || o.ConsoleListen != "" }

// Validate reports every problem, joined, naming the keys under "api.".
func (o Options) Validate() error {
	var errs []error
	errs = append(errs, o.remote("api.listen", o.Listen, "no plaintext or unauthenticated remote access")...)
	errs = append(errs, o.remote("api.console_listen", o.ConsoleListen, "the console is never served in plaintext nor to anyone")...)
	if (o.ClientCA == "") != (len(o.Clients) == 0) {
		errs = append(errs, errors.New("api.client_ca and api.clients go together"))
	}
	for i, u := range o.UnixIdentities {
		if (u.User == "") == (u.Group == "") {
			errs = append(errs, fmt.Errorf("api.unix_identities[%d]: set exactly one of user and group", i))
		}
		if !u.Role.valid() {
			errs = append(errs, fmt.Errorf("api.unix_identities[%d].role %q: want admin or viewer", i, u.Role))
		}
	}
	for i, c := range o.Clients {
		if c.Subject == "" || !c.Role.valid() {
			errs = append(errs, fmt.Errorf("api.clients[%d]: want a subject and a role (admin or viewer)", i))
		}
	}
	return errors.Join(errs...)
}

// remote checks a TCP listener's address (key, "" when off) and that TLS
// and remote identities are configured for it.
func (o Options) remote(key, addr, why string) []error {
	if addr == "" {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(addr); err != nil {
		errs = append(errs, fmt.Errorf("%s %q: want host:port", key, addr))
	}
	if o.TLSCert == "" || o.TLSKey == "" || (o.TokenFile == "" && o.TokensFile == "" && o.ClientCA == "") {
		errs = append(errs, fmt.Errorf("%s: needs api.tls_cert, api.tls_key and a way to tell callers apart: "+
			"api.client_ca with api.clients, api.tokens_file or api.token_file (%s)", key, why))
	}
	return errs
}

// ServeOptions returns the server options for these settings.
func (o Options) ServeOptions(readOnly bool, events *Feed, log *slog.Logger) ServeOptions {
	return ServeOptions{Socket: o.Socket, SocketGroup: o.SocketGroup, UnixIdentities: o.UnixIdentities,
		Listen: o.Listen, TLSCertFile: o.TLSCert, TLSKeyFile: o.TLSKey, ClientCA: o.ClientCA, Clients: o.Clients,
		TokensFile: o.TokensFile, TokenFile: o.TokenFile, ReadOnly: readOnly, Events: events, Logger: log,
		ConsoleListen: o.ConsoleListen}
}
