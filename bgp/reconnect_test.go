package bgp

import (
	"net/netip"
	"testing"
	"time"
)

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
