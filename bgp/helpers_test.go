package bgp_test

// Helpers of bgp's own tests over bgptest's speakers.

import (
	"context"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// publishTo subscribes b to the zone "prod" and has a publish n device
// records in it; it returns the zone's route target.
func publishTo(t testing.TB, a, b *bgptest.Node, n int) record.RouteTarget {
	t.Helper()
	ctx := context.Background()
	zone := record.ZoneRT(bgptest.ASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := a.Publish(ctx, bgptest.Device(a.RouterID(), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	return zone
}

// star starts one reflector and two clients a and b connected to it, with
// b subscribed to the given zones, and waits for both sessions.
func star(t *testing.T, zones ...record.RouteTarget) (r, a, b *bgptest.Node) {
	t.Helper()
	r = bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	a = bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	b = bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{})
	bgptest.Connect(t, r, a, nil)
	bgptest.Connect(t, r, b, nil)
	for _, z := range zones {
		if err := b.Subscribe(context.Background(), z); err != nil {
			t.Fatal(err)
		}
	}
	bgptest.WaitEstablished(t, a, 1)
	bgptest.WaitEstablished(t, b, 1)
	return r, a, b
}
