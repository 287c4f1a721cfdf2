package switchagent

import (
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/dueheap"
)

// DefaultHoldDown is how long an inactive record of a device that left
// stays published before it is withdrawn, so remote switches can tell their
// hosts why the device went (docs/design.md §3, "leaving is a status").
const DefaultHoldDown = 30 * time.Second

// Action is what Local asks the daemon to do with one record: publish it
// (Withdraw false) or withdraw the record of Record.Device.Addr. The record
// is the device carrier as this switch reports it: its access port, first
// registration and status.
type Action struct {
	Record   inof.Report
	Withdraw bool
}

// Local turns registration changes on this switch's access ports into the
// records the switch publishes: active while registered, inactive with the
// reason when the device leaves, withdrawn after the hold-down. Records are
// keyed by address; an address registered on two ports stays active until
// both let it go. Local is owned by one goroutine; it is not safe for
// concurrent use.
type Local struct {
	holdDown time.Duration
	devs     map[netip.Addr]*localDev
	// leaving holds a deadline for every device whose hold-down runs,
	// earliest first; an entry whose device came back or left again
	// since is stale and skipped (localDev.withdraw no longer matches).
	leaving dueheap.Heap[deadline]
	// restoredDue holds the age-out deadline of every registration
	// restored from the state file that the registration table has not
	// taken over yet (no LLDPDU since the restart); stale entries are
	// skipped (localDev.restored no longer matches).
	restoredDue dueheap.Heap[deadline]
	// sick are the access ports in poor health (a PFC storm, receive
	// errors), with the reason a device on them is published inactive.
	sick map[string]inof.Reason
	// regs counts the registrations per access port; a port leaves it
	// (and sick) with its last registration. portsChanged says a port
	// came or went since Ports was last asked.
	regs         map[string]int
	portsChanged bool
}

// RestoredTTL is how long a registration restored from the state file
// lasts without a new LLDPDU when the file does not say when it expires
// (nvme-snsd's and inof-host's TTL).
const RestoredTTL = 120 * time.Second

// deadline is one hold-down end in Local.leaving, or (with port) one
// restored registration's age-out in Local.restoredDue.
type deadline struct {
	at   time.Time
	addr netip.Addr
	port string
}

// Before orders deadlines by time (dueheap.Entry).
func (d deadline) Before(o deadline) bool { return d.at.Before(o.at) }

type localDev struct {
	ports     map[string]inof.Report // registrations per access port
	published inof.Report
	withdraw  time.Time // zero unless leaving
	// restored are the ports whose registration came from the state file
	// and has not been refreshed by an LLDPDU since, with its age-out
	// deadline: the registration table does not know them, so Local ages
	// them out and drops them on carrier loss itself.
	restored map[string]time.Time
}

// NewLocal returns an empty table; holdDown ≤ 0 takes DefaultHoldDown.
func NewLocal(holdDown time.Duration) *Local {
	if holdDown <= 0 {
		holdDown = DefaultHoldDown
	}
	return &Local{holdDown: holdDown, devs: map[netip.Addr]*localDev{}, sick: map[string]inof.Reason{}, regs: map[string]int{}}
}

// addReg counts a registration on port.
func (l *Local) addReg(port string) {
	l.regs[port]++
	if l.regs[port] == 1 {
		l.portsChanged = true
	}
}

// dropReg uncounts a registration on port; the last one takes the port's
// health with it (its watch stops, and it starts healthy when a device
// registers again).
func (l *Local) dropReg(port string) {
	l.regs[port]--
	if l.regs[port] <= 0 {
		delete(l.regs, port)
		delete(l.sick, port)
		l.portsChanged = true
	}
}

