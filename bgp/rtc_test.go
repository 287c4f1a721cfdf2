package bgp_test

import (
	"context"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestRTConstraint: a client receives only the zones it subscribed to, and
// a zone's records arrive promptly once it subscribes.
func TestRTConstraint(t *testing.T) {
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	r, a, b := star(t, red)

	const per = 100
	var blueKeys, redKeys [][]byte
	// Blue first: by the time the last red record arrives, every blue one
	// passed the reflector's filter before it.
	for i := range per {
		d := bgptest.Device(a.RouterID(), i)
		blueKeys = append(blueKeys, d.Key())
		if err := a.Publish(ctx, d, blue); err != nil {
			t.Fatal(err)
		}
	}
	for i := range per {
		d := bgptest.Device(a.RouterID(), per+i)
		redKeys = append(redKeys, d.Key())
		if err := a.Publish(ctx, d, red); err != nil {
			t.Fatal(err)
		}
	}
	hasAll := func(keys [][]byte) func(map[string]bgp.RecordEvent) bool {
		return func(m map[string]bgp.RecordEvent) bool {
			for _, k := range keys {
				if _, ok := m[string(k)]; !ok {
					return false
				}
			}
			return true
		}
	}
	b.View.WaitFor(t, "red records", hasAll(redKeys))
	for _, k := range blueKeys {
		if b.View.Has(k) {
			t.Fatalf("b received a blue record without subscribing")
		}
	}
	r.View.WaitFor(t, "all records at the reflector", hasAll(append(blueKeys, redKeys...)))

	start := time.Now()
	if err := b.Subscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue records after subscribing", hasAll(blueKeys))
	t.Logf("%d blue records %s after subscribing", per, time.Since(start))

	// Unsubscribing withdraws the zone's records from b.
	if err := b.Unsubscribe(ctx, blue); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue records gone", func(m map[string]bgp.RecordEvent) bool {
		for _, k := range blueKeys {
			if _, ok := m[string(k)]; ok {
				return false
			}
		}
		return true
	})
}

// TestClientConfigNotReflected: configuration comes from reflectors only.
// A client that publishes a record with the configuration route target
// does not reach the other clients (the reflector's import policy keeps it
// out), while the reflector's own configuration does.
func TestClientConfigNotReflected(t *testing.T) {
	ctx := context.Background()
	cfgRT, red := record.ConfigRT(bgptest.ASN), record.ZoneRT(bgptest.ASN, "red")
	r, a, b := star(t, cfgRT, red)
	own := &record.Config{Reflector: r.RouterID(), Kind: 2, Name: "good", Gen: 1, Writer: r.RouterID(), Payload: []byte{1}}
	if err := r.Publish(ctx, own, cfgRT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "the reflector's configuration", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(own.Key())]; return ok })
	forged := &record.Config{Reflector: r.RouterID(), Kind: 2, Name: "evil", Gen: 1, Writer: r.RouterID(), Payload: []byte{1}}
	if err := a.Publish(ctx, forged, cfgRT); err != nil {
		t.Fatal(err)
	}
	// A marker from a, sent after the forged record on the same session
	// and reflected by the same reflector: once it is at b, the forged
	// record would be too.
	marker := bgptest.Device(a.RouterID(), 1)
	if err := a.Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "a's marker", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(marker.Key())]; return ok })
	if b.View.Has(forged.Key()) {
		t.Fatal("a client's configuration record was reflected")
	}
}

// TestRTConstraintAny: subscribing to AnyRT brings every record, whatever
// its route target; unsubscribing takes back those no other membership
// asks for.
func TestRTConstraintAny(t *testing.T) {
	ctx := context.Background()
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	r, a, b := star(t, red)
	redRec, blueRec := bgptest.Device(a.RouterID(), 1), bgptest.Device(a.RouterID(), 2)
	if err := a.Publish(ctx, blueRec, blue); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, redRec, red); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "red record", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(redRec.Key())]; return ok })
	r.View.WaitFor(t, "blue record at the reflector", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(blueRec.Key())]; return ok })
	if b.View.Has(blueRec.Key()) {
		t.Fatal("b received a blue record without subscribing")
	}
	if err := b.Subscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record with AnyRT", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(blueRec.Key())]; return ok })
	if err := b.Unsubscribe(ctx, record.AnyRT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "blue record gone", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(blueRec.Key())]; return !ok })
	if !b.View.Has(redRec.Key()) {
		t.Fatal("unsubscribing AnyRT took red away")
	}
}
