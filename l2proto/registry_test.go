package l2proto

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

func newTestRegistry(t testing.TB, cfg RegistryConfig) *Registry {
	t.Helper()
	r, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// drain takes the pending events without Run (the test is the consumer).
func drain(r *Registry) []Event {
	var out []Event
	for {
		ev, ok := r.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// eventLog collects events a Registry's Run delivers.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(e Event) { l.mu.Lock(); l.evs = append(l.evs, e); l.mu.Unlock() }

func (l *eventLog) take() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.evs
	l.evs = nil
	return out
}

// runRegistry runs r and feeds its events to log until the test ends.
func runRegistry(t testing.TB, r *Registry, log *eventLog) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		for ev := range r.Events() {
			log.add(ev)
		}
		close(done)
	}()
	go r.Run(ctx)
	t.Cleanup(func() { cancel(); <-done })
}

func lldpFor(addr netip.Addr, portID string, ttl uint16, role inof.Role) *LLDPDU {
	return &LLDPDU{ChassisSubtype: ChassisIDMAC, ChassisID: hostMAC, PortSubtype: PortIDIfaceName, PortID: []byte(portID),
		TTL: ttl, Registration: &Registration{Version: 1, Flags: FlagSubscribe, Addr: addr, Role: role,
			Protocol: inof.ProtocolRoCE, ProtoVer: ProtocolVersion1}}
}

func expectEvents(t *testing.T, got []Event, want ...Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || got[i].Reason != want[i].Reason || got[i].Entry.Device.Addr != want[i].Entry.Device.Addr ||
			(want[i].Kind == PortDown && got[i].Entry.AccessPort != want[i].Entry.AccessPort) {
			t.Fatalf("event %d = %v %v %s, want %v %v %s", i, got[i].Kind, got[i].Reason, got[i].Entry.Device.Addr,
				want[i].Kind, want[i].Reason, want[i].Entry.Device.Addr)
		}
	}
}

func ev(k EventKind, addr netip.Addr, r inof.Reason) Event {
	return Event{Kind: k, Reason: r, Entry: Entry{Report: inof.Report{Device: inof.Device{Addr: addr}}}}
}

// portDown is the event of port's loss of carrier.
func portDown(port string) Event {
	return Event{Kind: PortDown, Reason: inof.ReasonLinkDown, Entry: Entry{Report: inof.Report{AccessPort: port}}}
}

func addr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

func mustObserve(t testing.TB, r *Registry, port string, l *LLDPDU, now time.Time) {
	t.Helper()
	if err := r.Observe(port, portMAC(port), l, now); err != nil {
		t.Fatal(err)
	}
}

// portMAC is the MAC of the host the tests put on a port: one host per
// port, so each port's registrations come from a MAC of their own.
func portMAC(port string) net.HardwareAddr {
	h := fnv.New32a()
	h.Write([]byte(port))
	s := h.Sum32()
	return net.HardwareAddr{0x02, 0x00, byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
}

// TestMACBoundToPort: a source MAC that holds a registration on one port
// cannot register on another (counted, "mac-bound") until its entries
// there go: by link down or by age-out.
func TestMACBoundToPort(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{})
	t0 := time.Unix(1000, 0)
	mac := portMAC("p1")
	if err := r.Observe("p1", mac, lldpFor(hostIP, "a", 10, inof.RoleHost), t0); err != nil {
		t.Fatal(err)
	}
	err := r.Observe("p2", mac, lldpFor(netip.MustParseAddr("10.77.0.99"), "b", 120, inof.RoleHost), t0)
	if !errors.Is(err, ErrMACBound) || DropReason(err) != "mac-bound" || r.Stats().Refused != 1 {
		t.Fatalf("same MAC on another port: %v (refused %d)", err, r.Stats().Refused)
	}
	if _, ok := r.Lookup("p2", netip.MustParseAddr("10.77.0.99")); ok {
		t.Fatal("the moved MAC's registration was taken")
	}
	// A second address from the same MAC on its own port is fine.
	if err := r.Observe("p1", mac, lldpFor(netip.MustParseAddr("10.77.0.98"), "c", 10, inof.RoleHost), t0); err != nil {
		t.Fatal(err)
	}
	r.Expire(t0.Add(10 * time.Second)) // both entries on p1 age out
	if err := r.Observe("p2", mac, lldpFor(netip.MustParseAddr("10.77.0.99"), "b", 120, inof.RoleHost), t0.Add(11*time.Second)); err != nil {
		t.Fatalf("after age-out: %v", err)
	}
	r.LinkDown("p2")
	if err := r.Observe("p1", mac, lldpFor(hostIP, "a", 120, inof.RoleHost), t0.Add(12*time.Second)); err != nil {
		t.Fatalf("after link down: %v", err)
	}
}

