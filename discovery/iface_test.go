package discovery

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

func tcpAddr(s string) *net.TCPAddr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

// TestIfaceGate: only a connection to an access port's address from its
// segment (or from the switch itself) is served; the interfaces' addresses
// are read again after a second and after SetInterfaces.
func TestIfaceGate(t *testing.T) {
	now := time.Unix(1000, 0)
	reads := 0
	table := map[string][]netip.Prefix{
		"swp1": {netip.MustParsePrefix("10.0.1.1/24"), netip.MustParsePrefix("fd00:1::1/64")},
		"eth0": {netip.MustParsePrefix("192.168.0.2/24")},
	}
	g := newIfaceGate([]string{"swp1"})
	g.now = func() time.Time { return now }
	g.addrs = func(names []string) []netip.Prefix {
		reads++
		var out []netip.Prefix
		for _, n := range names {
			out = append(out, table[n]...)
		}
		return out
	}
	cases := []struct {
		local, remote string
		want          bool
	}{
		{"10.0.1.1:8009", "10.0.1.7:40000", true},
		{"[fd00:1::1]:8009", "[fd00:1::9]:40000", true},
		{"[::ffff:10.0.1.1]:8009", "[::ffff:10.0.1.7]:40000", true},
		{"10.0.1.1:8009", "192.168.0.9:40000", false},    // routed in from the management side
		{"192.168.0.2:8009", "192.168.0.9:40000", false}, // the management address
		{"127.0.0.1:8009", "127.0.0.1:40000", true},      // the switch itself
		{"10.0.1.1:8009", "127.0.0.1:40000", false},
	}
	for _, c := range cases {
		if got := g.allows(tcpAddr(c.local), tcpAddr(c.remote)); got != c.want {
			t.Errorf("%s → %s: %v, want %v", c.remote, c.local, got, c.want)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of the addresses within a second, want 1", reads)
	}
	g.set([]string{"swp1", "eth0"})
	if !g.allows(tcpAddr("192.168.0.2:8009"), tcpAddr("192.168.0.9:1")) {
		t.Error("an interface added by set is not served")
	}
	if p1, p2 := net.Pipe(); !g.allows(p1.LocalAddr(), p2.RemoteAddr()) {
		t.Error("a pipe is judged")
	}
}
