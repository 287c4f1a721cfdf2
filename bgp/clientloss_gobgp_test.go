package bgp_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
)

// TestSilentClientDemoted: a reflector demotes a silent switch's records
// (clientloss.go) with real GoBGP speakers: at another switch the other
// reflector's copies win, with no withdraw; once the other reflector is
// gone, the demoted copies serve, again with no withdraw.
func TestSilentClientDemoted(t *testing.T) {
	ctx := context.Background()
	r1, r2 := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{}), bgptest.StartReflector(t, bgptest.Addr("127.0.0.4"), bgp.Options{})
	a, b := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{}), bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{})
	for _, r := range []*bgptest.Node{r1, r2} {
		bgptest.Connect(t, r, a, nil)
		bgptest.Connect(t, r, b, nil)
	}
	bgptest.WaitEstablished(t, a, 2)
	bgptest.WaitEstablished(t, b, 2)
	const n = 10
	publishTo(t, a, b, n)
	b.View.WaitFor(t, "every record best from the lower-addressed reflector", allFrom(r1.Addr, n))
	bgptest.WaitReceived(t, b, map[netip.Addr]uint64{r1.Addr: n, r2.Addr: n})

	if err := r1.DemoteClient(ctx, a.Addr, true); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "every record best from the other reflector", allFrom(r2.Addr, n))
	r2.Stop()
	b.View.WaitFor(t, "the demoted copies serve once the other reflector is gone", allFrom(r1.Addr, n))
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("the switch saw %d withdraws", w)
	}
}
