package topo

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// Probe is a NIC of a probe device, driven by the test through a raw
// AF_PACKET link (l2proto.PacketLink) in the device's namespace: it sends
// registrations and zone queries, receives every 0x88CC/0x88A7 frame with
// the time it was read, and ACKs notifications as nvme-snsd does unless
// told not to.
type Probe struct {
	Link *Link
	pl   *l2proto.PacketLink
	mac  net.HardwareAddr

	frames  chan Received
	lost    atomic.Int64
	autoAck atomic.Bool
	addr    atomic.Value // netip.Addr: the address it registers, queries and ACKs for

	mu    sync.Mutex
	reg   *l2proto.LLDPDU // resent every `every` once set
	ttl   uint16          // seconds, carried by the registration
	every time.Duration   // 0: never resent (the device fell silent)
	sent  time.Time       // when the last registration went out
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

// Received is one frame a probe read.
type Received struct {
	At    time.Time // when the read returned
	Raw   []byte
	Frame l2proto.Frame
	Err   error // decode error; Frame is empty then
}

// RefreshInterval is how often a probe resends its registration, as
// nvme-snsd (about every 30 s, TTL 120 s).
const RefreshInterval = 30 * time.Second

// probeNICs is the part of a Node that is a probe device: one Probe per
// NIC, opened by Start.
type probeNICs struct {
	n      *Node
	probes []*Probe
}

// Probe returns the probe of a probe device's NIC k.
func (pn *probeNICs) Probe(k int) *Probe {
	n := pn.n
	if n.Kind != KindProbe || k >= len(pn.probes) {
		n.f.tb.Fatalf("topo: %s has no probe NIC %d", n.Name, k)
	}
	return pn.probes[k]
}

// openProbes opens one probe per NIC.
func (pn *probeNICs) openProbes() {
	n := pn.n
	for _, l := range n.Links {
		var pl *l2proto.PacketLink
		err := n.NS.Do(func() (err error) {
			pl, err = l2proto.ListenPacket(l.IfName)
			return err
		})
		if err != nil {
			n.f.tb.Fatalf("topo: probe %s %s: %v", n.Name, l.IfName, err)
		}
		p := &Probe{Link: l, pl: pl, mac: pl.HardwareAddr(), frames: make(chan Received, 16384), stop: make(chan struct{}),
			ttl: l2proto.RegistrationTTL, every: RefreshInterval}
		p.autoAck.Store(true)
		p.addr.Store(l.Addr())
		p.wg.Add(2)
		go p.read()
		go p.refresh()
		pn.probes = append(pn.probes, p)
	}
}

// Addr is the address the probe registers, queries and ACKs for: the
// NIC's, unless SetAddr changed it.
func (p *Probe) Addr() netip.Addr { return p.addr.Load().(netip.Addr) }

// SetAddr changes the address the probe registers, queries and ACKs for
// (the NIC's own configuration stays: the switch sees only L2 frames).
// The next registration carries it from the same chassis and port ID, so
// the switch reads it as the device's address changing.
func (p *Probe) SetAddr(a netip.Addr) { p.addr.Store(a) }

// MAC is the probe NIC's hardware address.
func (p *Probe) MAC() net.HardwareAddr { return p.mac }

// SetAutoAck turns the automatic ACKs of notifications on or off.
func (p *Probe) SetAutoAck(on bool) { p.autoAck.Store(on) }

// Lost counts frames read but dropped because nobody consumed them.
func (p *Probe) Lost() int64 { return p.lost.Load() }

// SendRaw sends a whole Ethernet frame on the NIC.
func (p *Probe) SendRaw(frame []byte) error { return p.pl.WriteFrame(frame) }

// Register sends a registration LLDPDU for the NIC's address with the given
// role, protocol, port and NQN now and every RefreshInterval after (or as
// SetLLDP says).
func (p *Probe) Register(role inof.Role, proto inof.Protocol, port uint16, nqn string) error {
	l := &l2proto.LLDPDU{
		ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: p.mac,
		PortSubtype: l2proto.PortIDIfaceName, PortID: []byte("probe_" + p.Link.IfName + "_01"),
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Flags: l2proto.FlagSubscribe,
			Addr: p.Addr(), Role: role, Protocol: proto, ProtoVer: l2proto.ProtocolVersion1, Port: port, NQN: nqn},
	}
	p.mu.Lock()
	p.reg = l
	p.mu.Unlock()
	return p.Reregister()
}

// Reregister sends the registration again now (after a link up, as a host
// would at its next check).
func (p *Probe) Reregister() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sendRegistration()
}

// sendRegistration sends the registration with the current TTL; p.mu is
// held, so StopLLDP knows the last one sent.
func (p *Probe) sendRegistration() error {
	if p.reg == nil {
		return errors.New("topo: probe not registered")
	}
	l := *p.reg
	reg := *l.Registration
	reg.Addr = p.Addr()
	l.Registration, l.TTL = &reg, p.ttl
	fr, err := l2proto.LLDPFrame(p.mac, &l)
	if err != nil {
		return err
	}
	if err := p.pl.WriteFrame(fr); err != nil {
		return err
	}
	p.sent = time.Now()
	return nil
}

// SetLLDP sets the TTL the registration carries (1 s … 65535 s; nvme-snsd
// sends 120 s) and how often it is resent (every 0: never again, as a
// device whose agent hung while its link stays up). It applies from the
// next registration sent.
func (p *Probe) SetLLDP(ttl, every time.Duration) error {
	if ttl < time.Second || ttl > 65535*time.Second || every < 0 {
		return fmt.Errorf("topo: probe LLDP ttl %s every %s: ttl must be 1s..65535s, every not negative", ttl, every)
	}
	p.mu.Lock()
	p.ttl, p.every = uint16(ttl/time.Second), every
	p.mu.Unlock()
	return nil
}

