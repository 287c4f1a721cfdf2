package switchagent

import (
	"fmt"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

func TestCarriersNeeds(t *testing.T) {
	y, z, w := record.ZoneRT(testASN, "y"), record.ZoneRT(testASN, "z"), record.ZoneRT(testASN, "w")
	c := newCarriers()
	rec := func(key string, d netip.Addr, rts ...record.RouteTarget) bgp.RecordEvent {
		return bgp.RecordEvent{Key: []byte(key), Record: &record.Device{Report: inof.Report{Device: inof.Device{Addr: d}}},
			Source: netip.MustParseAddr("10.255.0.1"), RouteTargets: rts}
	}
	a, b := netip.MustParseAddr("10.2.0.1"), netip.MustParseAddr("10.2.0.2")
	c.apply(rec("a", a, y))
	c.apply(rec("b", b, y, w))
	used := func(d netip.Addr) bool { return d == a || d == b }
	if d, ok := c.needs(y, []record.RouteTarget{z}, func(d netip.Addr) bool { return d == a }); !ok || d != a {
		t.Fatalf("needs(y) = %v %v, want a", d, ok)
	}
	if _, ok := c.needs(y, []record.RouteTarget{record.AnyRT}, used); ok {
		t.Fatal("AnyRT kept covers every record")
	}
	if d, ok := c.needs(y, []record.RouteTarget{z}, func(d netip.Addr) bool { return d == b }); !ok || d != b {
		t.Fatalf("only b in use, w not kept: needs(y) = %v %v, want b", d, ok)
	}
	if _, ok := c.needs(y, []record.RouteTarget{w}, func(d netip.Addr) bool { return d == b }); ok {
		t.Fatal("b also comes under w, which is kept")
	}
	// Dropping AnyRT (every zone) for z alone: a record under y only
	// came under AnyRT, and goes with it.
	if d, ok := c.needs(record.AnyRT, []record.RouteTarget{z}, func(d netip.Addr) bool { return d == a }); !ok || d != a {
		t.Fatalf("needs(AnyRT) keeping z = %v %v, want a", d, ok)
	}
	if _, ok := c.needs(record.AnyRT, []record.RouteTarget{y}, used); ok {
		t.Fatal("a and b come under y, which is kept: AnyRT not needed")
	}
	c.apply(rec("a", a, z)) // re-tagged
	if _, ok := c.needs(y, []record.RouteTarget{z}, func(d netip.Addr) bool { return d == a }); ok {
		t.Fatal("a re-tagged into z: y no longer needed for it")
	}
	c.apply(bgp.RecordEvent{Key: []byte("b"), Withdrawn: true})
	if len(c.byKey) != 1 {
		t.Fatalf("after the withdraw: %v", c.byKey)
	}
}

// TestMembershipKeptForStaleRecord: a zone edit moves target T from zone y
// into zone z (host h sees it under both) while T's switch is down and
// cannot re-tag T's record, which stays under y's route target alone. h's
// switch no longer wants y; withdrawing y's membership after the linger
// would have the reflector withdraw T's record from it, and h would be
// told T's switch is gone (reason 7). The membership must stay until T's
// switch re-tags, and then go.
func TestMembershipKeptForStaleRecord(t *testing.T) {
	s1Addr, s2Addr := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.12")
	s2ID, _ := inof.RouterIDFrom(s2Addr)
	f, ra, put := configFabric(t, s1Addr, s2Addr)
	publish := remoteSwitch(t, f, ra, s2Addr)
	remote := func(d inof.Device, zs ...string) { t.Helper(); publish(d, inof.StateActive, inof.ReasonNone, zs...) }
	h := inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	tgt := inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	// t2 stays in y: s1 holds its record only while it holds y's membership.
	t2 := inof.Device{Addr: netip.MustParseAddr("10.2.0.2"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	put(zones.KindZone, "y", 0, h.Addr.String(), tgt.Addr.String(), t2.Addr.String())
	put(zones.KindZone, "w", 0, "10.9.9.7", "10.9.9.8") // so that s1 never wants every zone
	remote(tgt, "y")
	remote(t2, "y")

	logs := newLogLines()
	s1, host := runSeeing(t, f, ra, s1Addr, logs, h, tgt)

	// The edit, with T's switch down: T's record keeps y's route target.
	from := logs.mark()
	put(zones.KindZone, "z", 0, h.Addr.String(), tgt.Addr.String())
	put(zones.KindZone, "y", 1, t2.Addr.String())
	host.waitFor("h no longer sees t2", last(t2.Addr, inof.StateInactive, inof.ReasonZoneChange))
	logs.waitFor(t, from, "keeping a zone membership", "zone=y", "device="+tgt.Addr.String())
	t2ID := record.DeviceID{Switch: s2ID, Addr: t2.Addr}
	if _, ok := s1.agent.table.Get(t2ID); !ok {
		t.Fatal("y's membership kept, but t2's record (under y) is gone")
	}

	// T's switch is back and re-tags: y's membership goes.
	remote(tgt, "z")
	waitUntil(t, "y's membership withdrawn (t2's record gone)", func() bool {
		_, ok := s1.agent.table.Get(t2ID)
		return !ok
	})
	host.mu.Lock()
	defer host.mu.Unlock()
	for _, n := range host.got {
		if n.Target == tgt.Addr && n.State != inof.StateActive {
			t.Errorf("h was told T %s (reason %s); it sees T under both zonings", n.State, n.Reason)
		}
	}
}

// TestAnyRTKeptForStaleRecord: the same with the AnyRT membership. s1
// wants every zone (h is in every custom zone, the unzoned target u wants
// the default zone), so it holds AnyRT alone. A zone edit, made while T's
// switch is down, moves h and T from zone x into a new zone y: s1 now
// wants the default zone, w and y, not x, and trades AnyRT for those. T's
// record still carries only x's route target and came under AnyRT alone:
// dropped after the linger, AnyRT would take T's record with it and h
// would be told T's switch is gone (reason 7; soak seed
// 14344280810485850043 step 9).
func TestAnyRTKeptForStaleRecord(t *testing.T) {
	s1Addr, s2Addr := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.12")
	f, ra, put := configFabric(t, s1Addr, s2Addr)
	publish := remoteSwitch(t, f, ra, s2Addr)
	h := inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	u := inof.Device{Addr: netip.MustParseAddr("10.1.0.3"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	tgt := inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	put(zones.KindZone, "x", 0, h.Addr.String(), tgt.Addr.String())
	put(zones.KindZone, "w", 0, h.Addr.String(), "10.9.9.7")
	publish(tgt, inof.StateActive, inof.ReasonNone, "x")

	logs := newLogLines()
	s1, host := runSeeing(t, f, ra, s1Addr, logs, h, tgt, u)

	// The edit, with T's switch down: T's record keeps x's route target.
	from := logs.mark()
	put(zones.KindZone, "y", 0, h.Addr.String(), tgt.Addr.String())
	put(zones.KindZone, "x", 1, "10.9.9.6")
	logs.waitFor(t, from, "keeping a zone membership", "zone=every zone", "device="+tgt.Addr.String())
	s2, _ := inof.RouterIDFrom(s2Addr)
	if _, ok := s1.agent.table.Get(record.DeviceID{Switch: s2, Addr: tgt.Addr}); !ok {
		t.Fatal("AnyRT kept, but T's record is gone")
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	for _, n := range host.got {
		if n.Target == tgt.Addr && n.State != inof.StateActive {
			t.Errorf("h was told T %s (reason %s); it sees T under both zonings", n.State, n.Reason)
		}
	}
}

// runSeeing starts switch addr, a client of ra logging to logs, with host h
// on port swp1 and the devices others on swp2, swp3, …, registered before
// h, and waits until h sees tgt and the switch settled.
func runSeeing(t *testing.T, f *bgp.FakeFabric, ra, addr netip.Addr, logs *logLines, h, tgt inof.Device, others ...inof.Device) (*testSwitch, *simHost) {
	t.Helper()
	ports := []string{"swp1"}
	for i := range others {
		ports = append(ports, fmt.Sprintf("swp%d", i+2))
	}
	near, far := memPorts(addr.String(), ports...)
	s := runSwitchLogged(t, f, ra, addr.String(), t.TempDir(), nil, slog.New(logs), func(o *Options) {
		o.AccessPorts = ports
	}, near)
	for i, d := range others {
		newSimHost(t, far[ports[i+1]], d).register(120)
	}
	host := newSimHost(t, far["swp1"], h)
	host.register(120)
	host.waitFor("h sees T", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
	s.waitSettled(t)
	return s, host
}
