package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// realStar starts a reflector 127.0.0.1 and clients 127.0.0.2, .3, …, the
// i-th subscribed to subs[i], each with a device view, and waits for the
// sessions.
func realStar(t *testing.T, subs ...[]record.RouteTarget) (*bgptest.Node, []*bgptest.Node, []*deviceView) {
	t.Helper()
	ctx := context.Background()
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	var cs []*bgptest.Node
	var dvs []*deviceView
	for i, rts := range subs {
		c := bgptest.StartClient(t, bgptest.Addr(fmt.Sprintf("127.0.0.%d", i+2)), bgp.Options{})
		dv := newDeviceView()
		if err := c.WatchRecords(ctx, dv.apply); err != nil {
			t.Fatal(err)
		}
		bgptest.Connect(t, r, c, nil)
		for _, rt := range rts {
			if err := c.Subscribe(ctx, rt); err != nil {
				t.Fatal(err)
			}
		}
		cs, dvs = append(cs, c), append(dvs, dv)
	}
	for _, c := range cs {
		bgptest.WaitEstablished(t, c, 1)
	}
	return r, cs, dvs
}

// TestRetagGoBGP runs the re-tag scenario (issue #9 item 1) against real
// GoBGP: a device moved from zone red to zone blue leaves red-only switches
// (inactive with reason zone change, then gone), stays at switches in both
// zones and reaches blue-only ones.
func TestRetagGoBGP(t *testing.T) {
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	_, cs, dvs := realStar(t, nil, []record.RouteTarget{red}, []record.RouteTarget{blue}, []record.RouteTarget{red, blue})
	testRetag(t, cs[0], cs[0].RouterID(), retagViews{red: dvs[1], blue: dvs[2], both: dvs[3]})
}

// TestRetagSetsGoBGP runs the re-tag scenario through device sets
// against real GoBGP.
func TestRetagSetsGoBGP(t *testing.T) {
	red, blue := record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue")
	_, cs, dvs := realStar(t, nil, []record.RouteTarget{red}, []record.RouteTarget{blue}, []record.RouteTarget{red, blue})
	testRetagSets(t, cs[0], cs[0].RouterID(), retagViews{red: dvs[1], blue: dvs[2], both: dvs[3]})
}

// TestRetagGapGoBGP pins the GoBGP behaviour the fake models and
// DevicePublisher works around: re-publishing a key with a route target a
// receiver does not want leaves the old value at that receiver.
func TestRetagGapGoBGP(t *testing.T) {
	red := record.ZoneRT(bgptest.ASN, "red")
	_, cs, _ := realStar(t, nil, []record.RouteTarget{red})
	testRetagGap(t, cs[0], cs[0].RouterID(), cs[1].View)
}

// TestSwitchRecordStaysAtReflectorGoBGP: a switch record reaches the
// reflector's Adj-RIB-In and no other client, not even one subscribed to
// every record (the reflector's export policy), while a device record
// published after it does reach that client.
func TestSwitchRecordStaysAtReflectorGoBGP(t *testing.T) {
	ctx := context.Background()
	r, cs, _ := realStar(t, nil, []record.RouteTarget{record.AnyRT})
	rx := bgptest.NewRecordView()
	if err := r.WatchReceived(ctx, rx.Apply, record.TypeSwitch); err != nil {
		t.Fatal(err)
	}
	sw := &record.Switch{Switch: cs[0].RouterID(), Reads: record.SwitchReadsDeviceSets}
	if err := cs[0].Publish(ctx, sw, record.SwitchInfoRT); err != nil {
		t.Fatal(err)
	}
	rx.WaitFor(t, "the switch record at the reflector", bgptest.HasKey(sw.Key()))
	if got, _ := rx.Get(sw.Key()); got.Record.(*record.Switch).Reads != record.SwitchReadsDeviceSets {
		t.Fatalf("reflector got %+v", got.Record)
	}
	marker := bgptest.Device(cs[0].RouterID(), 1)
	if err := cs[0].Publish(ctx, marker, record.ZoneRT(bgptest.ASN, "red")); err != nil {
		t.Fatal(err)
	}
	cs[1].View.WaitFor(t, "the device record at the other client", bgptest.HasKey(marker.Key()))
	if cs[1].View.Has(sw.Key()) {
		t.Fatal("the switch record reached another client")
	}
}
