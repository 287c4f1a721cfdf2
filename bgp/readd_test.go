package bgp_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
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
	bgptest.SkipUnderRace(t)
	ctx := context.Background()
	r1Addr := bgptest.Addr("127.0.0.1")
	clients := []string{"127.0.0.2", "127.0.0.3"}
	c1 := childConfig{RouterID: r1Addr.String(), Port: bgptest.FreePort(t, r1Addr), Clients: clients, RestartTime: 120 * time.Second}
	r1 := startChildReflector(t, c1)
	rm := bfd.NewManager(bfd.ManagerOptions{})
	defer rm.Close()
	r2 := bgptest.StartReflector(t, bgptest.Addr("127.0.0.4"), bgp.Options{BFD: rm,
		GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second, Restarting: true}})
	gr := bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}}
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), gr)
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), gr)
	c := bgptest.StartClient(t, bgptest.Addr("127.0.0.5"), gr)
	fast := &bgp.NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	for _, cl := range []*bgptest.Node{a, b, c} {
		bgptest.Connect(t, r2, cl, func(n *bgp.Neighbor) {
			if n.Address == a.Addr { // r2's side of its session to a
				n.BFD, n.LocalAddress = fast, r2.Addr
			}
		})
	}
	for _, cl := range []*bgptest.Node{a, b} {
		if err := cl.AddNeighbor(ctx, bgp.Neighbor{Address: r1.addr, Port: r1.port, LocalAddress: cl.Addr}); err != nil {
			t.Fatal(err)
		}
	}
	zone := record.ZoneRT(bgptest.ASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	bfdChild, _ := selfexec.Start(t, bfdChildEnv+"="+a.Addr.String()+","+r2.Addr.String())
	bgptest.WaitEstablished(t, r2, 3)
	bgptest.WaitEstablished(t, a, 2)
	bgptest.WaitEstablished(t, b, 2)
	waitBFD(t, rm, 1)
	old := bgptest.Device(a.RouterID(), 1)
	if err := a.Publish(ctx, old, zone); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitReceived(t, b, map[netip.Addr]uint64{r1.addr: 1, r2.Addr: 1}) // r2 has finished its restart's sync

	// c goes for good: r2 holds its graceful-restart capability and no
	// End-of-RIB from it.
	c.Stop()
	bgptest.WaitState(t, r2, c.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	// a's BFD dies with its process: r2 removes a and adds it back; a's
	// BFD returns and a reconnects.
	bfdChild.Kill()
	bgptest.WaitReceived(t, b, map[netip.Addr]uint64{r1.addr: 1, r2.Addr: 0})
	// Slower than before (the session takes the slower side's intervals),
	// so that a starved machine does not lose it again spuriously.
	am := bfd.NewManager(bfd.ManagerOptions{})
	defer am.Close()
	if _, err := am.Add(bfd.Config{Key: bfd.SessionKey{Local: a.Addr, Peer: r2.Addr}, DesiredMinTx: 300 * time.Millisecond,
		RequiredMinRx: 300 * time.Millisecond, DetectMult: 5}); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitState(t, r2, a.Addr, func(s bgp.SessionState) bool { return s == bgp.StateEstablished })

	rec := bgptest.Device(a.RouterID(), 2)
	if err := a.Publish(ctx, rec, zone); err != nil {
		t.Fatal(err)
	}
	// Both of a's records reach b through both reflectors (before the fix
	// r2's count stayed at 0: a sent r2 nothing).
	bgptest.WaitReceived(t, b, map[netip.Addr]uint64{r1.addr: 2, r2.Addr: 2})

	// r1 is killed: b drops its routes, r2 serves, nothing is withdrawn.
	withdraws := b.View.Withdraws()
	r1.Kill()
	bgptest.WaitState(t, b, r1.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	b.View.WaitFor(t, "a's records from r2", func(m map[string]bgp.RecordEvent) bool {
		for _, k := range [][]byte{old.Key(), rec.Key()} {
			if e, ok := m[string(k)]; !ok || e.Source != r2.Addr {
				return false
			}
		}
		return true
	})
	if w := b.View.Withdraws(); w != withdraws {
		t.Fatalf("b saw %d withdraws when it dropped r1 while r2 served", w-withdraws)
	}
}
