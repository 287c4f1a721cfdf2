package l2proto

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/openinof/inof/inof"
)

// EventKind says what happened to a registration.
type EventKind uint8

// Registration events.
const (
	Registered EventKind = iota + 1 // a new device on a port
	Updated                         // same address, other role/protocol/port/NQN
	Removed                         // gone; Event.Reason says why
)

func (k EventKind) String() string {
	switch k {
	case Registered:
		return "registered"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	}
	return "event(?)"
}

// Entry is one registered device on one switch port.
type Entry struct {
	Port      string           // switch port (interface name)
	MAC       net.HardwareAddr // the device's source MAC
	ChassisID string           // LLDP chassis ID, as received
	PortID    string           // LLDP port ID, as received (snsd: "snsd_<if>_<idx>")
	Device    inof.Device
	TTL       time.Duration
	Since     time.Time // first registration
	Expires   time.Time // last refresh + TTL
}

// Event reports a change in the registration table.
type Event struct {
	Kind   EventKind
	Entry  Entry
	Reason inof.Reason // for Removed: link down, IP change or age-out
}

type regKey struct {
	port string
	addr netip.Addr
}

// slotKey identifies the sender of an LLDPDU on a port: one host interface
// slot, which keeps its chassis and port ID when its address changes.
type slotKey struct {
	port, chassis, portID string
}

// Registry is the registration table of a switch: entries keyed by (port,
// address), refreshed by every LLDPDU, aged out at their TTL (reason 6),
// removed at once on link down (reason 1) or when the same sender registers a
// new address (reason 5). Events go to the callback given to NewRegistry, in
// order, from the goroutine that caused them.
type Registry struct {
	onEvent func(Event)

	mu      sync.Mutex
	emitMu  sync.Mutex // taken before mu is released: events leave in table order
	entries map[regKey]*Entry
	slots   map[slotKey]regKey
}

// NewRegistry returns an empty table; onEvent may be nil.
func NewRegistry(onEvent func(Event)) *Registry {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	return &Registry{onEvent: onEvent, entries: make(map[regKey]*Entry), slots: make(map[slotKey]regKey)}
}

// Observe applies an LLDPDU carrying a registration received on port at now.
// A TTL of 0 removes the sender's entry (reason age-out: the device asked to
// be forgotten).
func (r *Registry) Observe(port string, src net.HardwareAddr, l *LLDPDU, now time.Time) {
	if l == nil || l.Registration == nil {
		return
	}
	reg := l.Registration
	slot := slotKey{port, string(l.ChassisID), string(l.PortID)}
	key := regKey{port, reg.Addr}
	dev := reg.Device()
	var events []Event

	r.mu.Lock()
	if oldKey, ok := r.slots[slot]; ok && oldKey != key {
		if old := r.entries[oldKey]; old != nil {
			delete(r.entries, oldKey)
			events = append(events, Event{Kind: Removed, Entry: *old, Reason: inof.ReasonIPChange})
		}
		delete(r.slots, slot)
	}
	e := r.entries[key]
	switch {
	case l.TTL == 0:
		if e != nil {
			r.deleteLocked(key, e)
			events = append(events, Event{Kind: Removed, Entry: *e, Reason: inof.ReasonAgeOut})
		}
	case e == nil:
		e = &Entry{Port: port, MAC: bytes.Clone(src), ChassisID: string(l.ChassisID), PortID: string(l.PortID),
			Device: dev, Since: now}
		r.entries[key] = e
		r.slots[slot] = key
		e.TTL, e.Expires = ttl(l), now.Add(ttl(l))
		events = append(events, Event{Kind: Registered, Entry: *e})
	default:
		e.TTL, e.Expires = ttl(l), now.Add(ttl(l))
		r.slots[slot] = key
		if e.Device != dev || !bytes.Equal(e.MAC, src) {
			e.Device, e.MAC = dev, bytes.Clone(src)
			e.ChassisID, e.PortID = string(l.ChassisID), string(l.PortID)
			events = append(events, Event{Kind: Updated, Entry: *e})
		}
	}
	r.unlockAndEmit(events)
}

func ttl(l *LLDPDU) time.Duration { return time.Duration(l.TTL) * time.Second }

// LinkDown removes every entry on port with reason link down.
func (r *Registry) LinkDown(port string) {
	r.removeWhere(inof.ReasonLinkDown, func(e *Entry) bool { return e.Port == port })
}

// Expire removes every entry whose TTL ran out by now, with reason age-out.
func (r *Registry) Expire(now time.Time) {
	r.removeWhere(inof.ReasonAgeOut, func(e *Entry) bool { return !e.Expires.After(now) })
}

// Run expires entries every interval until ctx ends.
func (r *Registry) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.Expire(now)
		}
	}
}

// Entries returns a copy of the table sorted by port and address.
func (r *Registry) Entries() []Entry {
	r.mu.Lock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, *e)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Device.Addr.Less(out[j].Device.Addr)
	})
	return out
}

// Lookup returns the entry for an address on a port.
func (r *Registry) Lookup(port string, addr netip.Addr) (Entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entries[regKey{port, addr}]; e != nil {
		return *e, true
	}
	return Entry{}, false
}

func (r *Registry) removeWhere(reason inof.Reason, match func(*Entry) bool) {
	var events []Event
	r.mu.Lock()
	for k, e := range r.entries {
		if match(e) {
			r.deleteLocked(k, e)
			events = append(events, Event{Kind: Removed, Entry: *e, Reason: reason})
		}
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Entry.Device.Addr.Less(events[j].Entry.Device.Addr) })
	r.unlockAndEmit(events)
}

func (r *Registry) deleteLocked(k regKey, e *Entry) {
	delete(r.entries, k)
	slot := slotKey{e.Port, e.ChassisID, e.PortID}
	if r.slots[slot] == k {
		delete(r.slots, slot)
	}
}

// unlockAndEmit releases mu and delivers events; the callback runs without
// the table lock (it may call Lookup or Entries) but in table order.
func (r *Registry) unlockAndEmit(events []Event) {
	r.emitMu.Lock()
	r.mu.Unlock()
	defer r.emitMu.Unlock()
	for _, ev := range events {
		r.onEvent(ev)
	}
}
