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
	// Socket is the unix socket (mode 0600); empty disables it.
	Socket string `yaml:"socket"`
	// Listen is a TCP address for remote clients; empty disables it. It
	// needs TLSCert, TLSKey and TokenFile.
	Listen    string `yaml:"listen"`
	TLSCert   string `yaml:"tls_cert"`
	TLSKey    string `yaml:"tls_key"`
	TokenFile string `yaml:"token_file"`
}

// Enabled reports whether the API is served at all.
func (o Options) Enabled() bool { return o.Socket != "" || o.Listen != "" }

// Validate reports every problem, joined, naming the keys under "api.".
func (o Options) Validate() error {
	var errs []error
	if o.Listen != "" {
		if _, _, err := net.SplitHostPort(o.Listen); err != nil {
			errs = append(errs, fmt.Errorf("api.listen %q: want host:port", o.Listen))
		}
		if o.TLSCert == "" || o.TLSKey == "" || o.TokenFile == "" {
			errs = append(errs, errors.New("api.listen: needs api.tls_cert, api.tls_key and api.token_file (no plaintext or unauthenticated remote access)"))
		}
	}
	return errors.Join(errs...)
}

// ServeOptions returns the server options for these settings.
func (o Options) ServeOptions(readOnly bool, events *Feed, log *slog.Logger) ServeOptions {
	return ServeOptions{Socket: o.Socket, Listen: o.Listen, TLSCertFile: o.TLSCert, TLSKeyFile: o.TLSKey,
		TokenFile: o.TokenFile, ReadOnly: readOnly, Events: events, Logger: log}
}
