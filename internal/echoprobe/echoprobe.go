// Package echoprobe asks a neighbor's kernel whether its box is still
// there: ICMP echo requests, which the kernel answers in its receive path
// even when every process on the box is starved of CPU. A reflector uses it
// to tell a switch that fell silent because it died (no answer) from one
// whose daemon was only late (an answer), and a switch to keep a reflector
// whose BFD was only late: docs/bfd.md, "With BGP".
package echoprobe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Options describe one probe.
type Options struct {
	// Local is the address to send from (the session's local address);
	// invalid means any.
	Local netip.Addr
	// Peer is the address probed.
	Peer netip.Addr
	// Timeout is how long to wait for an answer (required).
	Timeout time.Duration
	// Count is how many echo requests are sent, spread evenly over the
	// first half of Timeout (default 2), so one lost packet is no death.
	// Each has the rest of Timeout, at least half of it, to be answered,
	// measured from when it was sent.
	Count int
}

// Result says what a probe found.
type Result int

// The results of a probe.
const (
	// Answered: an echo reply came back in time; the peer's kernel lives.
	Answered Result = iota + 1
	// Silent: every request was sent, or refused for want of a route,
	// and nothing came back in time.
	Silent
)

func (r Result) String() string {
	switch r {
	case Answered:
		return "answered"
	case Silent:
		return "silent"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Probe sends echo requests to o.Peer and waits o.Timeout for an answer.
// An error means the probe could not be made (no socket: neither a raw
// ICMP socket, which needs CAP_NET_RAW, nor a ping socket, which needs
// net.ipv4.ping_group_range; or sending failed for another reason than a
// missing route; or ctx ended before the window did) and says nothing
// about the peer. ctx bounds the call.
//
// On a loaded machine the probe's goroutine may run late at any point.
// Silent never comes from that: each request has its share of Timeout
// from when it was actually sent, and before saying Silent the probe
// looks, without waiting and whatever the clock says, at every reply
// already queued in its socket.
func Probe(ctx context.Context, o Options) (Result, error) {
	if !o.Peer.IsValid() || o.Timeout <= 0 {
		return 0, fmt.Errorf("echoprobe: peer %v, timeout %v: both are required", o.Peer, o.Timeout)
	}
	c, err := open(o.Local, o.Peer)
	if err != nil {
		return 0, err
	}
	defer c.close()
	return probe(ctx, o, c, time.Now)
}

// endpoint is the socket a probe talks through; a fake with a fake clock
// stands in for it in this package's tests.
type endpoint interface {
	// send sends echo request seq.
	send(id, seq int, token []byte) error
	// await waits until deadline for an echo reply to this probe. Like a
	// socket read, it may report none when it runs after its deadline,
	// even with a reply queued.
	await(deadline time.Time, id int, token []byte) (bool, error)
	// queued reports whether an echo reply to this probe is queued, without
	// waiting and whatever the time.
	queued(id int, token []byte) (bool, error)
}

// probe is Probe through c, with now as its clock.
func probe(ctx context.Context, o Options, c endpoint, now func() time.Time) (Result, error) {
	if o.Count <= 0 {
		o.Count = 2
	}
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return 0, fmt.Errorf("echoprobe: %w", err)
	}
	id := int(binary.BigEndian.Uint16(token[:2]))
	ctxEnd, hasCtxEnd := ctx.Deadline()
	step := o.Timeout / time.Duration(2*o.Count)
	// The window ends when every request has had its share of Timeout
	// (Timeout less its place in the schedule, at least half of Timeout)
	// from when it was sent. Sent on time, that is Timeout after start; a
	// starved goroutine that sends late waits longer, never shorter.
	next := now()
	end := next.Add(o.Timeout)
	sent, unreachable := 0, 0
	var sendErr error
	for {
		// Send what is due, then wait for an answer until the next send
		// or the end.
		for sent < o.Count && !now().Before(next) {
			err := c.send(id, sent, token[:])
			at := now() // after the send: never before the request left
			end = later(end, at.Add(o.Timeout-time.Duration(sent)*step))
			next = at.Add(step)
			sent++
			switch {
			case err == nil:
			case errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH):
				unreachable++ // no route to the peer is no peer
			default:
				sendErr = err
			}
		}
		t := now()
		if !t.Before(end) {
			break
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("echoprobe: %w", err)
		}
		if hasCtxEnd && !t.Before(ctxEnd) {
			return 0, fmt.Errorf("echoprobe: %w", context.DeadlineExceeded)
		}
		wait := end
		if sent < o.Count {
			wait = next
		}
		if hasCtxEnd && ctxEnd.Before(wait) {
			wait = ctxEnd
		}
		ok, err := c.await(wait, id, token[:])
		if err != nil {
			return 0, err
		}
		if ok {
			return Answered, nil
		}
	}
	// The window is over. A reply may be queued that no read took: the
	// goroutine ran after its read deadline had passed, and a socket read
	// past its deadline does not look at the socket. It still counts.
	ok, err := c.queued(id, token[:])
	switch {
	case err != nil:
		return 0, err
	case ok:
		return Answered, nil
	case sendErr != nil && unreachable == 0:
		return 0, fmt.Errorf("echoprobe: sending to %s: %w", o.Peer, sendErr)
	}
	return Silent, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// conn is an ICMP or ICMPv6 socket: raw where the process may open one,
// else a ping socket (the kernel sets and matches the echo identifier).
type conn struct {
	pc   *icmp.PacketConn
	rc   syscall.RawConn // pc's descriptor, for queued
	peer netip.Addr
	ping bool // a ping socket: addresses are UDP addresses
	v6   bool
	buf  []byte
}

func open(local, peer netip.Addr) (*conn, error) {
	v6 := peer.Is6() && !peer.Is4In6()
	raw, ping, any := "ip4:icmp", "udp4", "0.0.0.0"
	if v6 {
		raw, ping, any = "ip6:ipv6-icmp", "udp6", "::"
	}
	laddr := any
	if local.IsValid() {
		laddr = local.Unmap().String()
		if local.Zone() != "" || local.Is6() && local.IsLinkLocalUnicast() {
			laddr = local.String()
		}
	}
	c := &conn{peer: peer.Unmap(), v6: v6, buf: make([]byte, 1500)}
	pc, rawErr := icmp.ListenPacket(raw, laddr)
	if rawErr != nil {
		var pingErr error
		if pc, pingErr = icmp.ListenPacket(ping, laddr); pingErr != nil {
			return nil, fmt.Errorf("echoprobe: no ICMP socket on %s: raw: %w; ping socket: %w", laddr, rawErr, pingErr)
		}
		c.ping = true
	}
	c.pc = pc
	// icmp.PacketConn hides its socket; its ipv4 or ipv6 view holds it.
	var inner net.PacketConn
	if p4 := pc.IPv4PacketConn(); p4 != nil {
		inner = p4.PacketConn
	} else if p6 := pc.IPv6PacketConn(); p6 != nil {
		inner = p6.PacketConn
	}
	sc, ok := inner.(syscall.Conn)
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("echoprobe: ICMP socket on %s: %T has no descriptor", laddr, inner)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("echoprobe: %w", err)
	}
	c.rc = rc
	return c, nil
}

