package bfd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// network opens the sockets of a Manager: UDP in production (udpNetwork),
// an in-memory network in tests.
type network interface {
	// listen opens the receive socket of port 3784 on a local address
	// (and interface, if named).
	listen(rk recvKey) (packetConn, error)
	// dial opens a session's send socket towards its peer.
	dial(k SessionKey) (sender, error)
}

// packetConn is a receive socket.
type packetConn interface {
	// readFrom reads one packet into b and returns its length, source and
	// destination addresses and TTL (-1 when unknown). After Close it
	// returns an error wrapping net.ErrClosed.
	readFrom(b []byte) (n int, src, dst netip.Addr, ttl int, err error)
	// pending says whether packets wait in the socket, not read yet.
	pending() bool
	Close() error
}

// sender is a session's send socket, connected in spirit to the peer's
// port 3784.
type sender interface {
	send(b []byte) error
	Close() error
}

// udpNetwork is the real network: sockets in the calling thread's network
// namespace.
type udpNetwork struct{}

func (udpNetwork) listen(rk recvKey) (packetConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		if err := controlSocket(c, rk.iface, 0); err != nil {
			return err
		}
		return c.Control(func(fd uintptr) { setRecvBuffer(int(fd)) })
	}}
	c, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(rk.local, Port).String())
	if err != nil {
		return nil, fmt.Errorf("bfd: listen %s:%d: %w", rk.local, Port, err)
	}
	pc := ipv4.NewPacketConn(c)
	if err := pc.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst, true); err != nil {
		c.Close()
		return nil, fmt.Errorf("bfd: receive TTL on %s: %w", rk.local, err)
	}
	return udpReceiver{pc, c.(*net.UDPConn)}, nil
}

type udpReceiver struct {
	pc *ipv4.PacketConn
	c  *net.UDPConn
}

// pending asks the kernel for the size of the next datagram queued
// (SIOCINQ): non-zero while one waits.
func (r udpReceiver) pending() bool {
	rc, err := r.c.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	if rc.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }) != nil {
		return false
	}
	return n > 0
}

func (r udpReceiver) readFrom(b []byte) (n int, src, dst netip.Addr, ttl int, err error) {
	n, cm, from, err := r.pc.ReadFrom(b)
	if err != nil {
		return 0, src, dst, 0, err
	}
	ttl = -1
	if cm != nil {
		ttl = cm.TTL
		dst, _ = netip.AddrFromSlice(cm.Dst)
	}
	if ua, ok := from.(*net.UDPAddr); ok {
		src, _ = netip.AddrFromSlice(ua.IP)
	}
	return n, src.Unmap(), dst.Unmap(), ttl, nil
}

func (r udpReceiver) Close() error { return r.pc.Close() }

// dial opens the session's UDP socket on a free source port in
// 49152-65535 with TTL 255.
func (udpNetwork) dial(k SessionKey) (sender, error) {
	peer := net.UDPAddrFromAddrPort(netip.AddrPortFrom(k.Peer, Port))
	start := srcPortMin + rand.IntN(srcPortMax-srcPortMin+1)
	for i := 0; i <= srcPortMax-srcPortMin; i++ {
		port := srcPortMin + (start-srcPortMin+i)%(srcPortMax-srcPortMin+1)
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			return controlSocket(c, k.Interface, 255)
		}}
		c, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(k.Local, uint16(port)).String())
		if err == nil {
			return udpSender{c.(*net.UDPConn), peer}, nil
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("bfd: send socket for %s: %w", k, err)
		}
	}
	return nil, fmt.Errorf("bfd: send socket for %s: no free source port", k)
}

type udpSender struct {
	c    *net.UDPConn
	peer *net.UDPAddr
}

func (s udpSender) send(b []byte) error {
	_, err := s.c.WriteToUDP(b, s.peer)
	return err
}

func (s udpSender) Close() error { return s.c.Close() }

// recvBuffer is the receive socket's buffer: every session of a local
// address shares the socket, and a reader that was not scheduled for a
// while must find its peers' packets there, not dropped (at the default
// ~200 KB, some 270 packets: 256 sessions at 100 ms overflow it within a
// tenth of a second).
const recvBuffer = 4 << 20

// setRecvBuffer asks for recvBuffer, beyond net.core.rmem_max where the
// process may (SO_RCVBUFFORCE needs CAP_NET_ADMIN), else up to it; a
// smaller buffer only costs packets, so failures are not errors.
func setRecvBuffer(fd int) {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, recvBuffer) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, recvBuffer)
	}
}

// controlSocket binds to an interface (if named) and sets the unicast TTL
// (if non-zero) before bind.
func controlSocket(c syscall.RawConn, iface string, ttl int) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if iface != "" {
			if serr = unix.BindToDevice(int(fd), iface); serr != nil {
				return
			}
		}
		if ttl != 0 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
