// Package dnssd advertises services over multicast DNS (RFC 6762) with
// DNS-SD (RFC 6763) on a set of interfaces only: what a switch needs to
// announce its NVMe/TCP discovery controller to the hosts on its access
// ports (NVMe TP 8009: service type _nvme-disc._tcp, TXT p=tcp and the
// subsystem NQN), so that nvme-stas's stafd finds it with no
// configuration, and never to its uplinks.
//
// The Responder answers questions for its services (PTR, SRV, TXT, A,
// and the DNS-SD service enumeration) that arrive on one of its
// interfaces, with the addresses of that interface; it announces the
// services when it starts and says goodbye (TTL 0) when it stops. The
// message codec is golang.org/x/net/dns/dnsmessage.
package dnssd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The mDNS group and port (IPv4).
var (
	Group = netip.MustParseAddr("224.0.0.251")
	Port  = 5353
)

// NVMe discovery service types (TP 8009).
const (
	TypeNVMeDiscTCP = "_nvme-disc._tcp"
	TypeNVMeDiscUDP = "_nvme-disc._udp" // RoCE hosts: the service is reached over UDP (RoCEv2)
)

// Service is one service instance to advertise.
type Service struct {
	// Instance is the instance name, e.g. "leaf1 NVMe discovery": one DNS
	// label, so without dots (the DNS message codec cannot escape them).
	Instance string
	Type     string // e.g. TypeNVMeDiscTCP
	Port     uint16
	TXT      []string // "key=value" strings, e.g. "p=tcp"
}

// Config says what a Responder advertises where.
type Config struct {
	// Host is the host name its address records carry, without ".local".
	Host     string
	Services []Service
	// Interfaces are the only interfaces answered and announced on.
	Interfaces []string
	// TTL of the records (default 120 s, RFC 6762's for host records).
	TTL    time.Duration
	Logger *slog.Logger
}

// Responder answers mDNS questions for its services on its interfaces.
type Responder struct {
	cfg    Config
	log    *slog.Logger
	host   dnsmessage.Name
	mu     sync.Mutex
	stats  Stats
	want   []string               // the interfaces to serve (Config.Interfaces, then SetInterfaces)
	ifaces map[int]*net.Interface // the interfaces served now, by index
	p      *ipv4.PacketConn       // Run's socket while it runs
}

// Stats count what a Responder did.
type Stats struct {
	Answered    uint64 // queries answered
	Ignored     uint64 // queries on other interfaces, or for other names
	Malformed   uint64 // packets that were no DNS message
	Announced   uint64 // unsolicited announcements and goodbyes sent
	SendErrored uint64
}

// New checks cfg.
func New(cfg Config) (*Responder, error) {
	if cfg.Host == "" || len(cfg.Services) == 0 || len(cfg.Interfaces) == 0 {
		return nil, errors.New("dnssd: a host name, services and interfaces are needed")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 120 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, err := dnsmessage.NewName(cfg.Host + ".local.")
	if err != nil {
		return nil, fmt.Errorf("dnssd: host %q: %w", cfg.Host, err)
	}
	for _, s := range cfg.Services {
		if _, err := dnsmessage.NewName(instanceName(s)); err != nil || !strings.HasPrefix(s.Type, "_") ||
			s.Instance == "" || strings.Contains(s.Instance, ".") {
			return nil, fmt.Errorf("dnssd: service %q of type %q: not a DNS-SD name", s.Instance, s.Type)
		}
	}
	return &Responder{cfg: cfg, log: cfg.Logger.With("component", "mdns"), host: host,
		want: slices.Clone(cfg.Interfaces), ifaces: map[int]*net.Interface{}}, nil
}

// Stats returns the counters.
func (r *Responder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *Responder) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// Run serves until ctx ends: it joins the mDNS group on every interface,
// announces the services twice, answers questions, and at the end sends
// goodbyes. An interface that is missing or down at start is skipped
// (logged); Run fails only if it can use none.
func (r *Responder) Run(ctx context.Context) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(ctx, "udp4", fmt.Sprintf("0.0.0.0:%d", Port))
	if err != nil {
		return fmt.Errorf("dnssd: %w", err)
	}
	defer pc.Close()
	p := ipv4.NewPacketConn(pc)
	if err := p.SetControlMessage(ipv4.FlagInterface|ipv4.FlagDst, true); err != nil {
		return fmt.Errorf("dnssd: %w", err)
	}
	_ = p.SetMulticastTTL(255)
	_ = p.SetMulticastLoopback(false)
	r.mu.Lock()
	r.p = p
	want := r.want
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.p = nil
		r.mu.Unlock()
	}()
	joined := r.join(p, want)
	if len(joined) == 0 {
		return fmt.Errorf("dnssd: none of the interfaces %v could join the mDNS group", want)
	}
	r.log.Info("mDNS: advertising", "services", len(r.cfg.Services), "interfaces", len(joined), "host", r.host.String())
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	go func() {
		for i := range 2 { // RFC 6762 §8.3: at least twice, a second apart
			if i > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
			r.announce(p, joined, r.cfg.TTL)
		}
	}()
	buf := make([]byte, 9000)
	for {
		n, cm, src, err := p.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				r.goodbye(r.served())
				return nil
			}
			return fmt.Errorf("dnssd: read: %w", err)
		}
		if cm == nil {
			continue
		}
		r.handle(p, buf[:n], cm.IfIndex, src)
	}
}

