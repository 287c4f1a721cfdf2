package switchagent

import (
	"context"
	"fmt"
	"log/slog"
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
// current (discoveryPart.touch, setConfig); connection goroutines read
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
func (s *discoverySource) put(addr netip.Addr, cur inof.Report, present bool, reports []inof.Report) {
	usable := present && cur.State == inof.StateActive && cur.Device.Role.IsTarget()
	if usable {
		if _, ok := discoveryEntry(cur.Device); !ok {
			usable = false
		}
	}
	s.mu.Lock()
	if usable && s.ix.Config().Refuses(cur) {
		usable = false // a claim to a pinned NQN outside its pin (pins.go)
	}
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
// enable it; a nil *discoveryPart (off) does nothing.
type discoveryPart struct {
	self inof.RouterID
	log  *slog.Logger
	src  *discoverySource
	srv  *discovery.Server
	mdns *dnssd.Responder // nil unless discovery.mdns
	// dims carries the hosts registered with the controller to the loop;
	// loopDone is the agent's (a registration handed after it is dropped).
	dims     chan dimEvent
	loopDone <-chan struct{}
	// interfaceAddrs is Config.InterfaceAddrs (nil: the system's).
	interfaceAddrs func(port string) ([]netip.Prefix, error)
}

// newDiscovery builds the discovery controller when the options enable it
// (called by New); nil when they do not.
func newDiscovery(a *Agent, c Config) (*discoveryPart, error) {
	o := a.opts.Discovery
	if !o.Enabled {
		return nil, nil
	}
	d := &discoveryPart{self: a.self, log: a.log, src: newDiscoverySource(a.self, nil), dims: make(chan dimEvent, 256),
		loopDone: a.loopDone, interfaceAddrs: c.InterfaceAddrs}
	cfg := discovery.Config{Options: o, Source: d.src, Registrar: dimRegistrar{d}, Logger: a.log, Interfaces: a.opts.AccessPorts}
	if c.Registry != nil {
		cfg.Registry = c.Registry
	}
	var err error
	if d.srv, err = discovery.New(cfg); err != nil {
		return nil, err
	}
	if o.MDNS {
		if d.mdns, err = newMDNS(a.opts, a.log); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// newMDNS builds the advertisement of the discovery controller on the
// access ports (TP 8009): one instance per switch, named after its
// router-id, answered with the address of the port the question came in
// on.
func newMDNS(opts Options, log *slog.Logger) (*dnssd.Responder, error) {
	o := opts.Discovery
	_, p, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("discovery.listen port %q: %w", p, err)
	}
	id := strings.ReplaceAll(opts.RouterID, ".", "-")
	return dnssd.New(dnssd.Config{Host: "inof-" + id, Interfaces: opts.AccessPorts, Logger: log,
		Services: []dnssd.Service{{Instance: "iNOF discovery " + id, Type: dnssd.TypeNVMeDiscTCP,
			Port: uint16(port), TXT: []string{"p=tcp", "nqn=" + discovery.DiscoveryNQN}}}})
}

// run starts the discovery controller's listener and its mDNS
// advertisement (called by Run).
func (d *discoveryPart) run(spawn func(string, func(context.Context) error)) {
	if d == nil {
		return
	}
	spawn("discovery controller", d.srv.Run)
	if d.mdns != nil {
		// An advertisement that cannot run leaves the controller
		// serving: hosts may still be told its address.
		spawn("mDNS advertisement", func(ctx context.Context) error {
			if err := d.mdns.Run(ctx); err != nil {
				d.log.Error("mDNS advertisement of the discovery controller not running", "err", err)
			}
			return nil
		})
	}
}

// setInterfaces serves hosts on, and advertises the controller on, the
// access ports names (a reload changed them).
func (d *discoveryPart) setInterfaces(names []string) error {
	if d == nil {
		return nil
	}
	d.srv.SetInterfaces(names) // hosts on access ports only
	if d.mdns == nil {
		return nil
	}
	if err := d.mdns.SetInterfaces(names); err != nil {
		return fmt.Errorf("switchagent: mDNS: %w", err)
	}
	return nil
}

// touch brings the discovery view of addr up to the engine's merged state
// (called by the loop after the engine handled a record).
func (d *discoveryPart) touch(e *Engine, addr netip.Addr) {
	if d == nil {
		return
	}
	cur, ok := e.targets.Get(addr)
	d.src.put(addr, e.pins.allowed(e.ix.Config(), addr, cur, ok), ok, e.targets.Reports(addr))
}

// apply touches the local records an engine output publishes or
// withdraws (registrations, link downs, hold-down expiries).
func (d *discoveryPart) apply(e *Engine, out Output) {
	if d == nil {
		return
	}
	for _, p := range out.Publish {
		d.touch(e, p.Record.Device.Addr)
	}
	for _, r := range out.Withdraw {
		d.touch(e, r.Device.Addr)
	}
}

// init hands the zone configuration restored at start to the discovery
// view (called by Run before the speaker starts).
func (d *discoveryPart) init(cfg *zones.Config) {
	if d != nil {
		d.src.setConfig(cfg)
	}
}

// setConfig hands a new zone configuration to the discovery view (called
// by the loop); true when it did (the memberships follow: zones).
func (d *discoveryPart) setConfig(cfg *zones.Config) bool {
	if d == nil {
		return false
	}
	d.src.setConfig(cfg)
	return true
}

// zones extends the zones the local devices need under cfg with every
// zone of cfg and the default zone when the discovery controller runs: a
// discovery host need not be registered, so it may be in any zone, and
// the switch must hold the records of them all.
func (d *discoveryPart) zones(cfg *zones.Config, want []string) []string {
	if d == nil {
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
type dimRegistrar struct{ d *discoveryPart }

// Register implements discovery.Registrar.
func (r dimRegistrar) Register(reg discovery.Registration) { r.d.hand(dimEvent{reg: reg}) }

// Deregister implements discovery.Registrar.
func (r dimRegistrar) Deregister(reg discovery.Registration, why string) {
	r.d.hand(dimEvent{reg: reg, gone: true, why: why})
}

// hand waits for the loop to take the event, or for the loop's end.
func (d *discoveryPart) hand(ev dimEvent) {
	select {
	case d.dims <- ev:
	case <-d.loopDone:
	}
}

// registrations are the controller's registrations for the loop (nil when
// off).
func (d *discoveryPart) registrations() <-chan dimEvent {
	if d == nil {
		return nil
	}
	return d.dims
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
	a.apply(ctx, a.engine.Register(inof.Report{Device: dev, AccessPort: dimPort, Since: now}, now))
}
