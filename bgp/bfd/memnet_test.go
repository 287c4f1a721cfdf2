package bfd

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// memNet is an in-memory network for tests run in a testing/synctest
// bubble: a send is delivered at once (with TTL 255) to the receive socket
// of the peer address, if any, and blocking reads are durably blocking, so
// the fake clock advances only when every session is waiting for a timer.
type memNet struct {
	mu        sync.Mutex
	listeners map[netip.Addr]*memConn
}

type memPacket struct {
	b        []byte
	src, dst netip.Addr
	ttl      int
}

type memConn struct {
	net    *memNet
	addr   netip.Addr
	ch     chan memPacket
	closed chan struct{}
	once   sync.Once
	// held, while not nil, keeps readFrom from reading until it is closed:
	// a receive path that is behind.
	mu   sync.Mutex
	held chan struct{}
}

// hold stops the socket's reader (packets queue up) until release.
func (c *memConn) hold() (release func()) {
	g := make(chan struct{})
	c.mu.Lock()
	c.held = g
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.held = nil
		c.mu.Unlock()
		close(g)
	}
}

// listener returns the receive socket of a local address.
func (n *memNet) listener(a netip.Addr) *memConn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listeners[a]
}

func newMemNet() *memNet { return &memNet{listeners: map[netip.Addr]*memConn{}} }

// manager returns a manager on this network, closed at the end of the test.
func (n *memNet) manager(t testing.TB) *Manager {
	m := NewManager(ManagerOptions{net: n})
	t.Cleanup(m.Close)
	return m
}

func (n *memNet) listen(rk recvKey) (packetConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listeners[rk.local] != nil {
		return nil, fmt.Errorf("memnet: %s:%d in use", rk.local, Port)
	}
	c := &memConn{net: n, addr: rk.local, ch: make(chan memPacket, 64), closed: make(chan struct{})}
	n.listeners[rk.local] = c
	return c, nil
}

func (c *memConn) readFrom(b []byte) (int, netip.Addr, netip.Addr, int, error) {
	c.mu.Lock()
	g := c.held
	c.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-c.closed:
			return 0, netip.Addr{}, netip.Addr{}, 0, net.ErrClosed
		}
	}
	select {
	case p := <-c.ch:
		return copy(b, p.b), p.src, p.dst, p.ttl, nil
	case <-c.closed:
		return 0, netip.Addr{}, netip.Addr{}, 0, net.ErrClosed
	}
}

func (c *memConn) pending() bool { return len(c.ch) > 0 }

func (c *memConn) Close() error {
	c.once.Do(func() {
		c.net.mu.Lock()
		if c.net.listeners[c.addr] == c {
			delete(c.net.listeners, c.addr)
		}
		c.net.mu.Unlock()
		close(c.closed)
	})
	return nil
}

// inject delivers a packet as if sent from src with the given TTL.
func (n *memNet) inject(src, dst netip.Addr, ttl int, b []byte) {
	n.mu.Lock()
	c := n.listeners[dst]
	n.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case c.ch <- memPacket{b: append([]byte(nil), b...), src: src, dst: dst, ttl: ttl}:
	case <-c.closed:
	default: // full: lost, as UDP would
	}
}

func (n *memNet) dial(k SessionKey) (sender, error) {
	return &memSender{net: n, key: k}, nil
}

type memSender struct {
	net    *memNet
	key    SessionKey
	mu     sync.Mutex
	closed bool
}

func (s *memSender) send(b []byte) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	s.net.inject(s.key.Local, s.key.Peer, 255, b)
	return nil
}

// Close silences the session: its packets go nowhere from now on.
func (s *memSender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