func TestRegistryLifecycle(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{})
	t0 := time.Unix(1000, 0)
	other := netip.MustParseAddr("10.77.0.3")

	mustObserve(t, r, "p1", lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Registered, hostIP, 0))
	e, ok := r.Lookup("p1", hostIP)
	if !ok || e.Device.Role != inof.RoleHost || e.PortID != "snsd_eth0_01" || !e.Expires.Equal(t0.Add(120*time.Second)) || e.Refreshed {
		t.Fatalf("entry %+v", e)
	}

	// A refresh extends the TTL silently (and marks the entry refreshed);
	// a changed role is an update.
	mustObserve(t, r, "p1", lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), t0.Add(30*time.Second))
	expectEvents(t, drain(r))
	if e, _ := r.Lookup("p1", hostIP); !e.Refreshed || !e.Since.Equal(t0) {
		t.Fatalf("refreshed entry %+v", e)
	}
	mustObserve(t, r, "p1", lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleBoth), t0.Add(31*time.Second))
	expectEvents(t, drain(r), ev(Updated, hostIP, 0))

	// The same sender (chassis + port ID) with a new address: IP change.
	mustObserve(t, r, "p1", lldpFor(other, "snsd_eth0_01", 120, inof.RoleHost), t0.Add(32*time.Second))
	expectEvents(t, drain(r), ev(Removed, hostIP, inof.ReasonIPChange), ev(Registered, other, 0))

	// A second slot on the same port, then age-out of only the stale one.
	mustObserve(t, r, "p1", lldpFor(hostIP, "snsd_eth0_02", 10, inof.RoleHost), t0.Add(40*time.Second))
	expectEvents(t, drain(r), ev(Registered, hostIP, 0))
	r.Expire(t0.Add(49 * time.Second))
	expectEvents(t, drain(r))
	r.Expire(t0.Add(50 * time.Second))
	expectEvents(t, drain(r), ev(Removed, hostIP, inof.ReasonAgeOut))

	// Same address on another port is another entry; link down removes
	// only the port's entries.
	mustObserve(t, r, "p2", lldpFor(hostIP, "snsd_eth1_01", 120, inof.RoleHost), t0.Add(60*time.Second))
	expectEvents(t, drain(r), ev(Registered, hostIP, 0))
	r.LinkDown("p1")
	expectEvents(t, drain(r), ev(Removed, other, inof.ReasonLinkDown), portDown("p1"))
	if got := r.Entries(); len(got) != 1 || got[0].AccessPort != "p2" {
		t.Fatalf("entries %+v", got)
	}

	// TTL 0: forget at once.
	mustObserve(t, r, "p2", lldpFor(hostIP, "snsd_eth1_01", 0, inof.RoleHost), t0.Add(61*time.Second))
	expectEvents(t, drain(r), ev(Removed, hostIP, inof.ReasonAgeOut))
	if len(r.Entries()) != 0 || len(r.slots) != 0 || len(r.perPort) != 0 {
		t.Fatalf("table not empty: %d slots, per port %v", len(r.slots), r.perPort)
	}
}

// TestRegistrySlotBookkeeping: an address whose LLDP port ID keeps changing
// holds one slot, not one per port ID ever seen, and leaves none behind.
func TestRegistrySlotBookkeeping(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{})
	t0 := time.Unix(1000, 0)
	for i := range 1000 {
		mustObserve(t, r, "p1", lldpFor(hostIP, fmt.Sprintf("snsd_eth0_%d", i), 120, inof.RoleHost), t0)
	}
	if len(r.slots) != 1 || len(r.entries) != 1 {
		t.Fatalf("%d slots, %d entries after 1000 port IDs, want 1 and 1", len(r.slots), len(r.entries))
	}
	if e, _ := r.Lookup("p1", hostIP); e.PortID != "snsd_eth0_999" {
		t.Fatalf("entry port ID %q, want the latest", e.PortID)
	}
	expectEvents(t, drain(r), ev(Registered, hostIP, 0))
	// An old port ID is no longer this entry's sender: it registering
	// another address is a new entry, not an IP change.
	mustObserve(t, r, "p1", lldpFor(addr(5), "snsd_eth0_3", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Registered, addr(5), 0))
	// The latest one is: IP change.
	mustObserve(t, r, "p1", lldpFor(addr(6), "snsd_eth0_999", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Removed, hostIP, inof.ReasonIPChange), ev(Registered, addr(6), 0))
	r.LinkDown("p1")
	drain(r)
	if len(r.slots) != 0 || len(r.entries) != 0 || len(r.perPort) != 0 {
		t.Fatalf("after link down: %d slots, %d entries, per port %v", len(r.slots), len(r.entries), r.perPort)
	}
}

