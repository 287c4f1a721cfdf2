package switchagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
)

// Referrals (docs/discovery.md, "Referrals"): a switch serving discovery
// announces its controller's addresses on its access segments in a
// discovery record; a switch's discovery log refers a host to the
// controller of every other switch where a host with the same NQN is
// registered, at that controller's address on the segment of the host's
// address there. One discovery connection then finds the controllers of
// every path of a dual-homed host.

// endpointsInterval is how often the agent reads its access ports'
// addresses again (an address added or removed on a port reaches the other
// switches within it).
const endpointsInterval = 15 * time.Second

// remoteHost is a host with an NQN that another switch reports active.
type remoteHost struct {
	sw   inof.RouterID
	addr netip.Addr
}

// hostNQN is one active host report of another switch for an address.
type hostNQN struct {
	sw  inof.RouterID
	nqn string
}

// hostsPut records the active host reports of addr from other switches
// (called with s.mu held); it reports whether the referrals can have
// changed.
func (s *discoverySource) hostsPut(addr netip.Addr, reports []inof.Report) bool {
	var cur []hostNQN
	for _, r := range reports {
		if s.referable(r) {
			cur = append(cur, hostNQN{r.Switch, r.Device.NQN})
		}
	}
	old := s.hostsAt[addr]
	changed := false
	for _, h := range old {
		if !slices.Contains(cur, h) {
			delete(s.byNQN[h.nqn], remoteHost{h.sw, addr})
			if len(s.byNQN[h.nqn]) == 0 {
				delete(s.byNQN, h.nqn)
			}
			changed = true
		}
	}
	for _, h := range cur {
		if !slices.Contains(old, h) {
			if s.byNQN[h.nqn] == nil {
				s.byNQN[h.nqn] = map[remoteHost]bool{}
			}
			s.byNQN[h.nqn][remoteHost{h.sw, addr}] = true
			changed = true
		}
	}
	if len(cur) == 0 {
		delete(s.hostsAt, addr)
	} else {
		s.hostsAt[addr] = cur
	}
	return changed
}

// referable reports whether r is a host another switch may be referred
// to for: active, a host with an NQN, reported by another switch.
func (s *discoverySource) referable(r inof.Report) bool {
	return r.State == inof.StateActive && r.Device.Role.IsHost() && r.Device.NQN != "" && r.Switch != s.self
}

// setController records (rec) or forgets (nil) the discovery controller
// of switch sw.
func (s *discoverySource) setController(sw inof.RouterID, rec *record.Discovery) {
	s.mu.Lock()
	old, had := s.controllers[sw]
	switch {
	case rec == nil && !had, rec != nil && had && old.Port == rec.Port && slices.Equal(old.Endpoints, rec.Endpoints):
		s.mu.Unlock()
		return
	case rec == nil:
		delete(s.controllers, sw)
	default:
		s.controllers[sw] = rec
	}
	s.mu.Unlock()
	s.signal()
}

// referrals returns the referral entries for a host with this NQN
// connected from addr (called with s.mu held).
func (s *discoverySource) referrals(hostNQN string, addr netip.Addr) []discovery.Entry {
	var out []discovery.Entry
	for h := range s.byNQN[hostNQN] {
		c, ok := s.controllers[h.sw]
		if !ok || h.addr == addr {
			continue
		}
		if ep, ok := c.Contains(h.addr); ok {
			out = append(out, discovery.Entry{Transport: discovery.TransportTCP, Addr: ep, Port: c.Port})
		}
	}
	return out
}

// onRecord (loop) takes another switch's discovery record or its
// withdraw.
func (d *discoveryPart) onRecord(ev bgp.RecordEvent) {
	if d == nil || ev.Local() {
		return
	}
	sw, err := record.ParseDiscoveryKey(ev.Key)
	if err != nil || sw == d.self {
		return
	}
	rec, _ := ev.Record.(*record.Discovery)
	if ev.Withdrawn {
		rec = nil
	}
	d.src.setController(sw, rec)
}

// isDiscoveryEvent reports whether ev is about a discovery record.
func isDiscoveryEvent(ev bgp.RecordEvent) bool {
	return len(ev.Key) > 0 && record.Type(ev.Key[0]) == record.TypeDiscovery
}

// advertise publishes this switch's discovery record through sp, and again
// whenever the addresses of the access ports (ports) change, until ctx
// ends.
func (d *discoveryPart) advertise(ctx context.Context, sp bgp.Speaker, ports func() []string) error {
	port, err := d.controllerPort(ctx)
	if err != nil || port == 0 {
		return err
	}
	var last *record.Discovery
	tick := time.NewTicker(endpointsInterval)
	defer tick.Stop()
	for {
		rec := &record.Discovery{Switch: d.self, Port: port, Endpoints: d.endpoints(ports())}
		if last == nil || !slices.Equal(last.Endpoints, rec.Endpoints) {
			if err := sp.Publish(ctx, rec, record.DiscoveryRT); err != nil {
				d.log.Error("announcing the discovery controller's addresses", "err", err)
			} else {
				d.log.Info("discovery controller announced", "endpoints", fmt.Sprint(rec.Endpoints), "port", rec.Port)
				last = rec
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// controllerPort waits until the discovery controller listens and returns
// its port (0 when ctx ended first).
func (d *discoveryPart) controllerPort(ctx context.Context) (uint16, error) {
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		if addr := d.srv.Addr(); addr != nil {
			ap, err := netip.ParseAddrPort(addr.String())
			if err != nil {
				return 0, fmt.Errorf("discovery controller address %s: %w", addr, err)
			}
			return ap.Port(), nil
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-poll.C:
		}
	}
}

// endpoints returns the interface addresses of ports that a host can
// reach (IPv4 and IPv6 unicast, not link-local), sorted, at most
// bgp.MaxDiscoveryEndpoints.
func (d *discoveryPart) endpoints(ports []string) []netip.Prefix {
	var out []netip.Prefix
	for _, name := range ports {
		addrs, err := d.addrsOf(name)
		if err != nil {
			d.log.Debug("reading an access port's addresses", "port", name, "err", err)
			continue
		}
		for _, p := range addrs {
			if p.Addr().IsGlobalUnicast() { // not link-local, loopback or multicast
				out = append(out, p)
			}
		}
	}
	out = record.SortEndpoints(out)
	if len(out) > record.MaxDiscoveryEndpoints {
		d.log.Warn("too many discovery endpoints; the rest are not announced", "endpoints", len(out), "announced", record.MaxDiscoveryEndpoints)
		out = out[:record.MaxDiscoveryEndpoints]
	}
	return out
}

// addrsOf returns the addresses of an interface (Config.InterfaceAddrs
// or the system's).
func (d *discoveryPart) addrsOf(name string) ([]netip.Prefix, error) {
	if d.interfaceAddrs != nil {
		return d.interfaceAddrs(name)
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, ad := range addrs {
		n, ok := ad.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		bits, _ := n.Mask.Size()
		ip = ip.Unmap()
		if p, err := ip.Prefix(bits); err == nil && p.IsValid() {
			out = append(out, netip.PrefixFrom(ip, bits))
		}
	}
	return out, nil
}
