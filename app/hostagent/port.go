package hostagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// port is one registered interface: its link, what it announces, and the
// dedupe memory of its reader (owned by the reader goroutine).
type port struct {
	name  string
	link  l2proto.Link
	dev   inof.Device // what the LLDPDU announces
	log   *slog.Logger
	m     *metrics
	drops *l2proto.DropCounter
	// carrierErr is the last carrier error logged (announcer goroutine only).
	carrierErr string
	// linkEv wakes the announcer to read carrier now: a link event for
	// the interface (rtnetlink), so a link that comes back registers at
	// once rather than at the next carrier poll.
	linkEv chan struct{}
	// heard says a notification for this interface arrived since carrier
	// last came back (set by the reader): until then a host interface
	// queries again with each LLDPDU, in case no switch heard its query.
	heard atomic.Bool
}

// linkEvent asks the announcer to read carrier now (coalescing).
func (p *port) linkEvent() {
	select {
	case p.linkEv <- struct{}{}:
	default:
	}
}

// dedupeSize bounds the remembered (target, host, sequence) keys per
// interface. The switch numbers notifications consecutively per port and
// retransmits for ~13 s, so a few thousand keys cover any retransmit.
const dedupeSize = 4096

// recent is a bounded set of ACK keys, oldest forgotten first.
type recent struct {
	set  map[l2proto.AckKey]struct{}
	ring []l2proto.AckKey
	next int
}

func newRecent(n int) *recent {
	return &recent{set: make(map[l2proto.AckKey]struct{}, n), ring: make([]l2proto.AckKey, 0, n)}
}

func (r *recent) seen(k l2proto.AckKey) bool { _, ok := r.set[k]; return ok }

func (r *recent) add(k l2proto.AckKey) {
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, k)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = k
		r.next = (r.next + 1) % len(r.ring)
	}
	r.set[k] = struct{}{}
}

// event is a new notification handed to the worker.
type event struct {
	port string
	n    l2proto.Notification
	at   time.Time // when its frame was read
}

// read serves the port's receive side until the link closes: it ACKs every
// complete notification addressed to this interface (once per notification,
// all ACKs of a frame in one frame, as nvme-snsd), hands the new ones to the
// worker and counts retransmits. When the worker's queue is full a
// notification is neither queued nor ACKed, so the switch sends it again.
func (p *port) read(ctx context.Context, out chan<- event) error {
	buf := make([]byte, l2proto.MaxFrameLen+4)
	dec := new(l2proto.Decoder) // borrowed results: handle copies what it keeps
	seen := newRecent(dedupeSize)
	for {
		n, err := p.link.ReadFrame(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if errors.Is(err, syscall.ENETDOWN) {
				// The interface was set down; the socket reports it
				// once and works again when it comes back up.
				p.log.Info("interface down", "interface", p.name)
				continue
			}
			return fmt.Errorf("read %s: %w", p.name, err)
		}
		p.handle(dec, buf[:n], seen, out)
	}
}

func (p *port) drop(reason string, err error) {
	p.m.drops.WithLabelValues(p.name, reason).Inc()
	p.drops.DropReason(p.name, reason, err)
}

func (p *port) handle(dec *l2proto.Decoder, b []byte, seen *recent, out chan<- event) {
	at := time.Now()
	f, err := dec.Decode(b)
	if err != nil {
		p.drop(l2proto.DropReason(err), err)
		if f.Message == nil {
			return
		}
	}
	if f.LLDP != nil {
		// Another LLDP speaker on the segment; nothing for a host.
		p.drop("unexpected", errors.New("LLDP registration received on a host port"))
		return
	}
	if len(f.Message.Acks)+len(f.Message.Queries) > 0 {
		p.drop("unexpected", errors.New("ACK or zone query received on a host port"))
	}
	var ack l2proto.Message
	ack.Version = l2proto.Version1
	for _, nt := range f.Message.Notifications {
		if nt.Host != p.dev.Addr {
			p.drop("host-address", fmt.Errorf("notification for %s, this interface is %s", nt.Host, p.dev.Addr))
			continue
		}
		p.m.received.WithLabelValues(p.name, nt.State.String()).Inc()
		p.heard.Store(true)
		k := nt.Key()
		switch {
		case seen.seen(k):
			p.m.duplicates.WithLabelValues(p.name).Inc()
		case p.ignore(nt):
			seen.add(k)
		default:
			select {
			case out <- event{port: p.name, n: nt, at: at}:
				seen.add(k)
			default:
				p.drop("queue-full", errors.New("worker queue full; not ACKed, the switch retransmits"))
				continue
			}
		}
		ack.Acks = append(ack.Acks, l2proto.Ack{Target: nt.Target, Host: nt.Host, Seq: nt.Seq})
	}
	if len(ack.Acks) == 0 {
		return
	}
	fr, err := l2proto.MessageFrame(p.link.HardwareAddr(), &ack)
	if err == nil {
		err = p.link.WriteFrame(fr)
	}
	if err != nil {
		p.log.Warn("send ACK", "interface", p.name, "err", err)
		return
	}
	p.m.acked.WithLabelValues(p.name).Add(float64(len(ack.Acks)))
}

