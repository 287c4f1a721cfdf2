package bgp_test

import (
	"context"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
)

// TestReconnectSkipsIdleHold: a reflector resets the sessions of two
// clients at once (a Cease); both lose their only reflector. Client a
// reconnects without waiting GoBGP's 5 s idle hold, so its session is
// established again while b's is still Idle: b has had its prompt
// reconnects (ReconnectBurst within its window) from two earlier
// resets and waits GoBGP's hold, the backoff that keeps a flapping
// session from reconnecting in a loop. Without the prompt reconnect both
// wait the hold and b leaves Idle before a's session is back; without the
// backoff b reconnects as fast as a. The times from the reset to the
// session back, as the test saw them, are logged (docs/bfd.md).
func TestReconnectSkipsIdleHold(t *testing.T) {
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{})
	bgptest.Connect(t, r, a, nil)
	bgptest.Connect(t, r, b, nil)
	bgptest.WaitEstablished(t, a, 1)
	bgptest.WaitEstablished(t, b, 1)
	ctx := context.Background()
	reset := func(c *bgptest.Node) time.Time {
		t.Helper()
		at := time.Now()
		if err := r.Server().ResetPeer(ctx, &api.ResetPeerRequest{Address: c.Addr.String(), Communication: "test"}); err != nil {
			t.Fatal(err)
		}
		return at
	}
	state := func(c *bgptest.Node) bgp.SessionState {
		t.Helper()
		ns, err := c.Neighbors(ctx)
		if err != nil || len(ns) != 1 {
			t.Fatalf("neighbors of %s: %v %v", c.Addr, ns, err)
		}
		return ns[0].State
	}
	for i := range bgp.ReconnectBurst {
		at := reset(b)
		bgptest.WaitState(t, b, r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
		bgptest.WaitState(t, b, r.Addr, func(s bgp.SessionState) bool { return s == bgp.StateEstablished })
		t.Logf("MEASURE prompt reconnect %d of b: back %s after the reset", i+1, time.Since(at).Round(time.Millisecond))
	}

	at := reset(a)
	reset(b)
	bgptest.WaitState(t, a, r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	bgptest.WaitState(t, b, r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	deadline := time.Now().Add(30 * time.Second)
	for state(a) != bgp.StateEstablished {
		if st := state(b); st != bgp.StateIdle {
			t.Fatalf("b's session left Idle (%s) before a's was back: a waited the idle hold, or b did not", st)
		}
		if time.Now().After(deadline) {
			t.Fatal("a's session never came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	back := time.Since(at)
	if st := state(b); st != bgp.StateIdle {
		t.Fatalf("b's session %s when a's was back, want Idle (GoBGP's hold: its prompt reconnects are used up)", st)
	}
	bgptest.WaitState(t, b, r.Addr, func(s bgp.SessionState) bool { return s == bgp.StateEstablished })
	t.Logf("MEASURE reset to established again: prompt reconnect %s, GoBGP's idle hold %s",
		back.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
}
