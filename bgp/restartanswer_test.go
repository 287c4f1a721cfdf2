package bgp_test

import (
	"context"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// waitForever is a route-target membership deferral no test outlasts
// (bgptest's waits give up after 30 s): a record that arrives came without
// the deferral timer.
const waitForever = 10 * time.Minute

// TestRestartedSwitchAnsweredAtOnce: a switch that restarted comes to a
// reflector that holds no stale routes of it (as after the reflector
// declared it gone: removed, and added back as new). The switch sends
// nothing before the reflector's End-of-RIB (GoBGP's restart sync), and
// the reflector defers its records until the switch's memberships: before
// answerRestarted, records flowed only when the reflector's deferral timer
// ran out (5 s; here never). Both ways must flow without it.
func TestRestartedSwitchAnsweredAtOnce(t *testing.T) {
	ctx := context.Background()
	gr := bgp.GracefulRestart{Enabled: true, RestartTime: 60 * time.Second}.WithMembershipDeferral(waitForever)
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{GracefulRestart: gr})
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{GracefulRestart: gr})
	bgptest.Connect(t, r, b, nil)
	zone := record.ZoneRT(bgptest.ASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, bgptest.Device(b.RouterID(), 1), zone); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitEstablished(t, b, 1)

	restarted := gr
	restarted.Restarting = true
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{GracefulRestart: restarted})
	if err := a.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, bgptest.Device(a.RouterID(), 2), zone); err != nil {
		t.Fatal(err)
	}
	bgptest.Connect(t, r, a, nil)
	a.View.WaitFor(t, "b's record at the restarted a", bgptest.HasKey(bgptest.Device(b.RouterID(), 1).Key()))
	b.View.WaitFor(t, "the restarted a's record at b", bgptest.HasKey(bgptest.Device(a.RouterID(), 2).Key()))
	if a.RestartPending(ctx) {
		t.Fatal("a's restart sync is not over though it holds the reflector's records")
	}
}

// TestRestartedReflectorAnsweredAtOnce: the same wait the other way round.
// A reflector that restarted comes to switches that hold no stale routes of
// it (as after they dropped it as lost, or started while it was down): it
// sends nothing before every switch's End-of-RIB, and each switch defers
// its records until the reflector's memberships.
func TestRestartedReflectorAnsweredAtOnce(t *testing.T) {
	ctx := context.Background()
	gr := bgp.GracefulRestart{Enabled: true, RestartTime: 60 * time.Second}.WithMembershipDeferral(waitForever)
	restarted := gr
	restarted.Restarting = true
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{GracefulRestart: restarted})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{GracefulRestart: gr})
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{GracefulRestart: gr})
	zone := publishTo(t, a, b, 1)
	if err := a.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, bgptest.Device(b.RouterID(), 7), zone); err != nil {
		t.Fatal(err)
	}
	bgptest.Connect(t, r, a, nil)
	bgptest.Connect(t, r, b, nil)
	b.View.WaitFor(t, "a's record at b", bgptest.HasKey(bgptest.Device(a.RouterID(), 0).Key()))
	a.View.WaitFor(t, "b's record at a", bgptest.HasKey(bgptest.Device(b.RouterID(), 7).Key()))
}
