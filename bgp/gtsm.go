package bgp

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// GoBGP sets IP_MINTTL on a passive session only after accept(), so
// segments that arrived before it (an OPEN, even UPDATEs) pass with any TTL.
// With Config.TTLSecurity the speaker closes that window: its listening
// sockets get IP_MINTTL 255 (IPV6_MINHOPCOUNT for IPv6), which the kernel
// applies to the SYN and everything after. GoBGP keeps its listeners to
// itself, so they are found among the process's descriptors by their bound
// address and port.

// protectListeners sets the minimum TTL on every listening TCP socket of
// this process bound to one of addrs (or any address) and port; it returns
// how many it protected.
func protectListeners(addrs []netip.Addr, port uint16) (int, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("bgp: list descriptors: %w", err)
	}
	n := 0
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			continue
		}
		var a netip.Addr
		var p int
		switch s := sa.(type) {
		case *unix.SockaddrInet4:
			a, p = netip.AddrFrom4(s.Addr), s.Port
		case *unix.SockaddrInet6:
			a, p = netip.AddrFrom16(s.Addr).Unmap(), s.Port
		default:
			continue
		}
		if p != int(port) || !listensOn(a, addrs) {
			continue
		}
		if sa6, ok := sa.(*unix.SockaddrInet6); ok && !netip.AddrFrom16(sa6.Addr).Is4In6() {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MINHOPCOUNT, 255)
		} else {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MINTTL, 255)
		}
		if err != nil {
			return n, fmt.Errorf("bgp: minimum TTL on listener %s:%d: %w", a, p, err)
		}
		n++
	}
	return n, nil
}

func listensOn(a netip.Addr, addrs []netip.Addr) bool {
	if a.IsUnspecified() || len(addrs) == 0 {
		return true
	}
	for _, x := range addrs {
		if x == a {
			return true
		}
	}
	return false
}