// ignore reports (and counts) notifications that are ACKed but acted on by
// nobody, as nvme-snsd does.
func (p *port) ignore(nt l2proto.Notification) bool {
	reason := ""
	switch {
	case !p.dev.Role.IsHost():
		reason = "target-interface"
	case nt.Role == inof.RoleHost:
		reason = "host-notification"
	case nt.State != inof.StateActive && nt.State != inof.StateInactive:
		reason = "bad-state"
	case transport(nt.Protocol) == "":
		reason = "protocol"
	default:
		return false
	}
	p.m.ignored.WithLabelValues(reason).Inc()
	p.log.Debug("notification ignored", "interface", p.name, "reason", reason, "target", nt.Target,
		"state", nt.State, "role", nt.Role, "protocol", nt.Protocol)
	return true
}

// Carrier is what a carrier probe reports: whether the interface has
// carrier now, and its count of carrier changes so far, which reveals a
// flap shorter than the poll interval.
type Carrier struct {
	Up      bool
	Changes uint64
}

// announce registers the interface every interval while it has carrier,
// and sends a zone query at start and whenever carrier comes back (also
// after a flap between two polls), and, on a host interface, again with
// each LLDPDU until a notification arrives (a query sent before the
// switch's agent listened is lost, and the switch has nothing to answer
// before it has read one). Carrier is read every poll and on every link
// event.
func (p *port) announce(ctx context.Context, clk Clock, interval, ttl, poll time.Duration, probe func(string) (Carrier, error)) {
	reg := clk.NewTicker(interval)
	defer reg.Stop()
	chk := clk.NewTicker(poll)
	defer chk.Stop()
	last := p.carrier(probe)
	if last.Up {
		p.register(ttl)
		p.query()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-reg.C():
			if last.Up {
				p.register(ttl)
				if p.dev.Role.IsHost() && !p.heard.Load() {
					p.query()
				}
			}
			continue
		case <-chk.C():
		case <-p.linkEv:
		}
		now := p.carrier(probe)
		switch {
		case now.Up && (!last.Up || now.Changes != last.Changes):
			p.log.Info("link up", "interface", p.name, "carrier_changes", now.Changes)
			// The next periodic LLDPDU is a full interval after this one.
			reg.Reset(interval)
			select {
			case <-reg.C():
			default:
			}
			p.heard.Store(false)
			p.register(ttl)
			p.query()
		case !now.Up && last.Up:
			p.log.Warn("link down", "interface", p.name)
		}
		last = now
	}
}

func (p *port) carrier(probe func(string) (Carrier, error)) Carrier {
	c, err := probe(p.name)
	if msg := fmt.Sprint(err); err != nil && msg != p.carrierErr {
		p.log.Warn("carrier", "interface", p.name, "err", err) // once per distinct error
		p.carrierErr = msg
	} else if err == nil {
		p.carrierErr = ""
	}
	v := 0.0
	if c.Up {
		v = 1
	}
	p.m.carrier.WithLabelValues(p.name).Set(v)
	return c
}

func (p *port) register(ttl time.Duration) {
	mac := p.link.HardwareAddr()
	l := &l2proto.LLDPDU{
		ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: mac,
		PortSubtype: l2proto.PortIDIfaceName, PortID: []byte("inof_" + p.name + "_01"),
		TTL: uint16(ttl / time.Second),
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Flags: l2proto.FlagSubscribe,
			Addr: p.dev.Addr, Role: p.dev.Role, Protocol: p.dev.Protocol, ProtoVer: l2proto.ProtocolVersion1,
			Port: p.dev.Port, NQN: p.dev.NQN},
	}
	fr, err := l2proto.LLDPFrame(mac, l)
	if err == nil {
		err = p.link.WriteFrame(fr)
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			p.log.Warn("send registration", "interface", p.name, "err", err)
		}
		return
	}
	p.m.registrations.WithLabelValues(p.name).Inc()
}

func (p *port) query() {
	fr, err := l2proto.MessageFrame(p.link.HardwareAddr(), &l2proto.Message{Version: l2proto.Version1,
		Queries: []l2proto.ZoneQuery{{Host: p.dev.Addr}}})
	if err == nil {
		err = p.link.WriteFrame(fr)
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			p.log.Warn("send zone query", "interface", p.name, "err", err)
		}
		return
	}
	p.m.queries.WithLabelValues(p.name).Inc()
}

// SysfsCarrier reads /sys/class/net/IF/carrier and carrier_changes. An
// interface that is administratively down has no readable carrier: that
// counts as down.
func SysfsCarrier(ifname string) (Carrier, error) {
	dir := "/sys/class/net/" + ifname + "/"
	b, err := os.ReadFile(dir + "carrier")
	if err != nil {
		if _, serr := os.Stat(dir); serr == nil {
			return Carrier{}, nil
		}
		return Carrier{}, fmt.Errorf("carrier of %s: %w", ifname, err)
	}
	c := Carrier{Up: strings.TrimSpace(string(b)) == "1"}
	if b, err := os.ReadFile(dir + "carrier_changes"); err == nil {
		c.Changes, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	return c, nil
}

// interfaceAddr is the first global unicast IPv4 address of ifname, else
// its first global unicast IPv6 address.
func interfaceAddr(ifname string) (netip.Addr, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", ifname, err)
	}
	var v6 netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil || !pfx.Addr().IsGlobalUnicast() {
			continue
		}
		if ip := pfx.Addr().Unmap(); ip.Is4() {
			return ip, nil
		} else if !v6.IsValid() {
			v6 = ip
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, fmt.Errorf("%s has no global unicast address; set interfaces[].address", ifname)
}
