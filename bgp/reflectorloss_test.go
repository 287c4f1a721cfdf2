package bgp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// TestLostReflectorDoesNotShadow: two reflectors serve two clients with
// graceful restart. The reflector with the lower address (whose copies win
// GoBGP's tie-break) is killed; its routes would be kept stale for the
// whole restart time and shadow the other reflector's newer copies. A
// record changed after the kill must reach the receiving client through the
// other reflector long before the restart time (120 s here), with no
// withdraw of the unchanged records; and the killed reflector, back, serves
// again.
func TestLostReflectorDoesNotShadow(t *testing.T) {
	ctx := context.Background()
	r1Addr, r2Addr := addr("127.0.0.1"), addr("127.0.0.4")
	clients := []string{"127.0.0.2", "127.0.0.3"}
	c1 := childConfig{RouterID: r1Addr.String(), Port: freePort(t, r1Addr), Clients: clients, RestartTime: 120 * time.Second}
	c2 := childConfig{RouterID: r2Addr.String(), Port: freePort(t, r2Addr), Clients: clients, RestartTime: 120 * time.Second}
	r1 := startChildReflector(t, c1)
	r2 := startChildReflector(t, c2)
	gr := Options{GracefulRestart: GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}}
	a := startClient(t, addr("127.0.0.2"), gr)
	b := startClient(t, addr("127.0.0.3"), gr)
	for _, c := range []*node{a, b} {
		for _, r := range []*childReflector{r1, r2} {
			if err := c.AddNeighbor(ctx, Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitEstablished(t, a, 2)
	waitEstablished(t, b, 2)
	zone := ZoneRT(testASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	fromR1 := func(m map[string]RecordEvent) bool {
		if len(m) != n {
			return false
		}
		for _, e := range m {
			if e.Source != r1.addr {
				return false
			}
		}
		return true
	}
	b.view.waitFor(t, "every record best from the lower-addressed reflector", fromR1)
	// The other reflector's copies must have arrived too before r1 goes:
	// best from r1 says nothing of them, and a record r2 has not reflected
	// yet is withdrawn when b drops r1 (the test used to fail so, "the
	// client saw N withdraws", on a loaded machine).
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: n, r2.addr: n})

	r1.Kill() // SIGKILL: the sessions die, graceful restart keeps r1's routes
	waitState(t, b, r1.addr, func(s SessionState) bool { return s != StateEstablished })
	waitState(t, a, r1.addr, func(s SessionState) bool { return s != StateEstablished })
	killed := time.Now()

	changed := device(routerID(a), 0)
	changed.State, changed.Reason, changed.Changed = inof.StateInactive, inof.ReasonLinkDown, time.UnixMilli(3000)
	if err := a.Publish(ctx, changed, zone); err != nil {
		t.Fatal(err)
	}
	key := string(changed.Key())
	b.view.waitFor(t, "the change, through the other reflector", func(m map[string]RecordEvent) bool {
		d, ok := m[key].Record.(*DeviceRecord)
		return ok && d.State == inof.StateInactive
	})
	t.Logf("change seen at the client %v after the kill (restart time 120 s)", time.Since(killed).Round(time.Millisecond))
	b.view.waitFor(t, "every record from the surviving reflector", func(m map[string]RecordEvent) bool {
		for _, e := range m {
			if e.Source != r2.addr || e.Stale {
				return false
			}
		}
		return len(m) == n
	})
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the client saw %d withdraws while the other reflector served", w)
	}

	// r1 comes back (restarting) and the client peers with it again.
	c1.Restarting = true
	startChildReflector(t, c1)
	waitEstablished(t, b, 2)
	if got := b.Stats(); got.Malformed != 0 {
		t.Fatalf("stats %+v", got)
	}
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the client saw %d withdraws after the reflector came back", w)
	}
}

// TestLostReflectorWaitsForReturningOne: the soak's seed
// 4501343603921199704 step 16 in two reflectors and two clients. The
// reflector that serves (r2) has just come back from a restart and has not
// re-learned the publishing client's records yet when the other (r1, whose
// copies are best) is lost: the receiving client drops r1 for r2, which
// lacks the records. Their withdraws must be held for the settle time of
// r2's return, and r2 re-learning them within it must leave the client
// with every record and no withdraw.
func TestLostReflectorWaitsForReturningOne(t *testing.T) {
	ctx := context.Background()
	r1Addr, r2Addr := addr("127.0.0.1"), addr("127.0.0.4")
	clients := []string{"127.0.0.2", "127.0.0.3"}
	c1 := childConfig{RouterID: r1Addr.String(), Port: freePort(t, r1Addr), Clients: clients, RestartTime: 120 * time.Second}
	c2 := childConfig{RouterID: r2Addr.String(), Port: freePort(t, r2Addr), Clients: clients, RestartTime: 120 * time.Second}
	r1 := startChildReflector(t, c1)
	r2 := startChildReflector(t, c2)
	// The settle time is far longer than the test: only r2 re-learning
	// the records ends the hold.
	gr := Options{GracefulRestart: GracefulRestart{Enabled: true, RestartTime: 120 * time.Second, SettleTime: 10 * time.Minute}}
	a := startClient(t, addr("127.0.0.2"), gr)
	b := startClient(t, addr("127.0.0.3"), gr)
	peer := func(c *node, r *childReflector) {
		t.Helper()
		if err := c.AddNeighbor(ctx, Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*node{a, b} {
		peer(c, r1)
		peer(c, r2)
	}
	waitEstablished(t, a, 2)
	waitEstablished(t, b, 2)
	zone := ZoneRT(testASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	from := func(r netip.Addr) func(map[string]RecordEvent) bool {
		return func(m map[string]RecordEvent) bool {
			if len(m) != n {
				return false
			}
			for _, e := range m {
				if e.Source != r || e.Stale {
					return false
				}
			}
			return true
		}
	}
	b.view.waitFor(t, "every record best from the lower-addressed reflector", from(r1.addr))
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: n, r2.addr: n})

	// r2 restarts without a's records: a is not its neighbor meanwhile.
	if err := a.RemoveNeighbor(ctx, r2.addr); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: n, r2.addr: 0})
	r2.Kill()
	waitState(t, b, r2.addr, func(s SessionState) bool { return s != StateEstablished })
	c2.Restarting = true
	r2 = startChildReflector(t, c2)
	waitNeighbors(t, b, "r2 back with End-of-RIB", func(ns []NeighborStatus) bool {
		for _, s := range ns {
			if s.Address == r2.addr {
				return s.State == StateEstablished && s.EndOfRIB
			}
		}
		return false
	})

	// r1 is lost: b drops it for r2, which holds none of the records.
	r1.Kill()
	waitState(t, b, r1.addr, func(s SessionState) bool { return s != StateEstablished })
	// b's records, best from r1 until now, are from nowhere once b has
	// dropped r1: without the hold they are withdrawn.
	waitNeighbors(t, b, "r1 dropped", func([]NeighborStatus) bool { return b.loss.lost(r1.addr) })
	if got := b.view.withdrawCount(); got != 0 {
		t.Fatalf("the client saw %d withdraws when it dropped r1 for a reflector back moments ago", got)
	}

	// r2 re-learns them.
	peer(a, r2)
	b.view.waitFor(t, "every record from the returned reflector", from(r2.addr))
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the client saw %d withdraws; the returned reflector re-learned every record within its settle time", w)
	}
}