// join joins the mDNS group on the named interfaces not yet served and
// returns those it joined. An interface that is missing or refuses is
// skipped (logged).
func (r *Responder) join(p *ipv4.PacketConn, names []string) []*net.Interface {
	var joined []*net.Interface
	for _, name := range names {
		ifi, err := net.InterfaceByName(name)
		if err == nil {
			r.mu.Lock()
			_, served := r.ifaces[ifi.Index]
			r.mu.Unlock()
			if served {
				continue
			}
			err = p.JoinGroup(ifi, &net.UDPAddr{IP: Group.AsSlice()})
		}
		if err != nil {
			r.log.Warn("mDNS: interface not served", "interface", name, "err", err)
			continue
		}
		r.mu.Lock()
		r.ifaces[ifi.Index] = ifi
		r.mu.Unlock()
		joined = append(joined, ifi)
	}
	return joined
}

// served returns the interfaces served now.
func (r *Responder) served() []*net.Interface {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.ifaces))
}

// SetInterfaces changes the interfaces served (a reload of the access
// ports): a running Responder joins and announces on the new ones, and
// sends goodbyes on and leaves those no longer named. It fails only if an
// interface that stays could not be left or a new one could not be
// joined; the others change anyway.
func (r *Responder) SetInterfaces(names []string) error {
	r.mu.Lock()
	r.want = slices.Clone(names)
	p := r.p
	var gone []*net.Interface
	for i, ifi := range r.ifaces {
		if !slices.Contains(names, ifi.Name) {
			gone = append(gone, ifi)
			delete(r.ifaces, i)
		}
	}
	r.mu.Unlock()
	if p == nil {
		return nil // Run serves the new set when it starts
	}
	var errs []error
	if len(gone) > 0 {
		r.announce(p, gone, 0)
		for _, ifi := range gone {
			if err := p.LeaveGroup(ifi, &net.UDPAddr{IP: Group.AsSlice()}); err != nil {
				errs = append(errs, fmt.Errorf("dnssd: leave %s: %w", ifi.Name, err))
			}
		}
	}
	added := r.join(p, names)
	r.announce(p, added, r.cfg.TTL)
	if len(added)+len(gone) > 0 {
		r.log.Info("mDNS: interfaces changed", "added", len(added), "removed", len(gone))
	}
	return errors.Join(errs...)
}

// goodbye sends every record with TTL 0 on a socket of its own (Run's is
// closed by then).
func (r *Responder) goodbye(ifs []*net.Interface) {
	pc, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		r.log.Warn("mDNS: goodbye not sent", "err", err)
		return
	}
	defer pc.Close()
	p := ipv4.NewPacketConn(pc)
	_ = p.SetMulticastTTL(255)
	r.announce(p, ifs, 0)
	r.log.Info("mDNS: services withdrawn (goodbye sent)")
}

// announce multicasts every record on every interface with ttl.
func (r *Responder) announce(p *ipv4.PacketConn, ifs []*net.Interface, ttl time.Duration) {
	for _, ifi := range ifs {
		var qs []dnsmessage.Question
		for _, s := range r.cfg.Services {
			qs = append(qs, question(typeName(s), dnsmessage.TypePTR))
		}
		msg, ok := r.answer(qs, ifi.Index, ttl)
		if !ok {
			continue
		}
		if err := p.SetMulticastInterface(ifi); err == nil {
			_, err = p.WriteTo(msg, nil, &net.UDPAddr{IP: Group.AsSlice(), Port: Port})
			if err == nil {
				r.count(func(s *Stats) { s.Announced++ })
				continue
			}
		}
		r.count(func(s *Stats) { s.SendErrored++ })
	}
}

// handle answers one packet.
func (r *Responder) handle(p *ipv4.PacketConn, b []byte, ifIndex int, src net.Addr) {
	r.mu.Lock()
	_, ok := r.ifaces[ifIndex]
	r.mu.Unlock()
	if !ok {
		r.count(func(s *Stats) { s.Ignored++ }) // an uplink, or any interface not served
		return
	}
	var m dnsmessage.Message
	if err := m.Unpack(b); err != nil {
		r.count(func(s *Stats) { s.Malformed++ })
		return
	}
	if m.Header.Response || len(m.Questions) == 0 {
		return
	}
	unicast := false
	for _, q := range m.Questions {
		if q.Class&(1<<15) != 0 { // QU: the asker wants a unicast answer
			unicast = true
		}
	}
	msg, ok := r.answer(m.Questions, ifIndex, r.cfg.TTL)
	if !ok {
		r.count(func(s *Stats) { s.Ignored++ })
		return
	}
	ifi, err := net.InterfaceByIndex(ifIndex)
	if err != nil {
		r.count(func(s *Stats) { s.SendErrored++ })
		return
	}
	var to net.Addr = &net.UDPAddr{IP: Group.AsSlice(), Port: Port}
	if ua, ok := src.(*net.UDPAddr); ok && (unicast || ua.Port != Port) {
		to = ua // RFC 6762 §6.7: a legacy resolver (not from port 5353) gets a unicast answer
	}
	_ = p.SetMulticastInterface(ifi)
	if _, err := p.WriteTo(msg, &ipv4.ControlMessage{IfIndex: ifIndex}, to); err != nil {
		r.count(func(s *Stats) { s.SendErrored++ })
		return
	}
	r.count(func(s *Stats) { s.Answered++ })
}

