package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
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

	"github.com/openinof/inof/inof/api"
	"github.com/openinof/inof/inof/api/apiclient"
	"github.com/openinof/inof/inof/api/apitest"
	inofv1 "github.com/openinof/inof/inof/api/v1"
)

// tlsFiles writes a self-signed certificate for 127.0.0.1, its key and a
// token file (mode 0600) into dir.
func tlsFiles(t *testing.T, dir string) (cert, key, token string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "inofd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, token = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "token")
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	write(token, []byte("s3cret-token\n"))
	return cert, key, token
}

// tcpFabric serves on a unix socket and on TLS TCP with a token.
func tcpFabric(t *testing.T) (addr, sock, cert, token string) {
	t.Helper()
	dir := t.TempDir()
	cert, key, token := tlsFiles(t, dir)
	s, sock := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{
		Socket: filepath.Join(dir, "api.sock"), Listen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokenFile: token})
	return s.TCPAddr().String(), sock, cert, token
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
	cert, key, token := tlsFiles(t, dir)
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
