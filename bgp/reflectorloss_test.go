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
