package l2proto

import (
	"bytes"
	"net"
	"sync"
)

// Link sends and receives whole Ethernet frames (no FCS) on one port.
// Implementations are safe for one reader and any number of writers at once.
type Link interface {
	// ReadFrame blocks until a frame arrives and copies it into buf. After
	// Close it returns an error wrapping net.ErrClosed.
	ReadFrame(buf []byte) (int, error)
	// WriteFrame sends one frame; the destination is the frame's own.
	WriteFrame(frame []byte) error
	// HardwareAddr is the port's MAC address, the source of sent frames.
	HardwareAddr() net.HardwareAddr
	// Name is the port's interface name.
	Name() string
	// Close releases the link and unblocks ReadFrame.
	Close() error
}

// MemLink is one end of an in-memory point-to-point link for unit tests:
// what one end writes, the other reads, in order. A writer blocks while the
// peer's queue is full, so no frame is lost.
type MemLink struct {
	name string
	mac  net.HardwareAddr
	in   chan []byte
	peer *MemLink

	closeOnce sync.Once
	done      chan struct{}
}

// NewMemPair returns two ends of an in-memory link.
func NewMemPair(aName string, aMAC net.HardwareAddr, bName string, bMAC net.HardwareAddr) (*MemLink, *MemLink) {
	a := &MemLink{name: aName, mac: aMAC, in: make(chan []byte, 256), done: make(chan struct{})}
	b := &MemLink{name: bName, mac: bMAC, in: make(chan []byte, 256), done: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// ReadFrame implements Link.
func (l *MemLink) ReadFrame(buf []byte) (int, error) {
	select {
	case f := <-l.in:
		return copy(buf, f), nil
	case <-l.done:
		return 0, &net.OpError{Op: "read", Net: "mem", Err: net.ErrClosed}
	}
}

// WriteFrame implements Link.
func (l *MemLink) WriteFrame(frame []byte) error {
	select {
	case <-l.done:
		return &net.OpError{Op: "write", Net: "mem", Err: net.ErrClosed}
	default:
	}
	select {
	case l.peer.in <- bytes.Clone(frame):
		return nil
	case <-l.done:
		return &net.OpError{Op: "write", Net: "mem", Err: net.ErrClosed}
	case <-l.peer.done:
		return nil // the wire is cut: the frame is lost, as on a real link
	}
}

// HardwareAddr implements Link.
func (l *MemLink) HardwareAddr() net.HardwareAddr { return l.mac }

// Name implements Link.
func (l *MemLink) Name() string { return l.name }

// Close implements Link.
func (l *MemLink) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}
