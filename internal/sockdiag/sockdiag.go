// Package sockdiag aborts TCP connections through the kernel's inet_diag
// socket destroy (SOCK_DESTROY, as `ss -K` does). The host agent uses it
// to push an NVMe/TCP path whose link died into error recovery at once:
// the kernel closes the socket, nvme-tcp's state-change callback sees
// TCP_CLOSE and starts error recovery, and native multipath requeues the
// path's in-flight I/O on a live sibling.
//
// It needs CAP_NET_ADMIN, inet_diag with tcp_diag loaded (modules
// inet_diag, tcp_diag) and CONFIG_INET_DIAG_DESTROY (Debian's kernels have
// it). Only IPv4 is supported: the netlink library's destroy request is
// IPv4 only.
package sockdiag

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ErrIPv6 is returned for IPv6 addresses, which Destroy cannot abort.
var ErrIPv6 = errors.New("sockdiag: IPv6 sockets cannot be destroyed (IPv4 only)")

// Conn is one TCP connection.
type Conn struct {
	Local, Remote netip.AddrPort
	State         uint8 // TCP state (1 established, 2 syn-sent, ...)
}

// StateSynSent is the TCP state of a connect waiting for the peer's
// answer (the kernel's TCP_SYN_SENT).
const StateSynSent = 2

// List returns the IPv4 TCP connections from local address src to
// dst:dport (dport 0 matches any port).
func List(src, dst netip.Addr, dport uint16) ([]Conn, error) {
	if src.Is6() && !src.Is4In6() || dst.Is6() && !dst.Is4In6() {
		return nil, ErrIPv6
	}
	src, dst = src.Unmap(), dst.Unmap()
	socks, err := netlink.SocketDiagTCP(unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("sockdiag: dump TCP sockets: %w", err)
	}
	var out []Conn
	for _, s := range socks {
		l, lok := netip.AddrFromSlice(s.ID.Source.To4())
		r, rok := netip.AddrFromSlice(s.ID.Destination.To4())
		if !lok || !rok || l != src || r != dst || dport != 0 && s.ID.DestinationPort != dport {
			continue
		}
		out = append(out, Conn{Local: netip.AddrPortFrom(l, s.ID.SourcePort),
			Remote: netip.AddrPortFrom(r, s.ID.DestinationPort), State: s.State})
	}
	return out, nil
}

// Destroy aborts every TCP connection from src to dst:dport and returns
// how many it aborted; one that closed meanwhile is skipped. The error
// joins every failure.
func Destroy(src, dst netip.Addr, dport uint16) (int, error) {
	return destroy(src, dst, dport, func(Conn) bool { return true })
}

// DestroyConnecting aborts only the connects from src to dst:dport that
// still wait for an answer (SYN_SENT): a blocking connect returns
// ECONNABORTED at once, established connections are left alone. The host
// agent uses it when a path's link is back: a reconnect attempt the kernel
// began while the link was down would otherwise wait out its SYN
// retransmissions.
func DestroyConnecting(src, dst netip.Addr, dport uint16) (int, error) {
	return destroy(src, dst, dport, func(c Conn) bool { return c.State == StateSynSent })
}

func destroy(src, dst netip.Addr, dport uint16, match func(Conn) bool) (int, error) {
	conns, err := List(src, dst, dport)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range conns {
		if !match(c) {
			continue
		}
		err := netlink.SocketDestroy(net.TCPAddrFromAddrPort(c.Local), net.TCPAddrFromAddrPort(c.Remote))
		if errors.Is(err, unix.ENOENT) {
			continue // closed between the dump and the destroy
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sockdiag: destroy %s → %s: %w", c.Local, c.Remote, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
