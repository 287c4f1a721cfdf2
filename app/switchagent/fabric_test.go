package switchagent

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// TestLocalRecordJudgedOnce: the engine judges a local record when it
// decides it; the copy the speaker's table hands back is not judged again.
// An older copy coming back (here forged: inactive, reason 5) must not
// take the newer one's place: the host keeps seeing the target active and
// is told its real departure (reason 1) only.
func TestLocalRecordJudgedOnce(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1", "swp2")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host := newSimHost(t, s1.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s1.far["swp2"], target)
	host.register(120)
	tgt.register(120)
	host.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))

	fab := s1.agent.fab.(*bgpFabric)
	var echo record.Device
	for _, d := range fab.pubs.pub.Published() {
		if d.Record.Device.Addr == target.Addr {
			echo = d.Record
		}
	}
	if echo.Switch == 0 {
		t.Fatal("switch publishes no record of the target")
	}
	echo.Epoch++
	echo.State, echo.Reason, echo.Changed = inof.StateInactive, inof.ReasonIPChange, time.Now()
	fab.recs <- bgp.RecordEvent{Key: echo.Key(), Record: &echo} // no Source: this speaker's own

	// The marker: the target's link goes down; the host hears of the
	// target next, whatever the echo did.
	s1.links <- l2proto.LinkState{Name: "swp2", Running: false}
	host.waitFor("target inactive", func(ns []l2proto.Notification) bool {
		return !last(target.Addr, inof.StateActive, inof.ReasonNone)(ns)
	})
	host.mu.Lock()
	defer host.mu.Unlock()
	for _, n := range host.got {
		if n.Target == target.Addr && n.Reason == inof.ReasonIPChange {
			t.Fatalf("host told %v for the target from the speaker's copy of a local record: %+v", n.Reason, host.got)
		}
	}
	if !last(target.Addr, inof.StateInactive, inof.ReasonLinkDown)(host.got) {
		t.Fatalf("host's last notice of the target is not link down: %+v", host.got)
	}
}

// TestLinkDownReachesRestoredRegistrations: a registration restored from
// the state file (its device has not registered again since the restart)
// is not in the registration table; the port's loss of carrier still
// reaches it, on the table's event stream (PortDown), and a remote host is
// told reason 1.
func TestLinkDownReachesRestoredRegistrations(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	dir1 := t.TempDir()
	s1 := startSwitch(t, f, ra, "10.0.0.11", dir1, "swp2")
	s2 := startSwitch(t, f, ra, "10.0.0.12", t.TempDir(), "swp1")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host := newSimHost(t, s2.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s1.far["swp2"], target)
	host.register(120)
	tgt.register(120)
	host.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	s1.waitSettled(t)

	s1.stop()
	s1b := startSwitch(t, f, ra, "10.0.0.11", dir1, "swp2")
	s1b.waitSettled(t)
	host.waitFor("target active after the restart", last(target.Addr, inof.StateActive, inof.ReasonNone))
	if _, ok := s1b.agent.ports.lookup("swp2", target.Addr); ok {
		t.Fatal("the target registered again: its registration is not the restored one")
	}
	s1b.links <- l2proto.LinkState{Name: "swp2", Running: false}
	host.waitFor("restored target link down", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
}

// TestBGPFabricSessionEvents: the neighbor watch hands the loop, in order,
// each session that comes up and the loss of the last one only.
func TestBGPFabricSessionEvents(t *testing.T) {
	a := &Agent{opts: DefaultOptions(), log: slog.New(slog.DiscardHandler)}
	fab := newBGPFabric(a, nil)
	r1, r2 := netip.MustParseAddr("10.255.0.1"), netip.MustParseAddr("10.255.0.2")
	ctx := context.Background()
	for _, ev := range []bgp.NeighborEvent{
		{Address: r1, State: bgp.StateEstablished},
		{Address: r2, State: bgp.StateEstablished},
		{Address: r1, State: bgp.StateIdle},   // one left: nothing
		{Address: r2, State: bgp.StateActive}, // the last: lost
		{Address: r2, State: bgp.StateIdle},   // none was up: nothing
		{Address: r1, State: bgp.StateEstablished},
	} {
		fab.onNeighbor(ctx, ev)
	}
	want := []fabricEvent{{kind: sessionUp, addr: r1}, {kind: sessionUp, addr: r2}, {kind: allLost}, {kind: sessionUp, addr: r1}}
	for i, w := range want {
		select {
		case got := <-fab.events():
			if got.kind != w.kind || got.addr != w.addr {
				t.Fatalf("event %d = %+v, want %+v", i, got, w)
			}
		default:
			t.Fatalf("event %d missing, want %+v", i, w)
		}
	}
	select {
	case got := <-fab.events():
		t.Fatalf("extra event %+v", got)
	default:
	}
}

// TestDirectFabricPrunesOnTheLoopTimer: direct mode has no ticker of its
// own: it asks the loop's timer for the next prune and prunes when called
// at or after it, every pruneInterval.
func TestDirectFabricPrunesOnTheLoopTimer(t *testing.T) {
	a := &Agent{opts: DefaultOptions(), log: slog.New(slog.DiscardHandler), save: &saver{}}
	d := newDirectFabric(a)
	if _, ok := d.nextTick(); ok {
		t.Fatal("a prune due before the start")
	}
	t0 := time.Unix(1_000_000, 0)
	d.nextPrune = t0.Add(pruneInterval)
	ctx := context.Background()
	d.tick(ctx, t0.Add(pruneInterval-time.Second))
	if at, ok := d.nextTick(); !ok || !at.Equal(t0.Add(pruneInterval)) {
		t.Fatalf("next prune %v %v before it was due, want %v", at, ok, t0.Add(pruneInterval))
	}
	d.tick(ctx, t0.Add(pruneInterval+time.Second))
	if at, ok := d.nextTick(); !ok || !at.Equal(t0.Add(2*pruneInterval+time.Second)) {
		t.Fatalf("next prune %v %v after one, want %v", at, ok, t0.Add(2*pruneInterval+time.Second))
	}
}
