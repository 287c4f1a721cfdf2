package l2proto

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

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
		if got[i].Kind != want[i].Kind || got[i].Reason != want[i].Reason || got[i].Entry.Device.Addr != want[i].Entry.Device.Addr {
			t.Fatalf("event %d = %v %v %s, want %v %v %s", i, got[i].Kind, got[i].Reason, got[i].Entry.Device.Addr,
				want[i].Kind, want[i].Reason, want[i].Entry.Device.Addr)
		}
	}
}

func ev(k EventKind, addr netip.Addr, r inof.Reason) Event {
	return Event{Kind: k, Reason: r, Entry: Entry{Device: inof.Device{Addr: addr}}}
}

func TestRegistryLifecycle(t *testing.T) {
	var log eventLog
	r := NewRegistry(log.add)
	t0 := time.Unix(1000, 0)
	other := netip.MustParseAddr("10.77.0.3")

	r.Observe("p1", hostMAC, lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), t0)
	expectEvents(t, log.take(), ev(Registered, hostIP, 0))
	e, ok := r.Lookup("p1", hostIP)
	if !ok || e.Device.Role != inof.RoleHost || e.PortID != "snsd_eth0_01" || !e.Expires.Equal(t0.Add(120*time.Second)) {
		t.Fatalf("entry %+v", e)
	}

	// A refresh extends the TTL silently; a changed role is an update.
	r.Observe("p1", hostMAC, lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), t0.Add(30*time.Second))
	expectEvents(t, log.take())
	r.Observe("p1", hostMAC, lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleBoth), t0.Add(31*time.Second))
	expectEvents(t, log.take(), ev(Updated, hostIP, 0))

	// The same sender (chassis + port ID) with a new address: IP change.
	r.Observe("p1", hostMAC, lldpFor(other, "snsd_eth0_01", 120, inof.RoleHost), t0.Add(32*time.Second))
	expectEvents(t, log.take(), ev(Removed, hostIP, inof.ReasonIPChange), ev(Registered, other, 0))

	// A second slot on the same port, then age-out of only the stale one.
	r.Observe("p1", hostMAC, lldpFor(hostIP, "snsd_eth0_02", 10, inof.RoleHost), t0.Add(40*time.Second))
	expectEvents(t, log.take(), ev(Registered, hostIP, 0))
	r.Expire(t0.Add(49 * time.Second))
	expectEvents(t, log.take())
	r.Expire(t0.Add(50 * time.Second))
	expectEvents(t, log.take(), ev(Removed, hostIP, inof.ReasonAgeOut))

	// Same address on another port is another entry; link down removes
	// only the port's entries.
	r.Observe("p2", hostMAC, lldpFor(hostIP, "snsd_eth1_01", 120, inof.RoleHost), t0.Add(60*time.Second))
	expectEvents(t, log.take(), ev(Registered, hostIP, 0))
	r.LinkDown("p1")
	expectEvents(t, log.take(), ev(Removed, other, inof.ReasonLinkDown))
	if got := r.Entries(); len(got) != 1 || got[0].Port != "p2" {
		t.Fatalf("entries %+v", got)
	}

	// TTL 0: forget at once.
	r.Observe("p2", hostMAC, lldpFor(hostIP, "snsd_eth1_01", 0, inof.RoleHost), t0.Add(61*time.Second))
	expectEvents(t, log.take(), ev(Removed, hostIP, inof.ReasonAgeOut))
	if len(r.Entries()) != 0 {
		t.Fatal("table not empty")
	}
}

// TestSwitchPortDispatch drives a SwitchPort over an in-memory link with the
// captured snsd registration and zone query, garbage, and ACKs.
func TestSwitchPortDispatch(t *testing.T) {
	sw, hl := NewMemPair("p1", switchMAC, "host", hostMAC)
	var log eventLog
	reg := NewRegistry(log.add)
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
	select {
	case q := <-queries:
		if q.Host != hostIP {
			t.Fatalf("query for %s", q.Host)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("zone query not dispatched")
	}
	expectEvents(t, log.take(), ev(Registered, hostIP, 0))

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
	if counts["short"] != 1 || counts["ethertype"] != 1 || counts["version"] != 1 {
		t.Fatalf("drop counts %v", counts)
	}
	cancel()
	if err := <-portDone; err != context.Canceled {
		t.Fatalf("port run: %v", err)
	}
}

// TestRegistryRunExpires: Run's ticker ages out an entry whose TTL is over.
func TestRegistryRunExpires(t *testing.T) {
	removed := make(chan Event, 1)
	r := NewRegistry(func(e Event) {
		if e.Kind == Removed {
			removed <- e
		}
	})
	// Registered 200 s ago with a 120 s TTL: due at the first tick.
	r.Observe("p1", hostMAC, lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost), time.Now().Add(-200*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx, time.Millisecond)
	select {
	case e := <-removed:
		if e.Reason != inof.ReasonAgeOut || e.Entry.Device.Addr != hostIP {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run never expired the entry")
	}
}
