//go:build privileged

package echoprobe

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/netns"
)

// probeIn runs Probe inside ns (its socket is opened there).
func probeIn(t *testing.T, ns *netns.NS, o Options) (Result, error) {
	t.Helper()
	var r Result
	var perr error
	if err := ns.Do(func() error {
		r, perr = Probe(context.Background(), o)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return r, perr
}

// TestPrivProbe probes a real peer over a veth pair between two
// namespaces: a peer whose kernel answers is Answered; one whose kernel
// ignores echo requests, one whose link is down and one that does not
// exist are Silent.
func TestPrivProbe(t *testing.T) {
	a, b := netns.New(t, "echoa"), netns.New(t, "echob")
	netns.Veth(t, a, "a0", b, "b0")
	a.Addr("a0", "10.77.0.1/24")
	b.Addr("b0", "10.77.0.2/24")
	a.MustIP("-6", "addr", "add", "fd77::1/64", "dev", "a0", "nodad")
	b.MustIP("-6", "addr", "add", "fd77::2/64", "dev", "b0", "nodad")
	local, peer := netip.MustParseAddr("10.77.0.1"), netip.MustParseAddr("10.77.0.2")
	const timeout = 200 * time.Millisecond
	for _, p := range []netip.Addr{peer, netip.MustParseAddr("fd77::2")} {
		if r, err := probeIn(t, a, Options{Peer: p, Timeout: timeout}); err != nil || r != Answered {
			t.Fatalf("probe of live %s: %v, %v; want answered", p, r, err)
		}
	}
	if r, err := probeIn(t, a, Options{Local: local, Peer: peer, Timeout: timeout}); err != nil || r != Answered {
		t.Fatalf("probe from %s: %v, %v; want answered", local, r, err)
	}
	if r, err := probeIn(t, a, Options{Peer: netip.MustParseAddr("10.77.0.9"), Timeout: timeout}); err != nil || r != Silent {
		t.Fatalf("probe of an address nobody holds: %v, %v; want silent", r, err)
	}
	if out, err := b.Command("sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=1").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v: %s", err, out)
	}
	if r, err := probeIn(t, a, Options{Peer: peer, Timeout: timeout}); err != nil || r != Silent {
		t.Fatalf("probe of a peer that ignores echo: %v, %v; want silent", r, err)
	}
	if out, err := b.Command("sysctl", "-qw", "net.ipv4.icmp_echo_ignore_all=0").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v: %s", err, out)
	}
	b.MustIP("link", "set", "b0", "down")
	if r, err := probeIn(t, a, Options{Peer: peer, Timeout: timeout}); err != nil || r != Silent {
		t.Fatalf("probe over a link that is down: %v, %v; want silent", r, err)
	}
	if _, err := probeIn(t, a, Options{Peer: peer}); err == nil {
		t.Fatal("a probe without a timeout was made")
	}
}

// waitQueued waits until c's socket has a packet queued.
func waitQueued(t *testing.T, c *conn) {
	t.Helper()
	var perr error
	if err := c.rc.Control(func(fd uintptr) {
		for {
			_, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
			if !errors.Is(perr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if perr != nil {
		t.Fatal(perr)
	}
}

// TestPrivQueuedAnswer: an echo reply already queued in the probe's real
// socket when the window is over counts, though the goroutine runs after
// its read deadline (a read then reports a timeout without looking, which
// is why the probe's last look is queued and not a read); queued returns
// at once with nothing queued, and another probe's reply is not this
// one's.
func TestPrivQueuedAnswer(t *testing.T) {
	a, b := netns.New(t, "echoqa"), netns.New(t, "echoqb")
	netns.Veth(t, a, "a0", b, "b0")
	a.Addr("a0", "10.78.0.1/24")
	b.Addr("b0", "10.78.0.2/24")
	var c *conn
	if err := a.Do(func() (err error) {
		c, err = open(netip.Addr{}, netip.MustParseAddr("10.78.0.2"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.close()
	const id, otherID = 0x4a4a, 0x4b4b
	token, other := []byte("probe-01"), []byte("probe-02")

	if err := c.send(id, 0, token); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, c) // the only ICMP that reaches a0: the reply
	if ok, err := c.await(time.Now().Add(-time.Millisecond), id, token); err != nil || ok {
		t.Fatalf("a read past its deadline: %v, %v; Go's socket reads report a timeout without reading", ok, err)
	}
	if ok, err := c.queued(id, token); err != nil || !ok {
		t.Fatalf("queued with the reply queued and the read deadline past: %v, %v; want the answer", ok, err)
	}
	if ok, err := c.queued(id, token); err != nil || ok {
		t.Fatalf("queued with nothing queued: %v, %v; want none, at once", ok, err)
	}

	if err := c.send(otherID, 0, other); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, c)
	if ok, err := c.queued(id, token); err != nil || ok {
		t.Fatalf("queued with another probe's reply queued: %v, %v; want none", ok, err)
	}
}
