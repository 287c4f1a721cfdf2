//go:build linux

package l2proto

import (
	"net"
	"os"
	"syscall"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

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
