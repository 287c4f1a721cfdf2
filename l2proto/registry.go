package l2proto

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
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
	Updated                         // same address, other role/protocol/port/NQN or MAC
	Removed                         // gone; Event.Reason says why
	// PortDown: the port lost carrier (LinkDown); Entry.AccessPort names it and
	// Reason is link down. It comes after the Removed events of the
	// entries LinkDown removed, so a consumer that holds registrations of
	// its own for the port (restored ones) hears of the loss on the same
	// stream, once.
	PortDown
)

func (k EventKind) String() string {
	switch k {
	case Registered:
		return "registered"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	case PortDown:
		return "port-down"
	}
	return "event(?)"
}

// Registry bounds. snsd registers at most 64 addresses per physical port;
// an access port normally faces one host.
const (
	DefaultMaxEntries        = 8192
	DefaultMaxEntriesPerPort = 128
	DefaultExpireEvery       = time.Second
)

// Errors Observe returns for a registration it refuses; DropReason maps them
// to "port-full" and "table-full".
var (
	ErrPortFull  = errors.New("registration table full for the port")
	ErrTableFull = errors.New("registration table full")
	// ErrMACBound refuses a registration from a source MAC that holds a
	// registration on another port: a MAC is bound to its port until its
	// entries there age out or the port goes down ("mac-bound").
	ErrMACBound = errors.New("source MAC registered on another port")
)

// Entry is one registered device on one switch port: the device carrier
// (its AccessPort the switch port's interface name, Since the first
// registration, the status active; Switch is left to the agent, which
// knows its router-id) and the LLDP details only the registration keeps.
type Entry struct {
	inof.Report
	MAC       net.HardwareAddr // the device's source MAC
	ChassisID string           // LLDP chassis ID, as received
	PortID    string           // LLDP port ID, as received (snsd: "snsd_<if>_<idx>")
	TTL       time.Duration
	Expires   time.Time // last refresh + TTL
	// Refreshed says an LLDPDU after the one that made the entry
	// refreshed it (a zone query read while it is false came right after
	// the device's first LLDPDU, as a host's start sends them).
	Refreshed bool
}

// Event reports a change in the registration table.
type Event struct {
	Kind   EventKind
	Entry  Entry
	Reason inof.Reason // for Removed: link down, IP change or age-out
}

// RegistryConfig bounds a Registry; zero fields take the defaults.
type RegistryConfig struct {
	MaxEntries        int           // entries in the whole table
	MaxEntriesPerPort int           // entries on one port
	ExpireEvery       time.Duration // how often Run ages entries out
}

// RegistryStats describe the table.
type RegistryStats struct {
	Entries int
	// Refused counts registrations of new addresses refused because a
	// bound was reached (refreshes of existing entries are never refused).
	Refused uint64
	// PendingEvents counts changes not yet delivered on Events.
	PendingEvents int
}

type regKey struct {
	port string
	addr netip.Addr
}

// macKey is a source MAC address as a map key.
type macKey [6]byte

func macOf(a net.HardwareAddr) (macKey, bool) {
	var k macKey
	if len(a) != len(k) {
		return k, false
	}
	copy(k[:], a)
	return k, true
}

// macBinding is the port a source MAC registers on and how many entries
// it holds there.
type macBinding struct {
	port    string
	entries int
}

// slotKey identifies the sender of an LLDPDU on a port: one host interface
// slot, which keeps its chassis and port ID when its address changes.
type slotKey struct {
	port, chassis, portID string
}

func slotOf(e *Entry) slotKey { return slotKey{e.AccessPort, e.ChassisID, e.PortID} }

// change is a key whose state the consumer has not been told yet.
type change struct {
	key     regKey
	removed *Entry // the entry as last removed, for a Removed event
	reason  inof.Reason
	elem    *list.Element
	// port is set on a port's loss of carrier (PortDown), which is no key.
	port string
}

// Registry is the registration table of a switch: entries keyed by (port,
// address), refreshed by every LLDPDU, aged out at their TTL (reason 6),
// removed at once on link down (reason 1) or when the same sender registers a
// new address (reason 5). The table is bounded per port and overall.
//
// Changes are delivered on Events by Run's goroutine, never from the caller
// of Observe, LinkDown or Expire: those only mark what changed and return,
// so a slow consumer stalls no port. While the consumer lags, changes of one
// key coalesce: it is told the key's current state relative to what it was
// last told (a device that registered and left in between is never
// reported; one removed and back unchanged is no event), and a port's
// losses of carrier not yet told are one PortDown. So the pending changes
// stay bounded by twice the table plus the ports, and each key's events
// stay in order and end at the table's state.
type Registry struct {
	cfg RegistryConfig

	mu      sync.Mutex
	entries map[regKey]*Entry
	slots   map[slotKey]regKey
	perPort map[string]int
	macs    map[macKey]macBinding // source MAC → the port its entries are on
	refused uint64
	known   map[regKey]Entry // what the consumer was last told
	dirty   map[regKey]*change
	downs   map[string]*change // ports whose PortDown is pending
	queue   list.List          // *change, oldest first

	notify chan struct{}
	events chan Event
}

