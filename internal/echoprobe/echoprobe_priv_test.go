//go:build privileged

package echoprobe

import (
	"context"
	"net/netip"
	"testing"
	"time"

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