// Goodbye sends the registration once with TTL 0 (the device asks to be
// forgotten at once) and stops resending it; Register or SetLLDP and
// Reregister start again.
func (p *Probe) Goodbye() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ttl := p.ttl
	p.ttl, p.every = 0, 0
	err := p.sendRegistration()
	p.ttl = ttl
	return err
}

// StopLLDP stops resending the registration, the link staying up, and
// returns when the last one was sent (zero if none was).
func (p *Probe) StopLLDP() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.every = 0
	return p.sent
}

// Query sends a zone query for the NIC's address.
func (p *Probe) Query() error {
	fr, err := l2proto.MessageFrame(p.mac, &l2proto.Message{Version: l2proto.Version1,
		Queries: []l2proto.ZoneQuery{{Host: p.Addr()}}})
	if err != nil {
		return err
	}
	return p.pl.WriteFrame(fr)
}

// Next returns the next frame read, or false after timeout.
func (p *Probe) Next(timeout time.Duration) (Received, bool) {
	select {
	case r := <-p.frames:
		return r, true
	case <-time.After(timeout):
		return Received{}, false
	}
}

// Drain returns every frame read and not consumed yet, without waiting.
func (p *Probe) Drain() []Received {
	var out []Received
	for {
		select {
		case r := <-p.frames:
			out = append(out, r)
		default:
			return out
		}
	}
}

// Notices returns the notifications the frames carry, every host's (a
// frame to another address on the port counts too), with their read time.
func Notices(frames []Received) []Notice {
	var out []Notice
	for _, r := range frames {
		if r.Frame.Message == nil {
			continue
		}
		for _, n := range r.Frame.Message.Notifications {
			out = append(out, Notice{At: r.At, N: n})
		}
	}
	return out
}

// Notice is one notification a probe received.
type Notice struct {
	At time.Time
	N  l2proto.Notification
}

// WaitNotification reads frames until a notification for this NIC that
// match accepts arrives (others are discarded) and returns it.
func (p *Probe) WaitNotification(timeout time.Duration, match func(l2proto.Notification) bool) (Notice, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return Notice{}, fmt.Errorf("topo: probe %s %s: no matching notification within %s", p.Link.Device.Name, p.Link.IfName, timeout)
		}
		r, ok := p.Next(left)
		if !ok || r.Frame.Message == nil {
			continue
		}
		for _, n := range r.Frame.Message.Notifications {
			if n.Host == p.Addr() && match(n) {
				return Notice{At: r.At, N: n}, nil
			}
		}
	}
}

// Close stops the probe's goroutines and closes its link.
func (p *Probe) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.pl.Close()
		p.wg.Wait()
	})
}

// read receives frames until the link is closed.
func (p *Probe) read() {
	defer p.wg.Done()
	buf := make([]byte, l2proto.MaxFrameLen+64)
	for {
		n, err := p.pl.ReadFrame(buf)
		at := time.Now()
		if errors.Is(err, syscall.ENETDOWN) {
			continue // reported once after the port went down
		}
		if err != nil {
			return
		}
		raw := append([]byte(nil), buf[:n]...)
		f, derr := l2proto.DecodeFrame(raw)
		if derr == nil && f.Message != nil && p.autoAck.Load() {
			p.ack(f.Message.Notifications)
		}
		select {
		case p.frames <- Received{At: at, Raw: raw, Frame: f, Err: derr}:
		default:
			p.lost.Add(1)
		}
	}
}

// ack sends one ACK frame for the notifications addressed to this NIC.
func (p *Probe) ack(ns []l2proto.Notification) {
	var acks []l2proto.Ack
	for _, n := range ns {
		if n.Host == p.Addr() {
			acks = append(acks, l2proto.Ack{Target: n.Target, Host: n.Host, Seq: n.Seq})
		}
	}
	if len(acks) == 0 {
		return
	}
	fr, err := l2proto.MessageFrame(p.mac, &l2proto.Message{Version: l2proto.Version1, Acks: acks})
	if err == nil {
		p.pl.WriteFrame(fr)
	}
}

// refreshTick is how often refresh looks whether a registration is due.
const refreshTick = 50 * time.Millisecond

// refresh resends the registration whenever the refresh interval passed
// since the last one went out.
func (p *Probe) refresh() {
	defer p.wg.Done()
	t := time.NewTicker(refreshTick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.reg != nil && p.every > 0 && time.Since(p.sent) >= p.every {
				p.sendRegistration()
			}
			p.mu.Unlock()
		}
	}
}

// TargetFrames are the LLDPDUs an NVMe/TCP target (port 4420) sends for
// addr from mac: its registration (TTL 120 s) and its goodbye (TTL 0: the
// switch forgets it at once, reason 6). portID tells the switch which
// sender slot it is, so one NIC may register many addresses.
func TargetFrames(mac net.HardwareAddr, addr netip.Addr, portID, nqn string) (reg, bye []byte, err error) {
	l := &l2proto.LLDPDU{
		ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: mac,
		PortSubtype: l2proto.PortIDIfaceName, PortID: []byte(portID),
		TTL: l2proto.RegistrationTTL,
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Addr: addr,
			Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, ProtoVer: l2proto.ProtocolVersion1, Port: 4420, NQN: nqn},
	}
	if reg, err = l2proto.LLDPFrame(mac, l); err != nil {
		return nil, nil, fmt.Errorf("topo: registration of %s: %w", addr, err)
	}
	l.TTL = 0
	if bye, err = l2proto.LLDPFrame(mac, l); err != nil {
		return nil, nil, fmt.Errorf("topo: goodbye of %s: %w", addr, err)
	}
	return reg, bye, nil
}
