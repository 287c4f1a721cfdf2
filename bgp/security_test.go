package bgp_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
)

// TestNoMultipathTCP guards go.mod's `godebug multipathtcp=0`: with MPTCP
// listeners (Go ≥ 1.24's default) GoBGP's TCP-MD5 and GTSM socket options
// fail and MD5 is silently not enforced.
func TestNoMultipathTCP(t *testing.T) {
	var lc net.ListenConfig
	if lc.MultipathTCP() {
		t.Fatal("listeners default to MPTCP: go.mod lost `godebug multipathtcp=0`")
	}
}

// sessionUp reports whether the client's session to the reflector reaches
// Established within d.
func sessionUp(t *testing.T, c, r *bgptest.Node, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ns, err := c.Neighbors(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ns {
			if s.Address == r.Addr && s.State == bgp.StateEstablished {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// pairWith connects a client to a reflector with per-side neighbor edits.
func pairWith(t *testing.T, r, c *bgptest.Node, rEdit, cEdit func(*bgp.Neighbor)) {
	t.Helper()
	rn := bgp.Neighbor{Address: c.Addr, Passive: true, RRClient: true}
	cn := bgp.Neighbor{Address: r.Addr, Port: r.Port, LocalAddress: c.Addr}
	rEdit(&rn)
	cEdit(&cn)
	if err := r.AddNeighbor(context.Background(), rn); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNeighbor(context.Background(), cn); err != nil {
		t.Fatal(err)
	}
}

func TestTCPMD5(t *testing.T) {
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	good := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	wrong := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{})
	none := bgptest.StartClient(t, bgptest.Addr("127.0.0.4"), bgp.Options{})
	secret := func(p string) func(*bgp.Neighbor) { return func(n *bgp.Neighbor) { n.Password = p } }
	pairWith(t, r, good, secret("s3cret"), secret("s3cret"))
	pairWith(t, r, wrong, secret("s3cret"), secret("other"))
	pairWith(t, r, none, secret("s3cret"), secret(""))
	if !sessionUp(t, good, r, 30*time.Second) {
		t.Fatal("matching MD5 passwords: session did not come up")
	}
	// Give the refused ones several connect retries; they must stay down.
	if sessionUp(t, wrong, r, 4*time.Second) {
		t.Fatal("mismatched MD5 password: session came up")
	}
	if sessionUp(t, none, r, time.Second) {
		t.Fatal("missing MD5 password: session came up")
	}
}

// TestGTSM: a reflector with GTSM accepts a client that sends TTL 255 and
// never one that sends the default TTL — not even for the first segments,
// which GoBGP alone would let through before it sets the minimum TTL on the
// accepted connection.
func TestGTSM(t *testing.T) {
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{TTLSecurity: true})
	both := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	plain := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{})
	gtsm := func(on bool) func(*bgp.Neighbor) { return func(n *bgp.Neighbor) { n.TTLSecurity = on } }
	pairWith(t, r, both, gtsm(true), gtsm(true))
	pairWith(t, r, plain, gtsm(true), gtsm(false))
	if err := r.AddNeighbor(context.Background(), bgp.Neighbor{Address: bgptest.Addr("127.0.0.9")}); err == nil {
		t.Fatal("a GTSM speaker took a neighbor without GTSM")
	}
	if !sessionUp(t, both, r, 30*time.Second) {
		t.Fatal("GTSM on both sides: session did not come up")
	}
	// The listener itself drops a SYN with the default TTL: the TCP
	// handshake never completes (without the listener's minimum TTL the
	// kernel would accept it and queue whatever the peer sends first).
	d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.8")}}
	if c, err := d.Dial("tcp", netip.AddrPortFrom(r.Addr, r.Port).String()); err == nil {
		c.Close()
		t.Fatal("a TCP connection with TTL 64 was accepted by a GTSM listener")
	}
	if sessionUp(t, plain, r, 4*time.Second) {
		t.Fatal("client without GTSM (TTL 64) reached a GTSM reflector")
	}
}