// answer builds the response to the questions that name our records, with
// the addresses of the interface; false if none does.
func (r *Responder) answer(qs []dnsmessage.Question, ifIndex int, ttl time.Duration) ([]byte, bool) {
	addrs := interfaceAddrs(ifIndex)
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{Response: true, Authoritative: true})
	b.EnableCompression()
	_ = b.StartAnswers()
	hdr := func(name dnsmessage.Name, t dnsmessage.Type, flush bool) dnsmessage.ResourceHeader {
		class := dnsmessage.ClassINET
		if flush {
			class |= 1 << 15 // cache-flush: unique records
		}
		return dnsmessage.ResourceHeader{Name: name, Type: t, Class: class, TTL: uint32(ttl / time.Second)}
	}
	answered := false
	var extra []Service
	wantHost := false
	for _, q := range qs {
		name := strings.ToLower(q.Name.String())
		for _, s := range r.cfg.Services {
			switch {
			case name == "_services._dns-sd._udp.local." && (q.Type == dnsmessage.TypePTR || q.Type == dnsmessage.TypeALL):
				_ = b.PTRResource(hdr(q.Name, dnsmessage.TypePTR, false), dnsmessage.PTRResource{PTR: mustName(typeName(s))})
				answered = true
			case name == strings.ToLower(typeName(s)) && (q.Type == dnsmessage.TypePTR || q.Type == dnsmessage.TypeALL):
				_ = b.PTRResource(hdr(mustName(typeName(s)), dnsmessage.TypePTR, false),
					dnsmessage.PTRResource{PTR: mustName(instanceName(s))})
				extra, answered, wantHost = append(extra, s), true, true
			case name == strings.ToLower(instanceName(s)):
				if q.Type == dnsmessage.TypeSRV || q.Type == dnsmessage.TypeALL {
					_ = b.SRVResource(hdr(mustName(instanceName(s)), dnsmessage.TypeSRV, true),
						dnsmessage.SRVResource{Port: s.Port, Target: r.host})
					answered, wantHost = true, true
				}
				if q.Type == dnsmessage.TypeTXT || q.Type == dnsmessage.TypeALL {
					_ = b.TXTResource(hdr(mustName(instanceName(s)), dnsmessage.TypeTXT, true), dnsmessage.TXTResource{TXT: s.TXT})
					answered = true
				}
			}
		}
		if name == strings.ToLower(r.host.String()) && (q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeALL) {
			for _, a := range addrs {
				_ = b.AResource(hdr(r.host, dnsmessage.TypeA, true), dnsmessage.AResource{A: a.As4()})
				answered = true
			}
		}
	}
	if !answered {
		return nil, false
	}
	// RFC 6763 §12: with a PTR answer go the SRV, TXT and address records.
	_ = b.StartAdditionals()
	for _, s := range extra {
		_ = b.SRVResource(hdr(mustName(instanceName(s)), dnsmessage.TypeSRV, true), dnsmessage.SRVResource{Port: s.Port, Target: r.host})
		_ = b.TXTResource(hdr(mustName(instanceName(s)), dnsmessage.TypeTXT, true), dnsmessage.TXTResource{TXT: s.TXT})
	}
	if wantHost {
		for _, a := range addrs {
			_ = b.AResource(hdr(r.host, dnsmessage.TypeA, true), dnsmessage.AResource{A: a.As4()})
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil, false
	}
	return msg, true
}

// interfaceAddrs returns an interface's IPv4 unicast addresses.
func interfaceAddrs(index int) []netip.Addr {
	ifi, err := net.InterfaceByIndex(index)
	if err != nil {
		return nil
	}
	as, err := ifi.Addrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
				out = append(out, ip.Unmap())
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func typeName(s Service) string     { return s.Type + ".local." }
func instanceName(s Service) string { return s.Instance + "." + typeName(s) }

func question(name string, t dnsmessage.Type) dnsmessage.Question {
	return dnsmessage.Question{Name: mustName(name), Type: t, Class: dnsmessage.ClassINET}
}

func mustName(s string) dnsmessage.Name {
	n, err := dnsmessage.NewName(s)
	if err != nil {
		panic(err) // New checked every name
	}
	return n
}
