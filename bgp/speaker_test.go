package bgp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestReflectOneToTwo: one reflector, two clients; a record published by
// one client reaches the other (which subscribed to its zone), and its
// withdrawal clears it everywhere.
func TestReflectOneToTwo(t *testing.T) {
	ctx := context.Background()
	zone := record.ZoneRT(bgptest.ASN, "prod")
	r, a, b := star(t, zone)

	rec := bgptest.Device(0x7f000002, 1)
	if err := a.Publish(ctx, rec, zone); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "record at b", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(rec.Key())]; return ok })
	got, _ := b.View.Get(rec.Key())
	d, ok := got.Record.(*record.Device)
	if !ok || d.Device != rec.Device || d.AccessPort != "swp1" || got.Source != r.Addr || len(got.RouteTargets) != 1 || got.RouteTargets[0] != zone {
		t.Fatalf("b got %+v (%+v)", got, got.Record)
	}
	r.View.WaitFor(t, "record at reflector", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(rec.Key())]; return ok })

	if err := a.Withdraw(ctx, rec.Key()); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "withdraw at b", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(rec.Key())]; return !ok })
	r.View.WaitFor(t, "withdraw at reflector", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(rec.Key())]; return !ok })
}

func TestPublishTooLarge(t *testing.T) {
	c := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	big := &record.Config{Reflector: 1, Kind: 2, Name: "z", Payload: make([]byte, 3890)}
	if err := c.Publish(context.Background(), big, record.ConfigRT(bgptest.ASN)); !errors.Is(err, record.ErrTooLarge) {
		t.Fatalf("publish of %d-byte payload: %v", len(big.Payload), err)
	}
	ok := &record.Config{Reflector: 1, Kind: 2, Name: "z", Payload: make([]byte, 3800)}
	if err := c.Publish(context.Background(), ok, record.ConfigRT(bgptest.ASN)); err != nil {
		t.Fatalf("publish of %d-byte payload: %v", len(ok.Payload), err)
	}
}
