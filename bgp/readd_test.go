package bgp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/selfexec"
)

// TestReaddedClientOfRestartedReflector replays soak seed
// 8496823541670719219 step 5 with real GoBGP speakers. Reflector r2 runs as
// a graceful restart (GracefulRestart.Restarting) that has long finished
// its sync; one of its clients (c) has since gone and stays down. Client
// a's BFD towards r2 dies (its process was killed), so r2 removes a and
// adds it back, and a reconnects when its BFD is back. A record a publishes
// then must reach r2, and so client b, which holds it from r1 too, must keep
// it when r1 is killed and b drops r1's routes. Before the fix r2 added a
// back as a restarting speaker's neighbor: GoBGP deferred everything r2
// sends a, its route-target membership included, until every neighbor had
// sent End-of-RIB again (c never does), so a filtered its records away from
// r2, b held them from r1 only, and lost them with r1.
func TestReaddedClientOfRestartedReflector(t *testing.T) {
	skipUnderRace(t)
	ctx := context.Background()
	r1Addr := addr("127.0.0.1")
	clients := []string{"127.0.0.2", "127.0.0.3"}
	c1 := childConfig{RouterID: r1Addr.String(), Port: freePort(t, r1Addr), Clients: clients, RestartTime: 120 * time.Second}
	r1 := startChildReflector(t, c1)
	rm := bfd.NewManager(bfd.ManagerOptions{})
	defer rm.Close()
	r2 := startReflector(t, addr("127.0.0.4"), Options{BFD: rm,
		GracefulRestart: GracefulRestart{Enabled: true, RestartTime: 120 * time.Second, Restarting: true}})
	gr := Options{GracefulRestart: GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}}
	a := startClient(t, addr("127.0.0.2"), gr)
	b := startClient(t, addr("127.0.0.3"), gr)
	c := startClient(t, addr("127.0.0.5"), gr)
	fast := &NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	for _, cl := range []*node{a, b, c} {
		connect(t, r2, cl, func(n *Neighbor) {
			if n.Address == a.addr { // r2's side of its session to a
				n.BFD, n.LocalAddress = fast, r2.addr
			}
		})
	}
	for _, cl := range []*node{a, b} {
		if err := cl.AddNeighbor(ctx, Neighbor{Address: r1.addr, Port: r1.port, LocalAddress: cl.addr}); err != nil {
			t.Fatal(err)
		}
	}
	zone := record.ZoneRT(testASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	bfdChild, _ := selfexec.Start(t, bfdChildEnv+"="+a.addr.String()+","+r2.addr.String())
	waitEstablished(t, r2, 3)
	waitEstablished(t, a, 2)
	waitEstablished(t, b, 2)
	waitBFD(t, rm, 1)
	old := device(routerID(a), 1)
	if err := a.Publish(ctx, old, zone); err != nil {
		t.Fatal(err)
	}
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: 1, r2.addr: 1}) // r2 has finished its restart's sync

	// c goes for good: r2 holds its graceful-restart capability and no
	// End-of-RIB from it.
	c.Stop()
	waitState(t, r2, c.addr, func(s SessionState) bool { return s != StateEstablished })
	// a's BFD dies with its process: r2 removes a and adds it back; a's
	// BFD returns and a reconnects.
	bfdChild.Kill()
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: 1, r2.addr: 0})
	// Slower than before (the session takes the slower side's intervals),
	// so that a starved machine does not lose it again spuriously.
	am := bfd.NewManager(bfd.ManagerOptions{})
	defer am.Close()
	if _, err := am.Add(bfd.Config{Key: bfd.SessionKey{Local: a.addr, Peer: r2.addr}, DesiredMinTx: 300 * time.Millisecond,
		RequiredMinRx: 300 * time.Millisecond, DetectMult: 5}); err != nil {
		t.Fatal(err)
	}
	waitState(t, r2, a.addr, func(s SessionState) bool { return s == StateEstablished })

	rec := device(routerID(a), 2)
	if err := a.Publish(ctx, rec, zone); err != nil {
		t.Fatal(err)
	}
	// Both of a's records reach b through both reflectors (before the fix
	// r2's count stayed at 0: a sent r2 nothing).
	waitReceived(t, b, map[netip.Addr]uint64{r1.addr: 2, r2.addr: 2})

	// r1 is killed: b drops its routes, r2 serves, nothing is withdrawn.
	withdraws := b.view.withdrawCount()
	r1.Kill()
	waitState(t, b, r1.addr, func(s SessionState) bool { return s != StateEstablished })
	b.view.waitFor(t, "a's records from r2", func(m map[string]RecordEvent) bool {
		for _, k := range [][]byte{old.Key(), rec.Key()} {
			if e, ok := m[string(k)]; !ok || e.Source != r2.addr {
				return false
			}
		}
		return true
	})
	if w := b.view.withdrawCount(); w != withdraws {
		t.Fatalf("b saw %d withdraws when it dropped r1 while r2 served", w-withdraws)
	}
}
