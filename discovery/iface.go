package discovery

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// ifaceGate decides which connections the controller serves when it is
// not open to every interface (Options.AnyInterface): one made to an
// address of an access port, or of the bridge an access port is a member
// of, from a source inside that address's prefix, i.e. from a host on
// that segment. A connection from the switch itself (loopback) is served;
// one that is not TCP (a pipe in tests) is not judged. The prefixes are
// read from the kernel at most once a second.
type ifaceGate struct {
	mu       sync.Mutex
	names    []string
	prefixes []netip.Prefix
	read     time.Time
	now      func() time.Time
	addrs    func(names []string) []netip.Prefix
}

func newIfaceGate(names []string) *ifaceGate {
	return &ifaceGate{names: names, now: time.Now, addrs: interfacePrefixes}
}

// set replaces the interfaces (the switch's access ports, on a reload).
func (g *ifaceGate) set(names []string) {
	g.mu.Lock()
	g.names, g.read = append([]string(nil), names...), time.Time{}
	g.mu.Unlock()
}

// allows reports whether a connection from remote to local is served.
func (g *ifaceGate) allows(local, remote net.Addr) bool {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return true
	}
	la, ra := l.AddrPort().Addr().Unmap(), r.AddrPort().Addr().Unmap()
	if ra.IsLoopback() && la.IsLoopback() {
		return true
	}
	g.mu.Lock()
	if now := g.now(); now.Sub(g.read) >= time.Second {
		g.prefixes, g.read = g.addrs(g.names), now
	}
	ps := g.prefixes
	g.mu.Unlock()
	for _, p := range ps {
		if p.Addr() == la && p.Contains(ra) {
			return true
		}
	}
	return false
}

// interfacePrefixes returns the addresses (with their prefixes) of the
// named interfaces and of the bridges they are members of.
func interfacePrefixes(names []string) []netip.Prefix {
	var out []netip.Prefix
	seen := map[int]bool{}
	add := func(ifi *net.Interface) {
		if seen[ifi.Index] {
			return
		}
		seen[ifi.Index] = true
		as, err := ifi.Addrs()
		if err != nil {
			return
		}
		for _, a := range as {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			ones, _ := n.Mask.Size()
			ip = ip.Unmap()
			if ip.Is4() && ones > 32 {
				ones -= 96
			}
			out = append(out, netip.PrefixFrom(ip, ones))
		}
	}
	var master map[int]int
	read := false
	for _, name := range names {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			continue // not there (yet): nothing of it is served
		}
		add(ifi)
		if !read {
			master, read = masters(), true
		}
		if m, ok := master[ifi.Index]; ok {
			if mi, err := net.InterfaceByIndex(m); err == nil {
				add(mi)
			}
		}
	}
	return out
}