// TestRegistryBounds: one host announcing 100,000 addresses on one port
// fills only its port's share; refusals are counted and reported as errors
// SwitchPort can count; refreshes and IP changes still work when full.
func TestRegistryBounds(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{MaxEntries: 300, MaxEntriesPerPort: 128})
	t0 := time.Unix(1000, 0)
	refused := 0
	for i := range 100_000 {
		err := r.Observe("p1", portMAC("p1"), lldpFor(addr(i), fmt.Sprintf("slot%d", i), 120, inof.RoleHost), t0)
		switch {
		case err == nil:
		case errors.Is(err, ErrPortFull) && DropReason(err) == "port-full":
			refused++
		default:
			t.Fatalf("address %d: %v", i, err)
		}
	}
	if st := r.Stats(); st.Entries != 128 || st.Refused != 100_000-128 || refused != 100_000-128 || len(r.slots) != 128 {
		t.Fatalf("stats %+v, %d refused, %d slots", st, refused, len(r.slots))
	}
	// A refresh of a full port's entry, and an IP change, are accepted.
	mustObserve(t, r, "p1", lldpFor(addr(0), "slot0", 120, inof.RoleHost), t0.Add(time.Second))
	mustObserve(t, r, "p1", lldpFor(addr(999_999), "slot1", 120, inof.RoleHost), t0.Add(time.Second))
	if _, ok := r.Lookup("p1", addr(999_999)); !ok {
		t.Fatal("IP change refused on a full port")
	}
	// Other ports fill until the table is full.
	for p := 2; ; p++ {
		err := r.Observe(fmt.Sprintf("p%d", p), portMAC(fmt.Sprintf("p%d", p)), lldpFor(addr(p), "x", 120, inof.RoleHost), t0)
		if err != nil {
			if !errors.Is(err, ErrTableFull) || DropReason(err) != "table-full" || r.Stats().Entries != 300 {
				t.Fatalf("port %d: %v with %d entries", p, err, r.Stats().Entries)
			}
			break
		}
	}
	// Freed room is usable again.
	r.LinkDown("p1")
	mustObserve(t, r, "p9999", lldpFor(hostIP, "x", 120, inof.RoleHost), t0)
	if _, err := NewRegistry(RegistryConfig{MaxEntries: -1}); err == nil {
		t.Fatal("negative bound accepted")
	}
}

// TestRegistryCoalesces: while the consumer lags, a key's changes collapse
// to its current state relative to what the consumer was last told.
func TestRegistryCoalesces(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{})
	t0 := time.Unix(1000, 0)
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Registered, hostIP, 0))

	// Two updates: one event, with the latest state.
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleBoth), t0)
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleTarget), t0)
	got := drain(r)
	expectEvents(t, got, ev(Updated, hostIP, 0))
	if got[0].Entry.Device.Role != inof.RoleTarget {
		t.Fatalf("update carries role %v", got[0].Entry.Device.Role)
	}
	// Registered and gone before delivery: nothing. Removed and back
	// unchanged: nothing.
	mustObserve(t, r, "p1", lldpFor(addr(7), "b", 120, inof.RoleHost), t0)
	mustObserve(t, r, "p1", lldpFor(addr(7), "b", 0, inof.RoleHost), t0)
	r.LinkDown("p1")
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleTarget), t0)
	expectEvents(t, drain(r), portDown("p1")) // the port's loss is told all the same
	// Removed, then back with another device: an update. Removed twice:
	// the last reason.
	r.LinkDown("p1")
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Updated, hostIP, 0), portDown("p1"))
	r.LinkDown("p1")
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleHost), t0)
	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 0, inof.RoleHost), t0)
	expectEvents(t, drain(r), portDown("p1"), ev(Removed, hostIP, inof.ReasonAgeOut))
	if st := r.Stats(); st.PendingEvents != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRegistryPortDown: a port's loss of carrier is one event on the
