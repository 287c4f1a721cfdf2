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
// missing route) and says nothing about the peer. ctx bounds the call.
func Probe(ctx context.Context, o Options) (Result, error) {
	if !o.Peer.IsValid() || o.Timeout <= 0 {
		return 0, fmt.Errorf("echoprobe: peer %v, timeout %v: both are required", o.Peer, o.Timeout)
	}
	if o.Count <= 0 {
		o.Count = 2
	}
	c, err := open(o.Local, o.Peer)
	if err != nil {
		return 0, err
	}
	defer c.close()
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return 0, fmt.Errorf("echoprobe: %w", err)
	}
	id := int(binary.BigEndian.Uint16(token[:2]))
	start := time.Now()
	end := start.Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	step := o.Timeout / time.Duration(2*o.Count)
	sent, unreachable := 0, 0
	var sendErr error
	buf := make([]byte, 1500)
	for {
		// Send what is due, then wait for an answer until the next send
		// or the end.
		for sent < o.Count && !time.Now().Before(start.Add(time.Duration(sent)*step)) {
			err := c.send(id, sent, token[:])
			sent++
			switch {
			case err == nil:
			case errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH):
				unreachable++ // no route to the peer is no peer
			default:
				sendErr = err
			}
		}
		wait := end
		if sent < o.Count {
			wait = start.Add(time.Duration(sent) * step)
		}
		if !time.Now().Before(end) {
			break
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("echoprobe: %w", err)
		}
		ok, err := c.answer(buf, wait, id, token[:])
		if err != nil {
			return 0, err
		}
		if ok {
			return Answered, nil
		}
	}
	// The reader may have run late (a busy machine): an answer already
	// queued still counts. The deadline just ahead lets the read try the
	// socket once without waiting.
	ok, err := c.answer(buf, time.Now().Add(time.Millisecond), id, token[:])
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

// conn is an ICMP or ICMPv6 socket: raw where the process may open one,
// else a ping socket (the kernel sets and matches the echo identifier).
type conn struct {
	pc   *icmp.PacketConn
	peer netip.Addr
	ping bool // a ping socket: addresses are UDP addresses
	v6   bool
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
	pc, rawErr := icmp.ListenPacket(raw, laddr)
	if rawErr == nil {
		return &conn{pc: pc, peer: peer.Unmap(), v6: v6}, nil
	}
	pc, pingErr := icmp.ListenPacket(ping, laddr)
	if pingErr == nil {
		return &conn{pc: pc, peer: peer.Unmap(), ping: true, v6: v6}, nil
	}
	return nil, fmt.Errorf("echoprobe: no ICMP socket on %s: raw: %w; ping socket: %w", laddr, rawErr, pingErr)
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

// answer reads until deadline and reports whether an echo reply to this
// probe came from the peer.
func (c *conn) answer(buf []byte, deadline time.Time, id int, token []byte) (bool, error) {
	proto, reply := 1, icmp.Type(ipv4.ICMPTypeEchoReply) // IANA protocol numbers
	if c.v6 {
		proto, reply = 58, ipv6.ICMPTypeEchoReply
	}
	if err := c.pc.SetReadDeadline(deadline); err != nil {
		return false, fmt.Errorf("echoprobe: %w", err)
	}
	for {
		n, from, err := c.pc.ReadFrom(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("echoprobe: reading: %w", err)
		}
		if !c.from(from) {
			continue
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil || m.Type != reply {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		// A ping socket's kernel rewrites the identifier and delivers it
		// only its own replies; the token tells this probe's apart.
		if ok && (c.ping || e.ID == id) && string(e.Data) == string(token) {
			return true, nil
		}
	}
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
