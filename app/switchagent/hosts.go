package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

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
