package bgp

import (
	"net/netip"
	"testing"
	"time"
)

// TestBFDConfirmHolds: the confirmation hold starts at the detection time
// (or the configured Hold), doubles with each recent unconfirmed down up
// to its cap; the hold-down of a flapping switch is nothing for its first
// confirmed down, then doubles from DampBase up to DampMax.
func TestBFDConfirmHolds(t *testing.T) {
	c := BFDConfirm{}.withDefaults()
	const detect = 300 * time.Millisecond
	for n, want := range []time.Duration{detect, 2 * detect, 4 * detect, 8 * detect, 8 * detect} {
		if got := c.hold(detect, n); got != want {
			t.Errorf("hold after %d unconfirmed downs = %v, want %v", n, got, want)
		}
	}
	if got := (BFDConfirm{NoDampen: true}).withDefaults().holdDown(5); got != 0 {
		t.Errorf("hold-down without dampening %v, want 0", got)
	}
	if got := (BFDConfirm{Hold: time.Second, MaxHold: 500 * time.Millisecond}).hold(detect, 3); got != time.Second {
		t.Errorf("a cap below Hold: hold %v, want Hold (1s)", got)
	}
	for n, want := range map[int]time.Duration{0: 0, 1: 0, 2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 9: time.Minute, 40: time.Minute} {
		if got := c.holdDown(n); got != want {
			t.Errorf("hold-down after %d confirmed downs = %v, want %v", n, got, want)
		}
	}
}

// TestBFDConfirmForgets: a switch's flaps are forgotten after a quiet
// DampDecay, counted while they come closer together.
func TestBFDConfirmForgets(t *testing.T) {
	s := newConfirmState(BFDConfirm{DampDecay: time.Minute})
	a := netip.MustParseAddr("10.0.0.11")
	t0 := time.Unix(1000, 0)
	s.down(a, false, t0)
	s.down(a, true, t0.Add(30*time.Second))
	if f := s.recent(a, t0.Add(80*time.Second)); f.unconfirmed != 1 || f.confirmed != 1 {
		t.Fatalf("within the decay: %+v, want one of each", f)
	}
	if f := s.recent(a, t0.Add(91*time.Second)); f != (flaps{}) {
		t.Fatalf("after a quiet decay: %+v, want none", f)
	}
	if f := s.down(a, true, t0.Add(100*time.Second)); f.confirmed != 1 || f.unconfirmed != 0 {
		t.Fatalf("a down after the decay starts again: %+v", f)
	}
	s.pending[a] = pendingDown{until: t0.Add(5 * time.Second)}
	s.enable[a] = t0.Add(3 * time.Second)
	if at, ok := s.next(); !ok || !at.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("next = %v %v, want the earlier hold-down end", at, ok)
	}
}

// TestConfirmStateConcurrent: BFD changes (onBFD, on the BFD watch's
// goroutine or a caller's) and the goroutine that runs the holds out share
// the confirmation state under its lock; every down taken is seen as a
// deadline and every poke wakes the waiter.
func TestConfirmStateConcurrent(t *testing.T) {
	s := newConfirmState(BFDConfirm{})
	const n = 200
	t0 := time.Unix(1000, 0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
			s.mu.Lock()
			s.pending[a] = pendingDown{until: t0.Add(time.Duration(n-i) * time.Millisecond)}
			s.down(a, i%2 == 0, t0)
			s.mu.Unlock()
			s.poke()
		}
	}()
	var last time.Time
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-s.wake:
			if at, ok := s.next(); ok {
				last = at
			}
		}
	}
	at, ok := s.next()
	if !ok || !at.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("next = %v %v, want the last down's deadline %v", at, ok, t0.Add(time.Millisecond))
	}
	if !last.IsZero() && last.Before(at) {
		t.Fatalf("a deadline %v before the earliest %v", last, at)
	}
}
