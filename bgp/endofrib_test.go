package bgp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestEndOfRIBFollowsTheTable: NeighborStatus.EndOfRIB with GoBGP on both
// ends. A client that restarts gracefully (the reflector kept its route
// target memberships) receives every record of its memberships before the
// reflector's End-of-RIB: the first status that shows End-of-RIB shows them
// all accepted. The switch agent's configuration hold relies on it
// (docs/switch-agent.md, "Configuration on return"). A client that starts
// afresh gets the End-of-RIB before them, as GoBGP sends its table when the
// session comes up, before it has read the client's memberships (no
// RT-constraint deferral is configured): logged, as the measure of what the
// agent's quiet time after End-of-RIB covers.
func TestEndOfRIBFollowsTheTable(t *testing.T) {
	ctx := context.Background()
	gr := bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 60 * time.Second, Notification: true}}
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), gr)
	const n = 300
	for i := range n {
		c := &record.Config{Reflector: r.RouterID(), Writer: r.RouterID(), Kind: 1, Name: fmt.Sprintf("zone%03d", i), Gen: 1,
			Payload: []byte("x")}
		if err := r.Publish(ctx, c, record.ConfigRT(bgptest.ASN)); err != nil {
			t.Fatal(err)
		}
	}
	// firstEOR connects c and returns the accepted count of the first status
	// that shows the reflector's End-of-RIB.
	firstEOR := func(c *bgptest.Node) uint64 {
		t.Helper()
		if err := c.Subscribe(ctx, record.ConfigRT(bgptest.ASN)); err != nil {
			t.Fatal(err)
		}
		if err := c.AddNeighbor(ctx, bgp.Neighbor{Address: r.Addr, Port: r.Port, LocalAddress: c.Addr}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			ns, err := c.Neighbors(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) == 1 && ns[0].State == bgp.StateEstablished && ns[0].EndOfRIB {
				return ns[0].Received
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("no End-of-RIB from the reflector")
		return 0
	}
	if err := r.AddNeighbor(ctx, bgp.Neighbor{Address: bgptest.Addr("127.0.0.2"), Passive: true, RRClient: true}); err != nil {
		t.Fatal(err)
	}
	fresh := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), gr)
	got := firstEOR(fresh)
	t.Logf("fresh start: %d of %d records accepted when End-of-RIB was first seen", got, n)
	fresh.View.WaitFor(t, "every record", func(m map[string]bgp.RecordEvent) bool { return len(m) == n })
	fresh.Stop() // a graceful stop: the reflector keeps the client's memberships

	restarted := gr
	restarted.GracefulRestart.Restarting = true
	back := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), restarted)
	if got := firstEOR(back); got != n {
		t.Fatalf("graceful restart: %d of %d records accepted when End-of-RIB was first seen", got, n)
	}
}
