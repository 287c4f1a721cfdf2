package bfd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// network opens the sockets of a Manager: UDP in production (udpNetwork),
// an in-memory network in tests.
type network interface {
	// listen opens the receive socket of port 3784 on a local address
	// (and interface, if named).
	listen(rk recvKey) (packetConn, error)
	// sendSocket opens the send socket of a local address (and interface,
	// if named), shared by its sessions: one source port in
	// 49152-65535, TTL 255.
	sendSocket(rk recvKey) (sendConn, error)
}

// inPacket is one received datagram: buf is the buffer to read into, n
// the length read, src and dst its addresses, ttl its TTL (-1 when
// unknown).
type inPacket struct {
	buf      []byte
	n        int
	src, dst netip.Addr
	ttl      int
}

// packetConn is a receive socket.
type packetConn interface {
	// readBatch blocks until at least one packet is there, then reads as
	// many as wait, up to len(ms), and returns how many it read. After
	// Close it returns an error wrapping net.ErrClosed.
	readBatch(ms []inPacket) (int, error)
	// pending says whether packets wait in the socket, not read yet.
	pending() bool
	Close() error
}

// outPacket is one control packet to send to a peer's port 3784.
type outPacket struct {
	b    [PacketLen]byte
	peer netip.Addr
}

// sendConn is a local address's send socket.
type sendConn interface {
	// send sends the packets, in one system call where it can. A lost
	// packet is what BFD is built to tolerate: the error is only
	// informative.
	send(ps []outPacket) error
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
	return &udpReceiver{pc: pc, c: c.(*net.UDPConn)}, nil
}

// udpReceiver reads with recvmmsg: every packet that waits in the socket
// in one system call. Only the socket's receive loop calls readBatch.
type udpReceiver struct {
	pc   *ipv4.PacketConn
	c    *net.UDPConn
	msgs []ipv4.Message
}

// pending asks the kernel for the size of the next datagram queued
// (SIOCINQ): non-zero while one waits.
func (r *udpReceiver) pending() bool {
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

func (r *udpReceiver) readBatch(ms []inPacket) (int, error) {
	for len(r.msgs) < len(ms) {
		r.msgs = append(r.msgs, ipv4.Message{Buffers: make([][]byte, 1), OOB: ipv4.NewControlMessage(ipv4.FlagTTL | ipv4.FlagDst)})
	}
	msgs := r.msgs[:len(ms)]
	for i := range msgs {
		msgs[i].Buffers[0] = ms[i].buf
		msgs[i].OOB = msgs[i].OOB[:cap(msgs[i].OOB)]
		msgs[i].Addr = nil
	}
	n, err := r.pc.ReadBatch(msgs, 0)
	if err != nil {
		return 0, err
	}
	for i := range msgs[:n] {
		p := &ms[i]
		p.n = msgs[i].N
		p.ttl, p.dst = parseControl(msgs[i].OOB[:msgs[i].NN])
		p.src = netip.Addr{}
		if ua, ok := msgs[i].Addr.(*net.UDPAddr); ok {
			p.src, _ = netip.AddrFromSlice(ua.IP)
			p.src = p.src.Unmap()
		}
	}
	return n, nil
}

// parseControl reads the TTL (IP_TTL; -1 when absent) and the destination
// address (IP_PKTINFO) from a received packet's control messages, without
// allocating.
func parseControl(b []byte) (ttl int, dst netip.Addr) {
	ttl = -1
	hdr := unix.CmsgLen(0)
	for len(b) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdr || l > len(b) {
			break
		}
		data := b[hdr:l]
		if h.Level == unix.IPPROTO_IP {
			switch {
			case h.Type == unix.IP_TTL && len(data) >= 4:
				ttl = int(binary.NativeEndian.Uint32(data))
			case h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
				// struct in_pktinfo: ifindex, spec_dst, addr (the header's
				// destination).
				dst = netip.AddrFrom4([4]byte(data[8:12]))
			}
		}
		next := unix.CmsgSpace(l - hdr)
		if next > len(b) {
			break
		}
		b = b[next:]
	}
	return ttl, dst
}

func (r *udpReceiver) Close() error { return r.pc.Close() }

// sendSocket opens a local address's send socket on a free source port in
// 49152-65535 with TTL 255.
func (udpNetwork) sendSocket(rk recvKey) (sendConn, error) {
	start := srcPortMin + rand.IntN(srcPortMax-srcPortMin+1)
	for i := 0; i <= srcPortMax-srcPortMin; i++ {
		port := srcPortMin + (start-srcPortMin+i)%(srcPortMax-srcPortMin+1)
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			return controlSocket(c, rk.iface, 255)
		}}
		c, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(rk.local, uint16(port)).String())
		if err == nil {
			return &udpSender{c: c.(*net.UDPConn), pc: ipv4.NewPacketConn(c)}, nil
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("bfd: send socket on %s: %w", rk.local, err)
		}
	}
	return nil, fmt.Errorf("bfd: send socket on %s: no free source port", rk.local)
}

// udpSender sends with sendmmsg: a batch of packets in one system call.
type udpSender struct {
	c  *net.UDPConn
	pc *ipv4.PacketConn

	mu    sync.Mutex // msgs and addrs are reused from one send to the next
	msgs  []ipv4.Message
	addrs []net.UDPAddr
}

func (s *udpSender) send(ps []outPacket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.msgs) < len(ps) {
		s.msgs = append(s.msgs, ipv4.Message{Buffers: make([][]byte, 1)})
		s.addrs = append(s.addrs, net.UDPAddr{IP: make(net.IP, 4), Port: Port})
	}
	all := s.msgs[:len(ps)]
	for i := range ps {
		a := &s.addrs[i]
		ip := ps[i].peer.As4()
		copy(a.IP, ip[:])
		all[i].Buffers[0] = ps[i].b[:]
		all[i].Addr = a
	}
	var err error
	for rest := all; len(rest) > 0; {
		var n int
		if n, err = s.pc.WriteBatch(rest, 0); err != nil {
			break
		}
		rest = rest[n:]
	}
	for i := range all {
		all[i].Buffers[0], all[i].Addr = nil, nil // hold no caller's buffer
	}
	return err
}

func (s *udpSender) Close() error { return s.c.Close() }

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
