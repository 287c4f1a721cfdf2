package api_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/internal/testpki"
)

// tlsFiles writes a CA (its certificate is what clients verify the server
// with), a server certificate for 127.0.0.1 signed by it, its key and a
// token file (mode 0600) into dir.
func tlsFiles(t *testing.T, dir string) (ca, cert, key, token string) {
	t.Helper()
	pki := testpki.NewCA(t, dir, "server-ca")
	cert, key = pki.Server("inofd", net.IPv4(127, 0, 0, 1))
	token = filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return pki.File, cert, key, token
}

// tcpFabric serves on a unix socket and on TLS TCP with a token.
func tcpFabric(t *testing.T) (addr, sock, ca, token string) {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key, token := tlsFiles(t, dir)
	s, sock := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{
		Socket: filepath.Join(dir, "api.sock"), Listen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokenFile: token})
	return s.TCPAddr().String(), sock, ca, token
}

func callWith(t *testing.T, addr string, opts ...grpc.DialOption) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = inofv1.NewFabricClient(conn).GetZoning(ctx, &inofv1.GetZoningRequest{})
	return err
}

type tokenCreds string

func (tok tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(tok)}, nil
}
func (tokenCreds) RequireTransportSecurity() bool { return true }

func TestTCPNeedsTLSAndToken(t *testing.T) {
	addr, _, cert, token := tcpFabric(t)
	pool := x509.NewCertPool()
	pemData, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pemData)
	tlsCreds := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))

	if err := callWith(t, addr, tlsCreds); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "no client certificate and no bearer token") {
		t.Errorf("TLS without a token: %v, want Unauthenticated", err)
	}
	if err := callWith(t, addr, tlsCreds, grpc.WithPerRPCCredentials(tokenCreds("wrong"))); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "unknown or revoked bearer token") {
		t.Errorf("TLS with a wrong token: %v, want Unauthenticated", err)
	}
	if err := callWith(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials())); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext TCP: %v, want the connection refused (Unavailable)", err)
	}
	if err := callWith(t, addr, tlsCreds, grpc.WithPerRPCCredentials(tokenCreds("s3cret-token"))); err != nil {
		t.Errorf("TLS with the token: %v", err)
	}
	// Health and reflection sit behind the token too.
	conn, err := grpc.NewClient(addr, tlsCreds)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("health without a token: %v", err)
	}
	// The client side of the package: Dial with the CA and the token file.
	c, err := apiclient.Dial(apiclient.DialOptions{Server: addr, TokenFile: token, CAFile: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := healthpb.NewHealthClient(c).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health with apiclient.Dial: %v", err)
	}
}

func TestUnixSocketMode(t *testing.T) {
	_, sock, _, _ := tcpFabric(t)
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, want a socket with 0600", sock, st.Mode())
	}
	c := dialUnix(t, sock)
	if _, err := c.GetZoning(context.Background(), &inofv1.GetZoningRequest{}); err != nil {
		t.Errorf("unix socket needs no token: %v", err)
	}
	// A second server cannot take over a socket that is in use.
	if _, err := api.NewServer(api.ServeOptions{Socket: sock}, apitest.NewBackend(t)); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("second server on a used socket: %v", err)
	}
}

func TestServeRefusesInsecureTCP(t *testing.T) {
	dir := t.TempDir()
	_, cert, key, token := tlsFiles(t, dir)
	b := apitest.NewBackend(t)
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]api.ServeOptions{
		"no TLS":                {Listen: "127.0.0.1:0", TokenFile: token},
		"no token":              {Listen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key},
		"token readable by all": {Listen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokenFile: token},
		"nothing to serve on":   {},
	} {
		if s, err := api.NewServer(opts, b); err == nil {
			s.Close()
			t.Errorf("%s: server started", name)
		}
	}
}
