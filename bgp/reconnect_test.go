package bgp

import (
	"context"
	"net/netip"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
)

// TestReconnectSkipsIdleHold: a reflector resets the sessions of two
// clients at once (a Cease); both lose their only reflector. Client a
// reconnects without waiting GoBGP's 5 s idle hold, so its session is
// established again while b's is still Idle: b has had its prompt
// reconnects (reconnectBurst within reconnectWindow) from two earlier
// resets and waits GoBGP's hold, the backoff that keeps a flapping
// session from reconnecting in a loop. Without the prompt reconnect both
// wait the hold and b leaves Idle before a's session is back; without the
// backoff b reconnects as fast as a. The times from the reset to the
// session back, as the test saw them, are logged (docs/bfd.md).
func TestReconnectSkipsIdleHold(t *testing.T) {
	r := startReflector(t, addr("127.0.0.1"), Options{})
	a := startClient(t, addr("127.0.0.2"), Options{})
	b := startClient(t, addr("127.0.0.3"), Options{})
	connect(t, r, a, nil)
	connect(t, r, b, nil)
	waitEstablished(t, a, 1)
	waitEstablished(t, b, 1)
	ctx := context.Background()
	reset := func(c *node) time.Time {
		t.Helper()
		at := time.Now()
		if err := r.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: c.addr.String(), Communication: "test"}); err != nil {
			t.Fatal(err)
		}
		return at
	}
	state := func(c *node) SessionState {
		t.Helper()
		ns, err := c.Neighbors(ctx)
		if err != nil || len(ns) != 1 {
			t.Fatalf("neighbors of %s: %v %v", c.addr, ns, err)
		}
		return ns[0].State
	}
	for i := range reconnectBurst {
		at := reset(b)
		waitState(t, b, r.addr, func(s SessionState) bool { return s != StateEstablished })
		waitState(t, b, r.addr, func(s SessionState) bool { return s == StateEstablished })
		t.Logf("MEASURE prompt reconnect %d of b: back %s after the reset", i+1, time.Since(at).Round(time.Millisecond))
	}

	at := reset(a)
	reset(b)
	waitState(t, a, r.addr, func(s SessionState) bool { return s != StateEstablished })
	waitState(t, b, r.addr, func(s SessionState) bool { return s != StateEstablished })
	deadline := time.Now().Add(30 * time.Second)
	for state(a) != StateEstablished {
		if st := state(b); st != StateIdle {
			t.Fatalf("b's session left Idle (%s) before a's was back: a waited the idle hold, or b did not", st)
		}
		if time.Now().After(deadline) {
			t.Fatal("a's session never came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	back := time.Since(at)
	if st := state(b); st != StateIdle {
		t.Fatalf("b's session %s when a's was back, want Idle (GoBGP's hold: its prompt reconnects are used up)", st)
	}
	waitState(t, b, r.addr, func(s SessionState) bool { return s == StateEstablished })
	t.Logf("MEASURE reset to established again: prompt reconnect %s, GoBGP's idle hold %s",
		back.Round(time.Millisecond), time.Since(at).Round(time.Millisecond))
}

// TestReconnectBurst: a neighbor gets reconnectBurst prompt reconnects
// within reconnectWindow, then none until the oldest has left the window.
func TestReconnectBurst(t *testing.T) {
	var r reconnects
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	t0 := time.Unix(1000, 0)
	for i := range reconnectBurst {
		if !r.allow(a, t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("reconnect %d refused", i+1)
		}
	}
	if r.allow(a, t0.Add(10*time.Second)) {
		t.Fatal("a reconnect beyond the burst allowed")
	}
	if !r.allow(b, t0.Add(10*time.Second)) {
		t.Fatal("another neighbor's reconnect refused")
	}
	if !r.allow(a, t0.Add(reconnectWindow)) {
		t.Fatal("a reconnect refused after the first left the window")
	}
	if r.allow(a, t0.Add(reconnectWindow+500*time.Millisecond)) {
		t.Fatal("a third reconnect within the window allowed")
	}
}
