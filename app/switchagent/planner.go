package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
)

// Notice is one notification to send to a local host.
type Notice struct {
	Host   netip.Addr
	Target inof.Device
	State  inof.State
	Reason inof.Reason
}

// Planner remembers, for every local host, the targets it was last told are
// active, and turns a new visible set into the notifications that change
// something: active for a target that became usable, inactive (with the
// reason) for one that stopped being usable. Nothing that did not change is
// re-sent. It is owned by one goroutine; it is not safe for concurrent use.
type Planner struct {
	told map[netip.Addr]map[netip.Addr]inof.Device
	// toldOf is told the other way round: per target, the hosts told it
	// is active.
	toldOf map[netip.Addr]map[netip.Addr]struct{}
}

// NewPlanner returns a planner that has told nobody anything.
func NewPlanner() *Planner {
	return &Planner{told: map[netip.Addr]map[netip.Addr]inof.Device{}, toldOf: map[netip.Addr]map[netip.Addr]struct{}{}}
}

// tell records that host was told target is active.
func (p *Planner) tell(host netip.Addr, target inof.Device) {
	told := p.told[host]
	if told == nil {
		told = map[netip.Addr]inof.Device{}
		p.told[host] = told
	}
	told[target.Addr] = target
	hs := p.toldOf[target.Addr]
	if hs == nil {
		hs = map[netip.Addr]struct{}{}
		p.toldOf[target.Addr] = hs
	}
	hs[host] = struct{}{}
}

// untell records that host was told target is no longer active.
func (p *Planner) untell(host, target netip.Addr) {
	delete(p.told[host], target)
	// An emptied set stays for the target's next announcement (a target
	// toggling would otherwise make and grow a map each time); Drop
	// removes it.
	delete(p.toldOf[target], host)
}

// Drop forgets the empty host set of a target that is gone.
func (p *Planner) Drop(target netip.Addr) {
	if hs, ok := p.toldOf[target]; ok && len(hs) == 0 {
		delete(p.toldOf, target)
	}
}

// ToldOf calls fn with every host told target is active.
func (p *Planner) ToldOf(target netip.Addr, fn func(host netip.Addr)) {
	for h := range p.toldOf[target] {
		fn(h)
	}
}

// Reconcile compares what host was told with usable, the targets it may use
// now (visible by the zone rules and active). why gives the reason for a
// target that was announced active and is no longer usable. The notices come
// in a stable order: inactive ones first, then active ones, each by address.
func (p *Planner) Reconcile(host netip.Addr, usable map[netip.Addr]inof.Device, why func(netip.Addr) inof.Reason) []Notice {
	told := p.told[host]
	var out []Notice
	for addr, dev := range told {
		if _, still := usable[addr]; !still {
			out = append(out, Notice{Host: host, Target: dev, State: inof.StateInactive, Reason: why(addr)})
			p.untell(host, addr)
		}
	}
	var active []Notice
	for addr, dev := range usable {
		if prev, ok := told[addr]; ok && prev == dev {
			continue
		}
		p.tell(host, dev)
		active = append(active, Notice{Host: host, Target: dev, State: inof.StateActive})
	}
	sortNotices(out)
	sortNotices(active)
	return append(out, active...)
}

// Update reconciles one target for host: usable says whether the host may
// use dev now. It is Reconcile restricted to one address, for events that
// change one device, at a cost independent of how many targets the host
// sees.
func (p *Planner) Update(host netip.Addr, dev inof.Device, usable bool, why func(netip.Addr) inof.Reason) []Notice {
	told := p.told[host]
	prev, was := told[dev.Addr]
	switch {
	case usable && was && prev == dev:
		return nil
	case usable:
		p.tell(host, dev)
		return []Notice{{Host: host, Target: dev, State: inof.StateActive}}
	case was:
		p.untell(host, dev.Addr)
		return []Notice{{Host: host, Target: prev, State: inof.StateInactive, Reason: why(dev.Addr)}}
	}
	return nil
}

// Known reports whether host was told anything since it registered (it
// queried, or an event reached it).
func (p *Planner) Known(host netip.Addr) bool {
	_, ok := p.told[host]
	return ok
}

// WasTold reports whether host was told target is active.
func (p *Planner) WasTold(host, target netip.Addr) bool {
	_, ok := p.told[host][target]
	return ok
}

// Restore sets what host was told, as saved before a restart, so the first
// reconciliation after it sends only real changes.
func (p *Planner) Restore(host netip.Addr, told []inof.Device) {
	p.Forget(host)
	p.told[host] = make(map[netip.Addr]inof.Device, len(told))
	for _, d := range told {
		p.tell(host, d)
	}
}

// Answer is the reply to a host's zone query: an active notice for every
// target it may use now, whatever it was told before (the host may have
// restarted and forgotten). What the host was told becomes exactly usable;
// a target it was told about and may no longer use gets an inactive notice
// first, as in Reconcile.
func (p *Planner) Answer(host netip.Addr, usable map[netip.Addr]inof.Device, why func(netip.Addr) inof.Reason) []Notice {
	out := p.Reconcile(host, usable, why)
	if p.told[host] == nil {
		p.told[host] = map[netip.Addr]inof.Device{} // it asked: it is known
	}
	out = slices.DeleteFunc(out, func(n Notice) bool { return n.State == inof.StateActive })
	var active []Notice
	for _, dev := range usable {
		active = append(active, Notice{Host: host, Target: dev, State: inof.StateActive})
	}
	sortNotices(active)
	return append(out, active...)
}

// Told returns the targets host was last told are active, sorted by address.
func (p *Planner) Told(host netip.Addr) []inof.Device {
	var out []inof.Device
	for _, d := range p.told[host] {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b inof.Device) int { return a.Addr.Compare(b.Addr) })
	return out
}

// Forget drops what host was told (it left the switch).
func (p *Planner) Forget(host netip.Addr) {
	for t := range p.told[host] {
		p.untell(host, t)
	}
	delete(p.told, host)
}

// Hosts returns the hosts that were told anything, sorted.
func (p *Planner) Hosts() []netip.Addr {
	out := make([]netip.Addr, 0, len(p.told))
	for h := range p.told {
		out = append(out, h)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func sortNotices(ns []Notice) {
	slices.SortFunc(ns, func(a, b Notice) int { return a.Target.Addr.Compare(b.Target.Addr) })
}
