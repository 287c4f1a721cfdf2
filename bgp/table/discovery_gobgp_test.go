package table

import (
	"context"
	"reflect"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestDiscoveryRecordReachesSubscribersGoBGP: a discovery record reaches,
// through a real GoBGP reflector, the clients subscribed to DiscoveryRT or
// to every record, and no client subscribed to a zone only; the reflector
// takes it from its owner, and refuses one that names another switch.
func TestDiscoveryRecordReachesSubscribersGoBGP(t *testing.T) {
	ctx := context.Background()
	red := record.ZoneRT(bgptest.ASN, "red")
	r, cs, _ := realStar(t, nil, []record.RouteTarget{record.DiscoveryRT}, []record.RouteTarget{red}, []record.RouteTarget{record.AnyRT})
	rx := bgptest.NewRecordView()
	if err := r.WatchReceived(ctx, rx.Apply, record.TypeDiscovery); err != nil {
		t.Fatal(err)
	}
	d := discoveryRec(cs[0].RouterID(), "192.0.2.1/24")
	if err := cs[0].Publish(ctx, d, record.DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	rx.WaitFor(t, "the discovery record at the reflector", bgptest.HasKey(d.Key()))
	origins := Origins{Role: bgp.RoleReflector, ASN: bgptest.ASN}
	if got, _ := rx.Get(d.Key()); origins.Check(got) != "" {
		t.Fatalf("the reflector refused its owner's discovery record: %s", origins.Check(got))
	}
	cs[1].View.WaitFor(t, "the discovery record at the DiscoveryRT subscriber", bgptest.HasKey(d.Key()))
	cs[3].View.WaitFor(t, "the discovery record at the AnyRT subscriber", bgptest.HasKey(d.Key()))
	if got, _ := cs[1].View.Get(d.Key()); !reflect.DeepEqual(got.Record, d) || got.NextHop != cs[0].RouterID().Addr() {
		t.Fatalf("subscriber got %+v (next hop %s)", got.Record, got.NextHop)
	}
	marker := bgptest.Device(cs[0].RouterID(), 1)
	if err := cs[0].Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	cs[2].View.WaitFor(t, "the device record at the zone subscriber", bgptest.HasKey(marker.Key()))
	if cs[2].View.Has(d.Key()) {
		t.Fatal("the discovery record reached a client subscribed to a zone only")
	}

	// Another client announcing the first one's controller is refused.
	forged := discoveryRec(cs[0].RouterID(), "198.51.100.1/24")
	if err := cs[2].Publish(ctx, forged, record.DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	rx.WaitFor(t, "the forged discovery record at the reflector", func(m map[string]bgp.RecordEvent) bool {
		return m[string(forged.Key())].Source == cs[2].Addr
	})
	if got, _ := rx.Get(forged.Key()); origins.Check(got) != RefusedOtherSwitch {
		t.Fatalf("forged discovery record: check %q, want %q", origins.Check(got), RefusedOtherSwitch)
	}
}
