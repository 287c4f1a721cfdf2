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
	senders   []*memSender
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
	c := &memConn{net: n, addr: rk.local, ch: make(chan memPacket, 1024), closed: make(chan struct{})}
	n.listeners[rk.local] = c
	return c, nil
}

func (c *memConn) readBatch(ms []inPacket) (int, error) {
	c.mu.Lock()
	g := c.held
	c.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	fill := func(in *inPacket, p memPacket) {
		in.n, in.src, in.dst, in.ttl = copy(in.buf, p.b), p.src, p.dst, p.ttl
	}
	select {
	case p := <-c.ch:
		fill(&ms[0], p)
	case <-c.closed:
		return 0, net.ErrClosed
	}
	n := 1
	for n < len(ms) {
		c.mu.Lock()
		held := c.held != nil
		c.mu.Unlock()
		if held {
			break
		}
		select {
		case p := <-c.ch:
			fill(&ms[n], p)
			n++
			continue
		default:
		}
		break
	}
	return n, nil
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

func (n *memNet) sendSocket(rk recvKey) (sendConn, error) {
	s := &memSender{net: n, local: rk.local}
	n.mu.Lock()
	n.senders = append(n.senders, s)
	n.mu.Unlock()
	return s, nil
}

// sender returns the latest send socket opened on a local address.
func (n *memNet) sender(a netip.Addr) *memSender {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.senders) - 1; i >= 0; i-- {
		if n.senders[i].local == a {
			return n.senders[i]
		}
	}
	return nil
}

type memSender struct {
	net    *memNet
	local  netip.Addr
	mu     sync.Mutex
	closed bool
	// calls and packets count sends; most is the largest batch.
	calls, packets, most int
}

func (s *memSender) send(ps []outPacket) error {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.calls++
		s.packets += len(ps)
		s.most = max(s.most, len(ps))
	}
	s.mu.Unlock()
	if closed {
		return net.ErrClosed
	}
	for i := range ps {
		s.net.inject(s.local, ps[i].peer, 255, ps[i].b[:])
	}
	return nil
}

func (s *memSender) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