// NewRegistry returns an empty table; start Run to age entries out and
// deliver events.
func NewRegistry(cfg RegistryConfig) (*Registry, error) {
	if cfg.MaxEntries < 0 || cfg.MaxEntriesPerPort < 0 || cfg.ExpireEvery < 0 {
		return nil, errors.New("l2proto: registry limits must not be negative")
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxEntriesPerPort == 0 {
		cfg.MaxEntriesPerPort = min(DefaultMaxEntriesPerPort, cfg.MaxEntries)
	}
	if cfg.ExpireEvery == 0 {
		cfg.ExpireEvery = DefaultExpireEvery
	}
	return &Registry{cfg: cfg, entries: make(map[regKey]*Entry), slots: make(map[slotKey]regKey),
		perPort: make(map[string]int), macs: make(map[macKey]macBinding), known: make(map[regKey]Entry),
		dirty: make(map[regKey]*change), downs: make(map[string]*change),
		notify: make(chan struct{}, 1), events: make(chan Event)}, nil
}

// Events returns the channel Run delivers events on; it is closed when Run
// returns.
func (r *Registry) Events() <-chan Event { return r.events }

// Observe applies an LLDPDU carrying a registration received on port at now.
// A TTL of 0 removes the sender's entry (reason age-out: the device asked to
// be forgotten). A new address beyond a bound is refused with an error
// wrapping ErrPortFull or ErrTableFull, and counted; so is any
// registration from a source MAC whose entries are on another port
// (ErrMACBound), which keeps a host on one port from taking over the
// addresses of a host on another.
//
// Observe keeps neither src nor l (they may be a Decoder's views over a
// frame buffer): it copies what it stores. A refresh that changes nothing
// allocates nothing.
func (r *Registry) Observe(port string, src net.HardwareAddr, l *LLDPDU, now time.Time) error {
	if l == nil || l.Registration == nil {
		return nil
	}
	reg := l.Registration
	key := regKey{port, reg.Addr}
	dev := reg.Device()

	r.mu.Lock()
	defer r.mu.Unlock()
	if mk, ok := macOf(src); ok {
		if b, bound := r.macs[mk]; bound && b.port != port {
			r.refused++
			return fmt.Errorf("%w: %s registers %s on %s but holds %d registration(s) on %s", ErrMACBound,
				src, reg.Addr, port, b.entries, b.port)
		}
	}
	e := r.entries[key]
	var slot slotKey
	if e != nil && e.ChassisID == string(l.ChassisID) && e.PortID == string(l.PortID) {
		slot = slotOf(e) // the usual refresh: reuse the stored strings
	} else {
		slot = slotKey{port, string(l.ChassisID), string(l.PortID)}
	}
	// The same sender with another address: the old one is gone (IP change).
	if oldKey, ok := r.slots[slot]; ok && oldKey != key {
		if old := r.entries[oldKey]; old != nil {
			r.deleteLocked(oldKey, old, inof.ReasonIPChange)
		}
		delete(r.slots, slot)
	}
	switch {
	case l.TTL == 0:
		if e != nil {
			r.deleteLocked(key, e, inof.ReasonAgeOut)
		}
	case e == nil:
		if n := r.perPort[port]; n >= r.cfg.MaxEntriesPerPort {
			r.refused++
			return fmt.Errorf("%w: %s already has %d entries, %s refused", ErrPortFull, port, n, reg.Addr)
		}
		if n := len(r.entries); n >= r.cfg.MaxEntries {
			r.refused++
			return fmt.Errorf("%w: %d entries, %s on %s refused", ErrTableFull, n, reg.Addr, port)
		}
		e = &Entry{Report: inof.Report{Device: dev, Status: inof.Status{State: inof.StateActive}, AccessPort: port, Since: now},
			MAC: bytes.Clone(src), ChassisID: slot.chassis, PortID: slot.portID, TTL: ttl(l), Expires: now.Add(ttl(l))}
		r.entries[key] = e
		r.perPort[port]++
		r.bindLocked(e.MAC, port, 1)
		r.slots[slot] = key
		r.markLocked(key, nil, 0)
	default:
		e.TTL, e.Expires, e.Refreshed = ttl(l), now.Add(ttl(l)), true
		if old := slotOf(e); old != slot {
			// Another sender (a new port ID, or a second host claiming
			// the address) now refreshes the entry: it moves to that
			// slot, and the old slot is forgotten.
			if r.slots[old] == key {
				delete(r.slots, old)
			}
			e.ChassisID, e.PortID = slot.chassis, slot.portID
			r.slots[slot] = key
		}
		if e.Device != dev || !bytes.Equal(e.MAC, src) {
			if !bytes.Equal(e.MAC, src) {
				r.bindLocked(e.MAC, port, -1)
				r.bindLocked(src, port, 1)
			}
			e.Device, e.MAC = dev, bytes.Clone(src)
			r.markLocked(key, nil, 0)
		}
	}
	return nil
}

func ttl(l *LLDPDU) time.Duration { return time.Duration(l.TTL) * time.Second }

// LinkDown removes every entry on port with reason link down, and then
// reports the port down (PortDown). A port still pending from an earlier
// LinkDown moves behind the removals of this one.
func (r *Registry) LinkDown(port string) {
	r.removeWhere(inof.ReasonLinkDown, func(e *Entry) bool { return e.AccessPort == port })
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.downs[port]; c != nil {
		r.queue.MoveToBack(c.elem)
	} else {
		c = &change{port: port, reason: inof.ReasonLinkDown}
		c.elem = r.queue.PushBack(c)
		r.downs[port] = c
	}
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Expire removes every entry whose TTL ran out by now, with reason age-out.
func (r *Registry) Expire(now time.Time) {
	r.removeWhere(inof.ReasonAgeOut, func(e *Entry) bool { return !e.Expires.After(now) })
}

// Run ages entries out every ExpireEvery and delivers events on Events until
// ctx ends; then it closes Events. Call it once.
func (r *Registry) Run(ctx context.Context) error {
	defer close(r.events)
	t := time.NewTicker(r.cfg.ExpireEvery)
	defer t.Stop()
	var (
		ev   Event
		have bool
	)
	for {
		if !have {
			ev, have = r.next()
		}
		var out chan<- Event
		if have {
			out = r.events
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			r.Expire(now)
		case <-r.notify:
		case out <- ev:
			have = false
		}
	}
}

// next takes the oldest pending change and returns the event that tells the
// consumer about it, if any; it then counts as told.
func (r *Registry) next() (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.queue.Len() > 0 {
		c := r.queue.Remove(r.queue.Front()).(*change)
		if c.port != "" {
			delete(r.downs, c.port)
			return Event{Kind: PortDown, Entry: Entry{Report: inof.Report{AccessPort: c.port}}, Reason: c.reason}, true
		}
		delete(r.dirty, c.key)
		cur := r.entries[c.key]
		kn, known := r.known[c.key]
		switch {
		case cur != nil && !known:
			r.known[c.key] = *cur
			return Event{Kind: Registered, Entry: *cur}, true
		case cur != nil && !sameDevice(&kn, cur):
			r.known[c.key] = *cur
			return Event{Kind: Updated, Entry: *cur}, true
		case cur == nil && known:
			delete(r.known, c.key)
			gone := kn
			if c.removed != nil {
				gone = *c.removed
			}
			return Event{Kind: Removed, Entry: gone, Reason: c.reason}, true
		}
	}
	return Event{}, false
}

// Stats returns the table's counters.
func (r *Registry) Stats() RegistryStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RegistryStats{Entries: len(r.entries), Refused: r.refused, PendingEvents: len(r.dirty) + len(r.downs)}
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
		if out[i].AccessPort != out[j].AccessPort {
			return out[i].AccessPort < out[j].AccessPort
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
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []regKey
	for k, e := range r.entries {
		if match(e) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].port != keys[j].port {
			return keys[i].port < keys[j].port
		}
		return keys[i].addr.Less(keys[j].addr)
	})
	for _, k := range keys {
		r.deleteLocked(k, r.entries[k], reason)
	}
}