func (c *conn) close() { c.pc.Close() }

func (c *conn) send(id, seq int, token []byte) error {
	typ := icmp.Type(ipv4.ICMPTypeEcho)
	if c.v6 {
		typ = ipv6.ICMPTypeEchoRequest
	}
	m := icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: seq, Data: token}}
	b, err := m.Marshal(nil) // the kernel sums ICMPv6; Marshal sums ICMPv4
	if err != nil {
		return fmt.Errorf("echoprobe: %w", err)
	}
	var to net.Addr = &net.IPAddr{IP: c.peer.AsSlice(), Zone: c.peer.Zone()}
	if c.ping {
		to = &net.UDPAddr{IP: c.peer.AsSlice(), Zone: c.peer.Zone()}
	}
	_, err = c.pc.WriteTo(b, to)
	return err
}

func (c *conn) await(deadline time.Time, id int, token []byte) (bool, error) {
	if err := c.pc.SetReadDeadline(deadline); err != nil {
		return false, fmt.Errorf("echoprobe: %w", err)
	}
	for {
		ok, err := c.read(id, token)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, nil
		}
		if err != nil || ok {
			return ok, err
		}
	}
}

func (c *conn) queued(id int, token []byte) (bool, error) {
	// No deadline: a read never waits here, as it reads only what a peek
	// without waiting found queued, and this probe is its socket's only
	// reader.
	if err := c.pc.SetReadDeadline(time.Time{}); err != nil {
		return false, fmt.Errorf("echoprobe: %w", err)
	}
	for {
		var one [1]byte
		var peekErr error
		err := c.rc.Read(func(fd uintptr) bool {
			_, _, peekErr = syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return true // never wait for more
		})
		if err == nil {
			err = peekErr
		}
		if errors.Is(err, syscall.EAGAIN) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("echoprobe: reading: %w", err)
		}
		ok, err := c.read(id, token)
		if err != nil || ok {
			return ok, err
		}
	}
}

// read reads one packet and reports whether it is an echo reply to this
// probe from the peer.
func (c *conn) read(id int, token []byte) (bool, error) {
	proto, reply := 1, icmp.Type(ipv4.ICMPTypeEchoReply) // IANA protocol numbers
	if c.v6 {
		proto, reply = 58, ipv6.ICMPTypeEchoReply
	}
	n, from, err := c.pc.ReadFrom(c.buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("echoprobe: reading: %w", err)
	}
	if !c.from(from) {
		return false, nil
	}
	m, err := icmp.ParseMessage(proto, c.buf[:n])
	if err != nil || m.Type != reply {
		return false, nil
	}
	e, ok := m.Body.(*icmp.Echo)
	// A ping socket's kernel rewrites the identifier and delivers it only
	// its own replies; the token tells this probe's apart.
	return ok && (c.ping || e.ID == id) && string(e.Data) == string(token), nil
}

func (c *conn) from(a net.Addr) bool {
	var ip net.IP
	switch a := a.(type) {
	case *net.IPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		return false
	}
	got, ok := netip.AddrFromSlice(ip)
	return ok && got.Unmap() == c.peer.WithZone("")
}