// PortsChanged returns, sorted, the access ports that carry a
// registration if that set changed since the last call, and nil, false if
// it did not.
func (l *Local) PortsChanged() ([]string, bool) {
	if !l.portsChanged {
		return nil, false
	}
	l.portsChanged = false
	out := make([]string, 0, len(l.regs))
	for p := range l.regs {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, true
}

// Register records that r.Device is registered on r.AccessPort since
// r.Since (a new registration or a refresh with changed content) and
// returns what to publish, if anything changed. r.Status is not read: a
// registration is active.
func (l *Local) Register(r inof.Report, now time.Time) []Action {
	d := l.devs[r.Device.Addr]
	if d == nil {
		d = &localDev{ports: map[string]inof.Report{}}
		l.devs[r.Device.Addr] = d
	}
	r.Status = inof.Status{State: inof.StateActive}
	if _, ok := d.ports[r.AccessPort]; !ok {
		l.addReg(r.AccessPort)
	}
	d.ports[r.AccessPort] = r
	delete(d.restored, r.AccessPort) // the registration table has it now
	return l.republish(d, inof.ReasonNone, now)
}

// Unregister records that the registration of addr on port ended for reason
// (link down, IP change, age-out) and returns what to publish.
func (l *Local) Unregister(port string, addr netip.Addr, reason inof.Reason, now time.Time) []Action {
	d := l.devs[addr]
	if d == nil {
		return nil
	}
	if _, ok := d.ports[port]; !ok {
		return nil
	}
	delete(d.ports, port)
	l.dropReg(port)
	delete(d.restored, port)
	return l.republish(d, reason, now)
}

// PortDown ends, with reason link down, every registration on port that
// was restored from the state file and not refreshed since (the
// registration table ends its own entries on the port).
func (l *Local) PortDown(port string, now time.Time) []Action {
	var out []Action
	for addr, d := range l.devs {
		if _, ok := d.restored[port]; ok {
			out = append(out, l.Unregister(port, addr, inof.ReasonLinkDown, now)...)
		}
	}
	sortActions(out)
	return out
}

// PortHealth records that port turned sick (reason inof.ReasonPFCStorm or
// inof.ReasonPacketErr) or healthy again (inof.ReasonNone) and returns
// what to publish: a device registered only on sick ports is published
// inactive with the reason while its registration stays (no hold-down),
// and active again when one of its ports is healthy.
//
// A port without registrations is not watched: a late event about it (the
// last device left while the event was on its way) is ignored, so the
// next device on it starts healthy.
func (l *Local) PortHealth(port string, reason inof.Reason, now time.Time) []Action {
	if l.sick[port] == reason || l.regs[port] == 0 {
		return nil
	}
	if reason == inof.ReasonNone {
		delete(l.sick, port)
	} else {
		l.sick[port] = reason
	}
	var out []Action
	for _, d := range l.devs {
		if _, ok := d.ports[port]; ok {
			out = append(out, l.republish(d, inof.ReasonNone, now)...)
		}
	}
	sortActions(out)
	return out
}

// republish computes the record d should have now and returns an action if
// it differs from the published one.
func (l *Local) republish(d *localDev, reason inof.Reason, now time.Time) []Action {
	var want inof.Report
	if len(d.ports) > 0 {
		var sick inof.Reason
		want, sick = d.current(l.sick)
		d.withdraw = time.Time{}
		switch {
		case sick != inof.ReasonNone:
			want.State, want.Reason = inof.StateInactive, sick
			if d.published.State == inof.StateInactive && d.published.Reason == sick && d.published.Device == want.Device {
				want.Changed = d.published.Changed
			} else {
				want.Changed = now
			}
		case d.published.State == inof.StateActive:
			want.Changed = d.published.Changed
		default:
			want.Changed = now
		}
	} else {
		if d.published.State != inof.StateActive {
			return nil // already leaving
		}
		want = d.published
		want.State, want.Reason, want.Changed = inof.StateInactive, reason, now
		l.leave(d, now)
	}
	if want == d.published {
		return nil
	}
	d.published = want
	return []Action{{Record: want}}
}

// current is the registration to publish among d's ports: the oldest on a
// healthy port, then the lowest port name, so the choice is stable. When
// every port is sick it is the oldest of all, with its port's reason.
func (d *localDev) current(sick map[string]inof.Reason) (inof.Report, inof.Reason) {
	var best inof.Report
	var bestSick inof.Reason
	first := true
	for _, r := range d.ports {
		s := sick[r.AccessPort]
		better := first || (s == inof.ReasonNone) != (bestSick == inof.ReasonNone) && s == inof.ReasonNone ||
			(s == inof.ReasonNone) == (bestSick == inof.ReasonNone) &&
				(r.Since.Before(best.Since) || (r.Since.Equal(best.Since) && r.AccessPort < best.AccessPort))
		if better {
			best, bestSick, first = r, s, false
		}
	}
	return best, bestSick
}

// leave starts d's hold-down at now.
func (l *Local) leave(d *localDev, now time.Time) {
	d.withdraw = now.Add(l.holdDown)
	l.leaving.Push(deadline{at: d.withdraw, addr: d.published.Device.Addr})
}

// live reports whether a deadline is still the hold-down of its device.
func (l *Local) live(x deadline) (*localDev, bool) {
	d := l.devs[x.addr]
	return d, d != nil && !d.withdraw.IsZero() && d.withdraw.Equal(x.at)
}

// Expire ages out the restored registrations whose deadline passed
// (reason age-out, as the registration table would) and withdraws the
// records whose hold-down ended by now.
func (l *Local) Expire(now time.Time) []Action {
	var out []Action
	for l.restoredDue.Len() > 0 && !l.restoredDue.Peek().at.After(now) {
		x := l.restoredDue.Pop()
		if d := l.devs[x.addr]; d != nil && d.restored[x.port].Equal(x.at) {
			out = append(out, l.Unregister(x.port, x.addr, inof.ReasonAgeOut, now)...)
		}
	}
	var gone []Action
	for l.leaving.Len() > 0 && !l.leaving.Peek().at.After(now) {
		x := l.leaving.Pop()
		if d, ok := l.live(x); ok {
			gone = append(gone, Action{Record: d.published, Withdraw: true})
			delete(l.devs, x.addr)
		}
	}
	sortActions(out)
	sortActions(gone)
	return append(out, gone...)
}

// NextExpiry returns when Expire next has work, or false if never.
func (l *Local) NextExpiry() (time.Time, bool) {
	next, ok := time.Time{}, false
	for l.leaving.Len() > 0 {
		if _, live := l.live(l.leaving.Peek()); live {
			next, ok = l.leaving.Peek().at, true
			break
		}
		l.leaving.Pop() // stale
	}
	for l.restoredDue.Len() > 0 {
		x := l.restoredDue.Peek()
		if d := l.devs[x.addr]; d != nil && d.restored[x.port].Equal(x.at) {
			if !ok || x.at.Before(next) {
				next, ok = x.at, true
			}
			break
		}
		l.restoredDue.Pop() // stale
	}
	return next, ok
}

// Published returns every record currently published, sorted by address:
// what a restarted agent republishes, and what the state file holds.
func (l *Local) Published() []inof.Report {
	out := make([]inof.Report, 0, len(l.devs))
	for _, d := range l.devs {
		out = append(out, d.published)
	}
	slices.SortFunc(out, func(a, b inof.Report) int { return a.Device.Addr.Compare(b.Device.Addr) })
	return out
}

// Restore loads records published before a restart. Active ones count as
// registered on their port, as live registrations do: until an LLDPDU
// hands them to the registration table (Register), their port loses
// carrier (PortDown, reason link down) or their registration's deadline
// passes (Expire, reason age-out). expires gives the deadline the
// registration table had for a record's address on its port when the state
// was saved; a record without one gets now + RestoredTTL. Inactive records
// resume their hold-down from now.
func (l *Local) Restore(rs []inof.Report, expires map[RegistrationKey]time.Time, now time.Time) {
	for _, r := range rs {
		d := &localDev{ports: map[string]inof.Report{}, published: r}
		if r.State == inof.StateActive {
			reg := r
			reg.Status = inof.Status{State: inof.StateActive}
			d.ports[r.AccessPort] = reg
			l.addReg(r.AccessPort)
			at, ok := expires[RegistrationKey{Port: r.AccessPort, Addr: r.Device.Addr}]
			if !ok {
				at = now.Add(RestoredTTL)
			}
			d.restored = map[string]time.Time{r.AccessPort: at}
			l.restoredDue.Push(deadline{at: at, addr: r.Device.Addr, port: r.AccessPort})
			l.devs[r.Device.Addr] = d
			continue
		}
		l.devs[r.Device.Addr] = d
		l.leave(d, now)
	}
}

// RestoredExpiries returns the deadline of every restored registration not
// refreshed since.
func (l *Local) RestoredExpiries() map[RegistrationKey]time.Time {
	out := map[RegistrationKey]time.Time{}
	for addr, d := range l.devs {
		for port, at := range d.restored {
			out[RegistrationKey{Port: port, Addr: addr}] = at
		}
	}
	return out
}

// RegistrationKey names one registration: an address on an access port.
type RegistrationKey struct {
	Port string
	Addr netip.Addr
}

func sortActions(as []Action) {
	slices.SortFunc(as, func(a, b Action) int { return a.Record.Device.Addr.Compare(b.Record.Device.Addr) })
}
