package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
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

// hostBook is the Engine's book of the local hosts: the access port of
// each, what each was told (the Planner), and the hosts in a state that
// changes what they are told (away, greeted, sick). It turns the planner's
// notices into notices for a port. Owned by the engine; no I/O.
type hostBook struct {
	port map[netip.Addr]string // local hosts → access port
	// away holds the local hosts that left (link down, age-out) after
	// being told something: when one registers again it is told the
	// current set at once, since nvme-snsd sends no zone query after a
	// flap of its own link.
	away map[netip.Addr]bool
	// greeted holds the local hosts told every usable target when they
	// registered (greet) that have sent no zone query since: the query a
	// host sends right after the LLDPDU that registered it asks for what
	// that registration already told it (StartQuery).
	greeted map[netip.Addr]bool
	// sick holds the local hosts whose every registration here is on a
	// sick access port, with the port's reason: told every target through
	// that port is inactive with the reason, they are told nothing while
	// sick and every usable target again at recovery (docs/switch-agent.md,
	// "Port health").
	sick map[netip.Addr]inof.Reason
	plan *Planner // what each local host was told
}

func newHostBook() *hostBook {
	return &hostBook{port: map[netip.Addr]string{}, away: map[netip.Addr]bool{}, greeted: map[netip.Addr]bool{},
		sick: map[netip.Addr]inof.Reason{}, plan: NewPlanner()}
}

func (b *hostBook) forget(addr netip.Addr) {
	delete(b.port, addr)
	delete(b.greeted, addr)
	delete(b.sick, addr)
	b.plan.Forget(addr)
}

// maxAway bounds hostBook.away; beyond it the oldest memories are not
// worth keeping (the set is cleared, and those hosts learn at their next
// query).
const maxAway = 4096

// leave forgets a local host that left, remembering it was told
// something so its return is answered.
func (b *hostBook) leave(addr netip.Addr) {
	if _, ok := b.port[addr]; ok && b.plan.Known(addr) {
		if len(b.away) >= maxAway {
			clear(b.away)
		}
		b.away[addr] = true
	}
	b.forget(addr)
}

// concerned returns, sorted, the local hosts whose view of addr an event
// may change: those told it is active and, if it is a target that may be
// used, those that can see it in ix. The cost is O(those hosts): the
// index's hosts of the target when they are fewer than the local hosts,
// else the local hosts (then nearly all of them see it).
func (b *hostBook) concerned(ix *zones.Index, addr netip.Addr, usableTarget bool) []netip.Addr {
	var out []netip.Addr
	b.plan.ToldOf(addr, func(h netip.Addr) { out = append(out, h) })
	if usableTarget {
		if ix.HostsBound(addr) <= len(b.port) {
			for h := range ix.Hosts(addr) {
				if _, local := b.port[h.Addr]; local {
					out = append(out, h.Addr)
				}
			}
		} else {
			for h := range b.port {
				if ix.CanSee(h, addr) {
					out = append(out, h)
				}
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// sorted returns the local hosts, sorted.
func (b *hostBook) sorted() []netip.Addr {
	out := make([]netip.Addr, 0, len(b.port))
	for h := range b.port {
		out = append(out, h)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// notices addresses the planner's notices to their hosts' access ports.
func (b *hostBook) notices(ns []Notice) []PortNotice {
	out := make([]PortNotice, 0, len(ns))
	for _, n := range ns {
		out = append(out, PortNotice{Port: b.port[n.Host], Notice: n})
	}
	return out
}
