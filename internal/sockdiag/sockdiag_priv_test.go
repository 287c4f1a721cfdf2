//go:build privileged

package sockdiag

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestPrivDestroy: a real TCP connection on loopback is aborted by
// Destroy: the kernel closes it and the client's read fails with
// ECONNABORTED; a connection to another port is left alone.
func TestPrivDestroy(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CAP_NET_ADMIN) under CI")
		}
		t.Skip("needs root (CAP_NET_ADMIN)")
	}
	lo := netip.MustParseAddr("127.0.0.1")
	listen := func() (net.Listener, uint16) {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
			}
		}()
		return l, uint16(l.Addr().(*net.TCPAddr).Port)
	}
	_, port := listen()
	_, other := listen()
	dial := func(p uint16) net.Conn {
		c, err := net.Dial("tcp4", netip.AddrPortFrom(lo, p).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	victim, bystander := dial(port), dial(other)
	n, err := Destroy(lo, lo, port)
	if err != nil {
		t.Fatalf("destroy: %v (is tcp_diag available? CONFIG_INET_DIAG_DESTROY?)", err)
	}
	if n != 1 {
		t.Fatalf("aborted %d connections, want the client's one", n)
	}
	victim.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := victim.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNABORTED) {
		t.Fatalf("read on the aborted connection: %v, want ECONNABORTED", err)
	}
	bystander.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := bystander.Read(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("the other connection: %v, want it open (a read timeout)", err)
	}
	if _, err := Destroy(netip.MustParseAddr("::1"), netip.MustParseAddr("::1"), port); !errors.Is(err, ErrIPv6) {
		t.Fatalf("IPv6: %v, want ErrIPv6", err)
	}
}
