// Package testpki makes the certificates TLS tests need: a CA, server
// certificates for addresses, client certificates for names. Keys are
// ECDSA P-256, files PEM with mode 0600. For tests only.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority whose certificate is in File.
type CA struct {
	tb   testing.TB
	dir  string
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	File string
}

var serial atomic.Int64

// NewCA makes a CA named name; its files go to dir.
func NewCA(tb testing.TB, dir, name string) *CA {
	tb.Helper()
	k := newKey(tb)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{tb: tb, dir: dir, key: k, cert: c, File: filepath.Join(dir, name+".pem")}
	write(tb, ca.File, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// Server issues a server certificate for the IP addresses.
func (ca *CA) Server(name string, ips ...net.IP) (cert, key string) {
	ca.tb.Helper()
	return ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: name}, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, name)
}

// Client issues a client certificate whose subject's common name is cn.
func (ca *CA) Client(cn string) (cert, key string) {
	ca.tb.Helper()
	return ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, cn)
}

func (ca *CA) issue(tmpl *x509.Certificate, file string) (cert, key string) {
	k := newKey(ca.tb)
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		ca.tb.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		ca.tb.Fatal(err)
	}
	cert, key = filepath.Join(ca.dir, file+".crt"), filepath.Join(ca.dir, file+".key")
	write(ca.tb, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(ca.tb, key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	return cert, key
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func write(tb testing.TB, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
