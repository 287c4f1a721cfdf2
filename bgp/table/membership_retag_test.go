package table

import (
	"context"
	"testing"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestRetagKeepsOldMembershipGoBGP pins, against real GoBGP, the order a
// switch agent keeps when a zone edit both moves a remote device out of a
// zone and makes the receiving switch drop that zone (switchagent's
// MembershipLinger): the receiver withdraws the old zone's membership only
// after the device's new epoch reached it, and then never sees the device
// vanish (which hosts hear as reason 7). Withdrawn at once, the membership
// could reach the reflector before the new epoch and the reflector
// withdrew the old epoch while the receiver held it active
// (TestPrivSoakRetagWhileUnsubscribing shows that in the soak's fabric).
func TestRetagKeepsOldMembershipGoBGP(t *testing.T) {
	ctx := context.Background()
	x, y := record.ZoneRT(bgptest.ASN, "x"), record.ZoneRT(bgptest.ASN, "y")
	_, cs, dvs := realStar(t, nil, []record.RouteTarget{x, y})
	a, b, bv := cs[0], cs[1], dvs[1]
	pub, err := NewDevicePublisher(DevicePublisherOptions{Speaker: a})
	if err != nil {
		t.Fatal(err)
	}
	rec, marker := *bgptest.Device(a.RouterID(), 1), *bgptest.Device(a.RouterID(), 2)
	if err := pub.Publish(ctx, rec, x); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []record.RouteTarget{x, y} {
		if err := pub.Publish(ctx, marker, rt); err != nil {
			t.Fatal(err)
		}
		bv.waitFor(t, "the marker", func(tb *DeviceTable) bool { _, ok := tb.Get(marker.ID()); return ok })
	}
	from, to := x, y
	for round := range 10 {
		// The edit: the device moves from zone from to zone to; b's own
		// devices leave zone from.
		if err := pub.Publish(ctx, rec, to); err != nil {
			t.Fatal(err)
		}
		epoch := pub.published[rec.ID()].rec.Epoch
		bv.waitFor(t, "the new epoch", func(tb *DeviceTable) bool { d, ok := tb.Get(rec.ID()); return ok && d.Epoch == epoch })
		// The marker carries from (publishers stay as they are): it leaves b
		// with the membership and comes back with the next one, after the
		// reflector's withdraws for the membership reached b.
		if err := pub.Publish(ctx, marker, from); err != nil {
			t.Fatal(err)
		}
		seen := len(bv.changes(marker.ID()))
		if err := b.Unsubscribe(ctx, from); err != nil {
			t.Fatal(err)
		}
		bv.waitFor(t, "the marker gone", func(tb *DeviceTable) bool { _, ok := tb.Get(marker.ID()); return !ok })
		if err := b.Subscribe(ctx, from); err != nil {
			t.Fatal(err)
		}
		bv.waitFor(t, "the marker back", func(tb *DeviceTable) bool { _, ok := tb.Get(marker.ID()); return ok })
		if n := len(bv.changes(marker.ID())); n < seen+2 {
			t.Fatalf("round %d: marker changed %d times", round, n-seen)
		}
		for _, ch := range bv.changes(rec.ID()) {
			if ch.Vanished || ch.Record == nil {
				t.Fatalf("round %d: the device vanished at b: %+v", round, ch)
			}
		}
		from, to = to, from
	}
}
