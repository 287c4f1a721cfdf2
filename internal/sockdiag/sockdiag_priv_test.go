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

	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CAP_NET_ADMIN) under CI")
		}
		t.Skip("needs root (CAP_NET_ADMIN)")
	}
}

// TestPrivDestroy: a real TCP connection on loopback is aborted by
// Destroy: the kernel closes it and the client's read fails with
// ECONNABORTED; a connection to another port is left alone.
func TestPrivDestroy(t *testing.T) {
	requireRoot(t)
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
}

// TestPrivDestroyIPv6: the same on IPv6 loopback.
func TestPrivDestroyIPv6(t *testing.T) {
	requireRoot(t)
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c, err := net.Dial("tcp6", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lo := netip.MustParseAddr("::1")
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	if n, err := Destroy(lo, lo, port); n != 1 || err != nil {
		t.Fatalf("destroy: %d, %v; want the client's connection", n, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNABORTED) {
		t.Fatalf("read on the aborted connection: %v, want ECONNABORTED", err)
	}
}

// TestPrivDestroyConnecting: a connect that waits for an answer (SYN_SENT:
// the listener's accept queue is full, so it drops the SYN) is aborted by
// DestroyConnecting and fails with ECONNABORTED at once; the established
// connection to the same port is left alone.
func TestPrivDestroyConnecting(t *testing.T) {
	requireRoot(t)
	lo := netip.MustParseAddr("127.0.0.1")
	// A listener with a backlog of 0 that never accepts: its queue holds
	// one connection, after which it drops SYNs.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: lo.As4()}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(sa.(*unix.SockaddrInet4).Port)
	addr := netip.AddrPortFrom(lo, port).String()
	est, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { est.Close() })
	dialed := make(chan error, 1)
	go func() {
		c, err := net.DialTimeout("tcp4", addr, time.Minute)
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	// Wait until the second connect is in SYN_SENT.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conns, err := List(lo, lo, port)
		if err != nil {
			t.Fatal(err)
		}
		syn := 0
		for _, c := range conns {
			if c.State == StateSynSent {
				syn++
			}
		}
		if syn == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connect in SYN_SENT: %+v", conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := DestroyConnecting(lo, lo, port)
	if err != nil || n != 1 {
		t.Fatalf("DestroyConnecting: %d, %v; want the waiting connect aborted", n, err)
	}
	select {
	case err := <-dialed:
		if !errors.Is(err, syscall.ECONNABORTED) {
			t.Fatalf("the waiting connect: %v, want ECONNABORTED", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting connect did not return after its abort")
	}
	est.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := est.Read(make([]byte, 1)); !os.IsTimeout(err) {
		t.Fatalf("the established connection: %v, want it open (a read timeout)", err)
	}
}
