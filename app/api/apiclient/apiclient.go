// Package apiclient dials the gRPC API of inofd. It holds only the client
// side (address forms, TLS, the bearer token), so that a short-lived
// command such as inofctl does not link, and initialize at every start,
// the server side of package api and everything that pulls in.
package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultSocket is where inofd serves the API and inofctl looks for it.
const DefaultSocket = "/run/inofd/api.sock"

// DialOptions say how a client reaches the API.
type DialOptions struct {
	// Server is "unix:///path/to.sock" (or a plain path) for the local
	// socket, or "host:port" for TLS with a bearer token.
	Server string
	// TokenFile holds the bearer token (TCP only).
	TokenFile string
	// CAFile holds the PEM certificates that verify the server (TCP only;
	// the system's roots if empty).
	CAFile string
	// ServerName overrides the name checked in the server's certificate.
	ServerName string
	// CertFile and KeyFile are a TLS client certificate and its key: the
	// caller's identity when the server allows its subject (TCP only).
	CertFile, KeyFile string
}

// IsUnix reports whether server names a unix socket.
func IsUnix(server string) bool {
	return strings.HasPrefix(server, "unix:") || strings.HasPrefix(server, "/") || strings.HasPrefix(server, ".")
}

// Dial returns a client connection (connecting lazily, on the first call).
func Dial(o DialOptions) (*grpc.ClientConn, error) {
	if o.Server == "" {
		return nil, fmt.Errorf("api: no server address")
	}
	if IsUnix(o.Server) {
		target := o.Server
		if !strings.HasPrefix(target, "unix:") {
			target = "unix:" + target
		}
		return grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if o.TokenFile == "" && o.CertFile == "" {
		return nil, fmt.Errorf("api: %s is a TCP address: a client certificate or a token file is required", o.Server)
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, fmt.Errorf("api: a client certificate needs its key, and the key its certificate")
	}
	cfg := &tls.Config{ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("api: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if o.CAFile != "" {
		pool, err := CertPool(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("api: CA file: %w", err)
		}
		cfg.RootCAs = pool
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(cfg))}
	if o.TokenFile != "" {
		tok, err := ReadToken(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: string(tok)}))
	}
	return grpc.NewClient(o.Server, opts...)
}

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

// bearer sends the token with every call (over TLS only).
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// CertPool reads the PEM certificates of a file into a pool.
func CertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}
