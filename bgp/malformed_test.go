package bgp_test

import (
	"context"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestMalformedFromPeer: a malformed record from a client is counted and
// treated as withdrawn by the receivers, the sessions stay up, and a valid
// value under the same key later is taken normally.
func TestMalformedFromPeer(t *testing.T) {
	ctx := context.Background()
	zone := record.ZoneRT(bgptest.ASN, "prod")
	r, a, b := star(t, zone)

	bad := bgptest.Device(a.RouterID(), 1)
	k, v, _ := record.Encode(bad, 1)
	v[2] = 0 // role 0
	p, err := bgp.OpaquePath(k, v, []record.RouteTarget{zone})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddPath(ctx, p); err != nil {
		t.Fatal(err)
	}
	good := bgptest.Device(a.RouterID(), 2)
	if err := a.Publish(ctx, good, zone); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "good record", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(good.Key())]; return ok })
	deadline := time.Now().Add(30 * time.Second)
	for b.Stats().Malformed == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if b.Stats().Malformed != 1 || r.Stats().Malformed != 1 || b.View.Has(k) {
		t.Fatalf("malformed: b %d, reflector %d, b holds it %v", b.Stats().Malformed, r.Stats().Malformed, b.View.Has(k))
	}
	if err := a.Publish(ctx, bad, zone); err != nil { // same key, valid value
		t.Fatal(err)
	}
	b.View.WaitFor(t, "repaired record", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(k)]; return ok })
	if !sessionUp(t, b, r, time.Second) || !sessionUp(t, a, r, time.Second) {
		t.Fatal("a malformed record took a session down")
	}
}
