package bgp

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestStalled(t *testing.T) {
	const keep = 3 * time.Second
	for _, c := range []struct {
		name  string
		q     connQuiet
		keep  time.Duration
		stall bool
	}{
		{"fresh", connQuiet{sinceRecv: 10 * time.Millisecond}, keep, false},
		{"keepalive due", connQuiet{sinceRecv: keep + silenceMargin}, keep, false},
		{"keepalives missed", connQuiet{sinceRecv: keep + silenceMargin + time.Millisecond}, keep, true},
		{"no keepalives agreed", connQuiet{sinceRecv: time.Hour}, 0, false},
		{"sent just now, not yet acknowledged", connQuiet{unacked: true, sinceSent: 5 * time.Millisecond}, keep, false},
		{"sent long ago, not acknowledged", connQuiet{unacked: true, sinceSent: unackedLimit}, keep, true},
		{"sent long ago, acknowledged", connQuiet{sinceSent: time.Hour}, keep, false},
	} {
		if why := stalled(c.q, c.keep); (why != "") != c.stall {
			t.Errorf("%s: stalled = %q, want stalled %v", c.name, why, c.stall)
		}
	}
}

// TestSessionQuietReadsOwnConnection: the kernel's view of a connection
// this process holds is found through /proc and read: data sent is
// acknowledged, data received is recent; a closed connection is gone.
func TestSessionQuietReadsOwnConnection(t *testing.T) {
	local, peer := netip.MustParseAddr("127.0.0.8"), netip.MustParseAddr("127.0.0.9")
	c, far := loopbackConn(t, local, peer)
	if _, err := far.Write([]byte("keepalive")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 9)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("keepalive")); err != nil {
		t.Fatal(err)
	}
	// Only the dialled side is connected to peer; the accepted one is
	// connected to local.
	deadline := time.Now().Add(10 * time.Second)
	for {
		qs, err := sessionQuiet(local, peer)
		if err != nil || len(qs) != 1 {
			t.Fatalf("sessionQuiet = %+v, %v; want one connection", qs, err)
		}
		if !qs[0].unacked {
			if qs[0].sinceRecv > time.Minute {
				t.Fatalf("data received just now read as %v ago", qs[0].sinceRecv)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("what was sent is never acknowledged: %+v", qs[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Close()
	if qs, err := sessionQuiet(local, peer); err != nil || len(qs) != 0 {
		t.Fatalf("after close: sessionQuiet = %+v, %v; want none", qs, err)
	}
}

// loopbackConn connects local to a listener on peer (loopback addresses)
// and returns both ends, closed when the test ends.
func loopbackConn(t *testing.T, local, peer netip.Addr) (near, far net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp4", netip.AddrPortFrom(peer, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(local, 0))}
	near, err = d.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	far = <-accepted
	t.Cleanup(func() { near.Close(); far.Close() })
	return near, far
}
