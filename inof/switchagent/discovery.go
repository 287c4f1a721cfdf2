package switchagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/discovery/dnssd"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// discoverySource is what the NVMe/TCP discovery controller (package
// discovery) serves from this switch: the active NVMe-oF targets of the
// fabric under the zone configuration in force. The agent's loop keeps it
// current (discoveryTouch, discoveryConfig); connection goroutines read
// it. Its index is separate from the engine's, which only the loop may
// use: a discovery host need not be registered anywhere, so it is put in
// for the time of one query.
type discoverySource struct {
	self    inof.RouterID
	mu      sync.Mutex
	ix      *zones.Index // the usable targets, by the configuration in force
	changes chan struct{}

	// For referrals (referrals.go): the hosts with an NQN other switches
	// report active, by address and by NQN, and the other switches'
	// discovery controllers.
	hostsAt     map[netip.Addr][]hostNQN
	byNQN       map[string]map[remoteHost]bool
	controllers map[inof.RouterID]*record.Discovery
}

func newDiscoverySource(self inof.RouterID, cfg *zones.Config) *discoverySource {
	if cfg == nil {
		cfg = zones.NewConfig(zones.DefaultSettings())
	}
	ix, _ := zones.NewIndex(cfg, nil) // no devices: cannot fail
	return &discoverySource{self: self, ix: ix, changes: make(chan struct{}, 1),
		hostsAt: map[netip.Addr][]hostNQN{}, byNQN: map[string]map[remoteHost]bool{},
		controllers: map[inof.RouterID]*record.Discovery{}}
}

// Visible implements discovery.Source: the targets a host with this NQN at
// this address may see by the zone rules, as a device registered with that
// address and NQN would, and the referrals to the other switches'
// controllers where a host with this NQN is registered.
func (s *discoverySource) Visible(hostNQN string, addr netip.Addr) []discovery.Entry {
	addr = addr.Unmap()
	s.mu.Lock()
	defer s.mu.Unlock()
	prior, had := s.ix.Device(addr)
	host := inof.Device{Addr: addr, Role: inof.RoleHost, Protocol: inof.ProtocolTCP, NQN: hostNQN}
	if had {
		host.Role = inof.RoleBoth // a target asking for its peers
	}
	if err := s.ix.Put(host); err != nil {
		return nil // an address no device can have (loopback is fine)
	}
	var out []discovery.Entry
	for t := range s.ix.Targets(addr) {
		if e, ok := discoveryEntry(t); ok {
			out = append(out, e)
		}
	}
	if had {
		_ = s.ix.Put(prior) // it was in the index: valid
	} else {
		s.ix.Remove(addr)
	}
	return append(out, s.referrals(hostNQN, addr)...)
}

// Changes implements discovery.Source.
func (s *discoverySource) Changes() <-chan struct{} { return s.changes }

func (s *discoverySource) signal() {
	select {
	case s.changes <- struct{}{}:
	default: // one pending signal covers every change since
	}
}

// discoveryEntry maps a target to its discovery log entry; false for
// protocols a discovery log cannot name (iSCSI, unknown).
func discoveryEntry(d inof.Device) (discovery.Entry, bool) {
	e := discovery.Entry{Addr: d.Addr, Port: d.Port, NQN: d.NQN}
	switch d.Protocol {
	case inof.ProtocolTCP:
		e.Transport = discovery.TransportTCP
	case inof.ProtocolRoCE:
		e.Transport = discovery.TransportRDMA
	default:
		return e, false
	}
	return e, true
}

// put records the merged state of one address: a usable target is indexed,
// anything else removed; and the active host reports of other switches
// for it (referrals). It signals when that changed anything.
func (s *discoverySource) put(addr netip.Addr, cur Target, present bool, reports []inof.Report) {
	usable := present && cur.State == inof.StateActive && cur.Device.Role.IsTarget()
	if usable {
		if _, ok := discoveryEntry(cur.Device); !ok {
			usable = false
		}
	}
	s.mu.Lock()
	old, had := s.ix.Device(addr)
	changed := false
	switch {
	case usable && (!had || old != cur.Device):
		changed = s.ix.Put(cur.Device) == nil
	case !usable && had:
		s.ix.Remove(addr)
		changed = true
	}
	if s.hostsPut(addr, reports) {
		changed = true
	}
	s.mu.Unlock()
	if changed {
		s.signal()
	}
}

func (s *discoverySource) setConfig(cfg *zones.Config) {
	s.mu.Lock()
	s.ix = s.ix.WithConfig(cfg)
	s.mu.Unlock()
	s.signal()
}

// discoveryPart is the discovery controller of an agent whose options
// enable it.
type discoveryPart struct {
	src  *discoverySource
	srv  *discovery.Server
	mdns *dnssd.Responder // nil unless discovery.mdns
}

// newDiscovery builds the discovery controller when the options enable it
// (called by New).
func (a *Agent) newDiscovery() error {
	o := a.opts.Discovery
	if !o.Enabled {
		return nil
	}
	src := newDiscoverySource(a.self, nil)
	cfg := discovery.Config{Options: o, Source: src, Registrar: dimRegistrar{a}, Logger: a.log, Interfaces: a.opts.AccessPorts}
	if a.cfg.Registry != nil {
		cfg.Registry = a.cfg.Registry
	}
	srv, err := discovery.New(cfg)
	if err != nil {
		return err
	}
	a.disc = &discoveryPart{src: src, srv: srv}
	if o.MDNS {
		if a.disc.mdns, err = a.newMDNS(o); err != nil {
			return err
		}
	}
	return nil
}

