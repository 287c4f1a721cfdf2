//go:build linux

package l2proto

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// PacketLink is a Link on an AF_PACKET socket bound to one interface.
//
// It binds with ETH_P_ALL and a BPF filter that keeps only 0x88CC and 0x88A7
// frames the interface received (not those it sent). Binding to one
// EtherType instead would miss unicast frames on a bridge port, which the
// bridge consumes first (docs/design.md §4). It joins both protocol group addresses.
type PacketLink struct {
	conn   *packet.Conn
	ifi    *net.Interface
	closed atomic.Bool
	rd     *packetReader // made by the first ReadFrame (reads are one at a time)
}

// packetFilter accepts received frames of the two protocol EtherTypes.
var packetFilter = mustAssemble([]bpf.Instruction{
	bpf.LoadExtension{Num: bpf.ExtType},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipTrue: 4},
	bpf.LoadAbsolute{Off: 12, Size: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(EtherTypeLLDP), SkipTrue: 1},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(EtherTypeNotify), SkipFalse: 1},
	bpf.RetConstant{Val: MaxFrameLen + 4},
	bpf.RetConstant{Val: 0},
})

func mustAssemble(prog []bpf.Instruction) []bpf.RawInstruction {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		panic(fmt.Sprintf("l2proto: BPF program: %v", err))
	}
	return raw
}

// ListenPacket opens a PacketLink on the named interface. It needs
// CAP_NET_RAW and opens the socket in the calling thread's network namespace.
func ListenPacket(ifname string) (*PacketLink, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("l2proto: interface %q: %w", ifname, err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, &packet.Config{Filter: packetFilter})
	if err != nil {
		return nil, fmt.Errorf("l2proto: packet socket on %s: %w", ifname, err)
	}
	if err := setRecvBuffer(conn, recvBufferBytes); err != nil {
		conn.Close()
		return nil, fmt.Errorf("l2proto: receive buffer on %s: %w", ifname, err)
	}
	for _, g := range []net.HardwareAddr{GroupNotify, GroupLLDP} {
		if err := conn.JoinGroup(g); err != nil {
			conn.Close()
			return nil, fmt.Errorf("l2proto: join %s on %s: %w", g, ifname, err)
		}
	}
	return &PacketLink{conn: conn, ifi: ifi}, nil
}

// recvBufferBytes lets a port absorb a burst of a few thousand frames (a
// garbage flood, many hosts registering at once) without kernel drops.
const recvBufferBytes = 4 << 20

// setRecvBuffer sets SO_RCVBUF, beyond net.core.rmem_max when privileged.
func setRecvBuffer(conn *packet.Conn, n int) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n); serr != nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, n)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// ReadFrame implements Link. It allocates nothing per frame.
func (l *PacketLink) ReadFrame(buf []byte) (int, error) {
	var n int
	var err error
	if l.rd == nil {
		l.rd, err = newPacketReader(l.conn)
	}
	if err == nil {
		n, err = l.rd.readFrame(buf)
	}
	if err != nil && l.closed.Load() {
		err = &net.OpError{Op: "read", Net: "packet", Err: net.ErrClosed}
	}
	return n, err
}

// KernelDrops returns how many frames the kernel dropped for this socket
// because its receive buffer was full, since the last call.
func (l *PacketLink) KernelDrops() (uint32, error) {
	st, err := l.conn.Stats()
	if err != nil {
		return 0, err
	}
	return st.Drops, nil
}

// WriteFrame implements Link.
func (l *PacketLink) WriteFrame(frame []byte) error {
	if len(frame) < ethHeaderLen {
		return fmt.Errorf("l2proto: frame of %d bytes: %w", len(frame), ErrShort)
	}
	_, err := l.conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])})
	return err
}

// HardwareAddr implements Link.
func (l *PacketLink) HardwareAddr() net.HardwareAddr { return l.ifi.HardwareAddr }

// Name implements Link.
func (l *PacketLink) Name() string { return l.ifi.Name }

// Close implements Link.
func (l *PacketLink) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	return l.conn.Close()
}

// packetReader reads frames with read(2) through the socket's RawConn (the
// runtime poller waits), allocating nothing per frame: packet.Conn.ReadFrom
// returns the sender's address, which costs several allocations a frame and
// which a Link does not report. Its read function is made once; the buffer
// and the result pass through its fields, so one goroutine at a time may
// use it, as Link allows for reads.
type packetReader struct {
	rc   syscall.RawConn
	read func(fd uintptr) bool
	buf  []byte
	n    int
	err  error
}

func newPacketReader(conn *packet.Conn) (*packetReader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &packetReader{rc: rc}
	r.read = r.readFD
	return r, nil
}

// readFD is the RawConn read function: false asks the poller to wait.
func (r *packetReader) readFD(fd uintptr) bool {
	for {
		n, err := unix.Read(int(fd), r.buf)
		switch err {
		case nil:
			r.n, r.err = n, nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.err = 0, &net.OpError{Op: "read", Net: "packet", Err: os.NewSyscallError("read", err)}
		return true
	}
}

// readFrame reads one frame into buf, truncating it to len(buf) as
// recvfrom(2) does.
func (r *packetReader) readFrame(buf []byte) (int, error) {
	r.buf = buf
	err := r.rc.Read(r.read)
	r.buf = nil
	if err != nil {
		return 0, err
	}
	return r.n, r.err
}