func (r *Registry) deleteLocked(k regKey, e *Entry, reason inof.Reason) {
	delete(r.entries, k)
	if r.perPort[k.port]--; r.perPort[k.port] <= 0 {
		delete(r.perPort, k.port)
	}
	r.bindLocked(e.MAC, k.port, -1)
	if slot := slotOf(e); r.slots[slot] == k {
		delete(r.slots, slot)
	}
	r.markLocked(k, e, reason)
}

// markLocked records that key changed (removed, if gone is set) and wakes
// Run. A change that leaves the key as the consumer knows it is dropped.
func (r *Registry) markLocked(k regKey, gone *Entry, reason inof.Reason) {
	c := r.dirty[k]
	if c == nil {
		c = &change{key: k}
		c.elem = r.queue.PushBack(c)
		r.dirty[k] = c
	}
	if gone != nil {
		c.removed, c.reason = gone, reason
	}
	cur := r.entries[k]
	kn, known := r.known[k]
	if (cur == nil && !known) || (cur != nil && known && sameDevice(&kn, cur)) {
		r.queue.Remove(c.elem)
		delete(r.dirty, k)
		return
	}
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// bindLocked counts n more (or fewer) entries of a source MAC on port; the
// binding goes with the MAC's last entry.
func (r *Registry) bindLocked(mac net.HardwareAddr, port string, n int) {
	mk, ok := macOf(mac)
	if !ok {
		return
	}
	b := r.macs[mk]
	b.port, b.entries = port, b.entries+n
	if b.entries <= 0 {
		delete(r.macs, mk)
		return
	}
	r.macs[mk] = b
}

func sameDevice(a, b *Entry) bool { return a.Device == b.Device && bytes.Equal(a.MAC, b.MAC) }