// newMDNS builds the advertisement of the discovery controller on the
// access ports (TP 8009): one instance per switch, named after its
// router-id, answered with the address of the port the question came in
// on.
func (a *Agent) newMDNS(o discovery.Options) (*dnssd.Responder, error) {
	_, p, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("discovery.listen port %q: %w", p, err)
	}
	id := strings.ReplaceAll(a.opts.RouterID, ".", "-")
	return dnssd.New(dnssd.Config{Host: "inof-" + id, Interfaces: a.opts.AccessPorts, Logger: a.log,
		Services: []dnssd.Service{{Instance: "iNOF discovery " + id, Type: dnssd.TypeNVMeDiscTCP,
			Port: uint16(port), TXT: []string{"p=tcp", "nqn=" + discovery.DiscoveryNQN}}}})
}

// runDiscovery starts the discovery controller's listener (called by Run).
func (a *Agent) runDiscovery(spawn func(string, func(context.Context) error)) {
	if a.disc != nil {
		spawn("discovery controller", a.disc.srv.Run)
		if a.speaker != nil {
			spawn("discovery announcement", a.advertiseController)
		}
		if a.disc.mdns != nil {
			// An advertisement that cannot run leaves the controller
			// serving: hosts may still be told its address.
			spawn("mDNS advertisement", func(ctx context.Context) error {
				if err := a.disc.mdns.Run(ctx); err != nil {
					a.log.Error("mDNS advertisement of the discovery controller not running", "err", err)
				}
				return nil
			})
		}
	}
}

// discoveryTouch brings the discovery view of addr up to the engine's
// merged state (called by the loop after the engine handled a record).
func (a *Agent) discoveryTouch(addr netip.Addr) {
	if a.disc == nil {
		return
	}
	cur, ok := a.engine.targets.Get(addr)
	a.disc.src.put(addr, cur, ok, a.engine.targets.Reports(addr))
}

// discoveryApply touches the local records an engine output publishes or
// withdraws (registrations, link downs, hold-down expiries).
func (a *Agent) discoveryApply(out Output) {
	if a.disc == nil {
		return
	}
	for _, p := range out.Publish {
		a.discoveryTouch(p.Record.Device.Addr)
	}
	for _, r := range out.Withdraw {
		a.discoveryTouch(r.Device.Addr)
	}
}

// discoveryInit hands the zone configuration restored at start to the
// discovery view (called by Run before the speaker starts).
func (a *Agent) discoveryInit(cfg *zones.Config) {
	if a.disc != nil {
		a.disc.src.setConfig(cfg)
	}
}

// discoveryConfig hands a new zone configuration to the discovery view and
// subscribes to every zone (called by the loop).
func (a *Agent) discoveryConfig(ctx context.Context, cfg *zones.Config) {
	if a.disc == nil {
		return
	}
	a.disc.src.setConfig(cfg)
	a.subscribe(ctx, a.engine.subs)
}

// discoveryZones extends the zones the local devices need under cfg with
// every zone of cfg and the default zone when the discovery controller
// runs: a discovery host need not be registered, so it may be in any zone,
// and the switch must hold the records of them all.
func (a *Agent) discoveryZones(cfg *zones.Config, want []string) []string {
	if a.disc == nil {
		return want
	}
	out := slices.Clone(want)
	out = append(out, zones.DefaultZone)
	if cfg != nil {
		out = append(out, cfg.ZoneNames()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// dimPort is the access port of the hosts that registered with the
// discovery controller (DIM, TP 8010) instead of over LLDP: their records
// carry it, and they are told of changes by the controller's AENs, not by
// notifications.
const dimPort = "nvme-dim"

// dimEvent is a registration or its end, from a discovery connection.
type dimEvent struct {
	reg  discovery.Registration
	gone bool
	why  string
}

// dimRegistrar hands the discovery controller's registrations to the loop.
type dimRegistrar struct{ a *Agent }

// Register implements discovery.Registrar.
func (r dimRegistrar) Register(reg discovery.Registration) { r.a.handDIM(dimEvent{reg: reg}) }

// Deregister implements discovery.Registrar.
func (r dimRegistrar) Deregister(reg discovery.Registration, why string) {
	r.a.handDIM(dimEvent{reg: reg, gone: true, why: why})
}

// handDIM waits for the loop to take the event, or for the loop's end.
func (a *Agent) handDIM(ev dimEvent) {
	select {
	case a.dims <- ev:
	case <-a.loopDone:
	}
}

// onDIM (loop) turns a discovery registration into a local device, as an
// LLDP registration would: a host on NVMe/TCP at its connection's address,
// zoned by its NQN or address; its end is an age-out (reason 6).
func (a *Agent) onDIM(ctx context.Context, ev dimEvent) {
	dev := inof.Device{Addr: ev.reg.Addr.Unmap(), Role: inof.RoleHost, Protocol: inof.ProtocolTCP, NQN: ev.reg.HostNQN}
	now := time.Now()
	if ev.gone {
		a.evlog.Info("device left", "port", dimPort, "device", dev, "reason", inof.ReasonAgeOut.String(), "why", ev.why)
		a.apply(ctx, a.engine.Unregister(dimPort, dev.Addr, inof.ReasonAgeOut, now))
		return
	}
	a.evlog.Info("device registered", "port", dimPort, "device", dev, "name", ev.reg.Name, "symbolic", ev.reg.Symbolic)
	a.apply(ctx, a.engine.Register(dimPort, dev, now, now))
}
