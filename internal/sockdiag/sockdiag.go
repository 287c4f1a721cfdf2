// Package sockdiag aborts TCP connections through the kernel's inet_diag
// socket destroy (SOCK_DESTROY, as `ss -K` does). The host agent uses it
// to push an NVMe/TCP path whose link died into error recovery at once:
// the kernel closes the socket, nvme-tcp's state-change callback sees
// TCP_CLOSE and starts error recovery, and native multipath requeues the
// path's in-flight I/O on a live sibling.
//
// It speaks sock_diag netlink itself (golang.org/x/sys/unix): one socket
// per call, a dump of just the TCP states asked for and without the
// per-socket TCP info (which the kernel reads under each socket's lock),
// and the destroys on the same socket, each naming the socket exactly (its
// cookie from the dump). IPv4 and IPv6.
//
// It needs CAP_NET_ADMIN for the destroy (not for List), inet_diag with
// tcp_diag loaded (modules inet_diag, tcp_diag) and
// CONFIG_INET_DIAG_DESTROY (Debian's kernels have it).
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Conn is one TCP connection.
type Conn struct {
	Local, Remote netip.AddrPort
	State         uint8 // TCP state (1 established, 2 syn-sent, ...)
	// id is the kernel's name of the socket (addresses, ports, bound
	// interface, cookie), as the dump gave it.
	id [sockIDLen]byte
}

// TCP states, as the kernel numbers them.
const (
	// StateSynSent is a connect waiting for the peer's answer.
	StateSynSent = 2
	stateListen  = 10
	stateMax     = 12
)

// States is a set of TCP states (bit 1<<state).
type States uint32

// Connections are every state but listening sockets.
const Connections = States((1<<stateMax - 1) &^ (1 << stateListen))

// Only is the set holding state s alone.
func Only(s uint8) States { return 1 << s }

// Without is the set without state s.
func (m States) Without(s uint8) States { return m &^ (1 << s) }

// List returns the TCP connections from local address src to dst:dport
// (dport 0 matches any port).
func List(src, dst netip.Addr, dport uint16) ([]Conn, error) {
	s, err := open()
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.list(src, dst, dport, Connections)
}

// Destroy aborts every TCP connection from src to dst:dport and returns
// how many it aborted; one that closed meanwhile is skipped. The error
// joins every failure.
func Destroy(src, dst netip.Addr, dport uint16) (int, error) {
	return DestroyStates(src, dst, dport, Connections)
}

// DestroyConnecting aborts only the connects from src to dst:dport that
// still wait for an answer (SYN_SENT): a blocking connect returns
// ECONNABORTED at once, established connections are left alone. The host
// agent uses it when a path's link is back: a reconnect attempt the kernel
// began while the link was down would otherwise wait out its SYN
// retransmissions.
func DestroyConnecting(src, dst netip.Addr, dport uint16) (int, error) {
	return DestroyStates(src, dst, dport, Only(StateSynSent))
}

// DestroyStates aborts the TCP connections from src to dst:dport in the
// given states and returns how many it aborted.
func DestroyStates(src, dst netip.Addr, dport uint16, states States) (int, error) {
	s, err := open()
	if err != nil {
		return 0, err
	}
	defer s.close()
	conns, err := s.list(src, dst, dport, states)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, c := range conns {
		err := s.destroy(c)
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

// The kernel's structures (include/uapi/linux/inet_diag.h): ports and
// addresses in network byte order, the rest in the host's.
const (
	nlmsgHdrLen  = 16 // struct nlmsghdr
	sockIDLen    = 48 // struct inet_diag_sockid
	reqLen       = 8 + sockIDLen
	diagMsgLen   = 4 + sockIDLen + 20 // struct inet_diag_msg
	recvBufBytes = 64 << 10
)

var seq atomic.Uint32

// sock is one sock_diag netlink socket.
type sock struct{ fd int }

func open() (*sock, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sockdiag: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sockdiag: bind netlink socket: %w", err)
	}
	return &sock{fd: fd}, nil
}

func (s *sock) close() { unix.Close(s.fd) }

// send sends one request of type typ with payload and returns its
// sequence number.
func (s *sock) send(typ, flags uint16, payload []byte) (uint32, error) {
	n := seq.Add(1)
	b := make([]byte, nlmsgHdrLen+len(payload))
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(b[8:], n)
	copy(b[nlmsgHdrLen:], payload)
	if err := unix.Sendto(s.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	return n, nil
}

// receive reads the answers to request n and calls fn with each message
// payload until the dump's end, or the ACK's; an error message is
// returned as its errno.
func (s *sock) receive(n uint32, fn func(payload []byte)) error {
	buf := make([]byte, recvBufBytes)
	for {
		k, _, err := unix.Recvfrom(s.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		for b := buf[:k]; len(b) >= nlmsgHdrLen; {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			if l < nlmsgHdrLen || l > len(b) {
				return fmt.Errorf("netlink message of %d bytes in %d", l, len(b))
			}
			typ, mseq, data := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint32(b[8:]), b[nlmsgHdrLen:l]
			b = b[min(len(b), (l+3)&^3):]
			if mseq != n {
				continue
			}
			switch typ {
			case unix.NLMSG_DONE:
				return nil
			case unix.NLMSG_ERROR:
				if len(data) < 4 {
					return errors.New("short netlink error message")
				}
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return unix.Errno(-e)
				}
				return nil // the ACK
			default:
				fn(data)
			}
		}
	}
}

// list dumps the TCP sockets of src's family in the given states and keeps
// those from src to dst:dport.
func (s *sock) list(src, dst netip.Addr, dport uint16, states States) ([]Conn, error) {
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() != dst.Is4() {
		return nil, fmt.Errorf("sockdiag: %s and %s are of different families", src, dst)
	}
	family := uint8(unix.AF_INET6)
	if src.Is4() {
		family = unix.AF_INET
	}
	req := make([]byte, reqLen)
	req[0], req[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], uint32(states))
	n, err := s.send(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP, req)
	if err != nil {
		return nil, fmt.Errorf("sockdiag: dump TCP sockets: %w", err)
	}
	var out []Conn
	err = s.receive(n, func(p []byte) {
		if len(p) < diagMsgLen {
			return
		}
		c := Conn{State: p[1]}
		copy(c.id[:], p[4:4+sockIDLen])
		c.Local = netip.AddrPortFrom(addrOf(family, c.id[4:20]), binary.BigEndian.Uint16(c.id[0:]))
		c.Remote = netip.AddrPortFrom(addrOf(family, c.id[20:36]), binary.BigEndian.Uint16(c.id[2:]))
		if c.Local.Addr() == src && c.Remote.Addr() == dst && (dport == 0 || c.Remote.Port() == dport) {
			out = append(out, c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sockdiag: dump TCP sockets: %w", err)
	}
	return out, nil
}

// addrOf reads an inet_diag address field (16 bytes, IPv4 in the first 4).
func addrOf(family uint8, b []byte) netip.Addr {
	if family == unix.AF_INET {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16([16]byte(b[:16]))
}

// destroy aborts the socket c names exactly (its cookie included).
func (s *sock) destroy(c Conn) error {
	req := make([]byte, reqLen)
	req[0], req[1] = unix.AF_INET6, unix.IPPROTO_TCP
	if c.Local.Addr().Is4() {
		req[0] = unix.AF_INET
	}
	binary.NativeEndian.PutUint32(req[4:], uint32(Connections))
	copy(req[8:], c.id[:])
	n, err := s.send(unix.SOCK_DESTROY, unix.NLM_F_ACK, req)
	if err != nil {
		return err
	}
	return s.receive(n, func([]byte) {})
}