// stream, after the removals of its entries, also for a port without
// entries; a port down again before delivery is told once, behind the
// newer removals.
func TestRegistryPortDown(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{})
	t0 := time.Unix(1000, 0)
	r.LinkDown("p1")
	expectEvents(t, drain(r), portDown("p1"))

	mustObserve(t, r, "p1", lldpFor(hostIP, "a", 120, inof.RoleHost), t0)
	mustObserve(t, r, "p2", lldpFor(addr(7), "b", 120, inof.RoleHost), t0)
	expectEvents(t, drain(r), ev(Registered, hostIP, 0), ev(Registered, addr(7), 0))
	r.LinkDown("p1")
	r.LinkDown("p2")
	mustObserve(t, r, "p1", lldpFor(addr(8), "c", 120, inof.RoleHost), t0)
	r.LinkDown("p1")
	expectEvents(t, drain(r), ev(Removed, hostIP, inof.ReasonLinkDown), ev(Removed, addr(7), inof.ReasonLinkDown),
		portDown("p2"), portDown("p1"))
	if st := r.Stats(); st.PendingEvents != 0 || st.Entries != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRegistryStalledConsumer: with Run delivering and nobody reading,
// registrations on every port go on at full speed, the pending changes stay
// bounded, and a consumer that reads later ends with the table's state.
func TestRegistryStalledConsumer(t *testing.T) {
	const maxEntries = 64
	r := newTestRegistry(t, RegistryConfig{MaxEntries: maxEntries, MaxEntriesPerPort: 16})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(ctx) }()
	// Let Run take the first event and block handing it over.
	mustObserve(t, r, "p1", lldpFor(hostIP, "first", 120, inof.RoleHost), time.Now())

	done := make(chan struct{})
	go func() {
		defer close(done)
		t0 := time.Now()
		for i := range 100_000 {
			port := fmt.Sprintf("p%d", 1+i%8)
			// Each sender slot keeps changing address (IP changes) and
			// role; some senders come and go.
			slot := fmt.Sprintf("s%d", i%40)
			role := inof.RoleHost
			if i%3 == 0 {
				role = inof.RoleBoth
			}
			r.Observe(port, hostMAC, lldpFor(addr(i), slot, uint16(120*(i%5)), role), t0)
			if i%10_000 == 0 {
				r.LinkDown(port)
			}
			if st := r.Stats(); st.PendingEvents > 2*maxEntries+8 {
				t.Errorf("pending events %d > 2×%d + 8 ports", st.PendingEvents, maxEntries)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("registrations blocked by a consumer that does not read")
	}
	// Now consume: the view built from the events becomes the table. (An
	// event Run holds would make them differ, so equality means done.)
	want := map[regKey]Entry{}
	for _, e := range r.Entries() {
		want[regKey{e.AccessPort, e.Device.Addr}] = e
	}
	view := map[regKey]Entry{}
	same := func() bool {
		if len(view) != len(want) {
			return false
		}
		for k, e := range want {
			if v, ok := view[k]; !ok || !sameDevice(&v, &e) {
				return false
			}
		}
		return true
	}
	for deadline := time.After(60 * time.Second); !same(); {
		var e Event
		select {
		case e = <-r.Events():
		case <-deadline:
			t.Fatalf("view of %d entries never matched the table of %d", len(view), len(want))
		}
		k := regKey{e.Entry.AccessPort, e.Entry.Device.Addr}
		switch _, in := view[k]; e.Kind {
		case Registered, Updated:
			if in != (e.Kind == Updated) {
				t.Fatalf("%v for %v, in view: %v", e.Kind, k, in)
			}
			view[k] = e.Entry
		case Removed:
			if !in {
				t.Fatalf("removed %v never registered", k)
			}
			delete(view, k)
		}
	}
	if st := r.Stats(); st.PendingEvents != 0 {
		t.Fatalf("stats %+v", st)
	}
	cancel()
	if err := <-runDone; err != context.Canceled {
		t.Fatalf("run: %v", err)
	}
	if _, open := <-r.Events(); open {
		t.Fatal("events channel open after Run returned")
	}
}

// TestSwitchPortDispatch drives a SwitchPort over an in-memory link with the
// captured snsd registration and zone query, garbage, and ACKs.
func TestSwitchPortDispatch(t *testing.T) {
	sw, hl := NewMemPair("p1", switchMAC, "host", hostMAC)
	var log eventLog
	reg := newTestRegistry(t, RegistryConfig{MaxEntriesPerPort: 1})
	runRegistry(t, reg, &log)
	res := newResults(1)
	nt, err := NewNotifier(NotifierConfig{Link: sw, OnResult: res.add})
	if err != nil {
		t.Fatal(err)
	}
	queries := make(chan ZoneQuery, 1)
	port, err := NewSwitchPort(SwitchPortConfig{Link: sw, Registry: reg, Notifier: nt,
		OnQuery: func(_ string, q ZoneQuery) { queries <- q }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go nt.Run(ctx)
	portDone := make(chan error, 1)
	go func() { portDone <- port.Run(ctx) }()

	garbage := [][]byte{{1, 2, 3}, make([]byte, 60), append(EncodeFrame(GroupNotify, hostMAC, EtherTypeNotify, nil), 2, 0, 0, 1, 0, 0, 0, 0, 0)}
	for _, g := range garbage {
		if err := hl.WriteFrame(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, fr := range readPcap(t, "host-register.pcap")[:2] {
		if err := hl.WriteFrame(fr.data); err != nil {
			t.Fatal(err)
		}
	}
	// A second address on the port is beyond its bound of 1.
	extra, err := LLDPFrame(hostMAC, lldpFor(netip.MustParseAddr("10.77.0.9"), "snsd_veth-h_02", 120, inof.RoleHost))
	if err != nil {
		t.Fatal(err)
	}
	if err := hl.WriteFrame(extra); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-queries:
		if q.Host != hostIP {
			t.Fatalf("query for %s", q.Host)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("zone query not dispatched")
	}

	// Answer as the host would: a notification goes out, the host ACKs it.
	host := newSNSDHost(hl, hostIP)
	go host.run()
	if _, err := nt.Notify(note(1)); err != nil {
		t.Fatal(err)
	}
	if r := res.wait(t)[0]; r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	counts := port.Drops().Counts()
	if counts["short"] != 1 || counts["ethertype"] != 1 || counts["version"] != 1 || counts["port-full"] != 1 {
		t.Fatalf("drop counts %v", counts)
	}
	waitFor(t, "registration event", func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.evs) > 0 })
	expectEvents(t, log.take(), ev(Registered, hostIP, 0))
	cancel()
	if err := <-portDone; err != context.Canceled {
		t.Fatalf("port run: %v", err)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// failingLink returns an error from ReadFrame and records Close.
type failingLink struct {
	mu     sync.Mutex
	closed bool
}

func (l *failingLink) ReadFrame([]byte) (int, error) { return 0, errors.New("device gone") }
func (l *failingLink) WriteFrame([]byte) error       { return nil }
func (l *failingLink) HardwareAddr() net.HardwareAddr {
	return switchMAC
}
func (l *failingLink) Name() string { return "p1" }
func (l *failingLink) Close() error { l.mu.Lock(); l.closed = true; l.mu.Unlock(); return nil }

// TestSwitchPortClosesLinkOnError: Run owns the link and closes it on a read
// error too, not only when ctx ends.
func TestSwitchPortClosesLinkOnError(t *testing.T) {
	link := &failingLink{}
	nt, err := NewNotifier(NotifierConfig{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	port, err := NewSwitchPort(SwitchPortConfig{Link: link, Registry: newTestRegistry(t, RegistryConfig{}), Notifier: nt})
	if err != nil {
		t.Fatal(err)
	}
	err = port.Run(context.Background())
	link.mu.Lock()
	defer link.mu.Unlock()
	if err == nil || !link.closed {
		t.Fatalf("run: %v, link closed: %v", err, link.closed)
	}
}

// TestRegistryRunExpires: Run's ticker ages out an entry whose TTL is over.
func TestRegistryRunExpires(t *testing.T) {
	r := newTestRegistry(t, RegistryConfig{ExpireEvery: time.Millisecond})
	// Registered 200 s ago with a 120 s TTL: due at the first tick.
	mustObserve(t, r, "p1", lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), time.Now().Add(-200*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	for _, want := range []Event{ev(Registered, hostIP, 0), ev(Removed, hostIP, inof.ReasonAgeOut)} {
		select {
		case e := <-r.Events():
			expectEvents(t, []Event{e}, want)
		case <-time.After(30 * time.Second):
			t.Fatal("Run never expired the entry")
		}
	}
}
