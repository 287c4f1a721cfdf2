//go:build privileged

package hostagent

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/netns"
)

// TestPrivSysfsKernelRejoin: the real Rejoin on a real connect waiting for
// an answer (loopback, a listener whose full accept queue drops SYNs) and
// a sysfs tree in a directory. The waiting connect is aborted
// (ECONNABORTED) while the controller's reconnect_delay reads 0; when the
// next attempt has begun (the test dials again, as the kernel would), the
// delay is back to 1. A controller whose delay is "off" is left alone.
// Without a waiting connect nothing is touched.
func TestPrivSysfsKernelRejoin(t *testing.T) {
	netns.RequireRoot(t)
	root := t.TempDir()
	delay := func(dev string) string { return filepath.Join(root, "class", "nvme", dev, "reconnect_delay") }
	for dev, v := range map[string]string{"nvme0": "1\n", "nvme1": "off\n"} {
		os.MkdirAll(filepath.Dir(delay(dev)), 0o755)
		if err := os.WriteFile(delay(dev), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(dev string) string { b, _ := os.ReadFile(delay(dev)); return strings.TrimSpace(string(b)) }
	k := SysfsKernel{Root: root}
	lo := netip.MustParseAddr("127.0.0.1")

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
	sa, _ := unix.Getsockname(fd)
	port := uint16(sa.(*unix.SockaddrInet4).Port)
	addr := netip.AddrPortFrom(lo, port).String()

	if n, err := k.Rejoin(lo, lo, port, []string{"nvme0"}); n != 0 || err != nil || read("nvme0") != "1" {
		t.Fatalf("no connection on the path: %d, %v, delay %s; want nothing touched", n, err, read("nvme0"))
	}
	est, err := net.Dial("tcp4", addr) // fills the accept queue
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { est.Close() })
	type result struct {
		err   error
		delay string // reconnect_delay when the abort was seen
	}
	first := make(chan result, 1)
	go func() {
		c, err := net.DialTimeout("tcp4", addr, time.Minute)
		if err == nil {
			c.Close()
		}
		first <- result{err, read("nvme0")}
		// The next attempt, as the kernel's: it waits again (queue full).
		if c, err := net.DialTimeout("tcp4", addr, 30*time.Second); err == nil {
			c.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, err := k.Rejoin(lo, lo, port, []string{"nvme0", "nvme1"}); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connect never waited in SYN_SENT")
		}
	}
	r := <-first
	if !errors.Is(r.err, syscall.ECONNABORTED) || r.delay != "0" {
		t.Fatalf("the waiting connect: %v with reconnect_delay %q; want ECONNABORTED while it was 0", r.err, r.delay)
	}
	if d0, d1 := read("nvme0"), read("nvme1"); d0 != "1" || d1 != "off" {
		t.Fatalf("after Rejoin: reconnect_delay %q and %q, want 1 restored and off untouched", d0, d1)
	}
}
