package bfd

import (
	"errors"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestPacketRoundTrip(t *testing.T) {
	p := Packet{Version: 1, Diag: DiagNeighborDown, State: Up, Poll: true, DetectMult: 3, MyDisc: 7, YourDisc: 9,
		DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond}
	var got Packet
	if err := got.Unmarshal(p.Marshal()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("got %+v, want %+v", got, p)
	}
}

func TestPacketErrors(t *testing.T) {
	good := (&Packet{State: Down, DetectMult: 3, MyDisc: 1}).Marshal()
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:20], ErrShort},
		{"version 0", mut(func(b []byte) { b[0] &= 0x1F }), ErrVersion},
		{"length beyond packet", mut(func(b []byte) { b[3] = 30 }), ErrLength},
		{"length short", mut(func(b []byte) { b[3] = 20 }), ErrLength},
		{"detect mult 0", mut(func(b []byte) { b[2] = 0 }), ErrDetectMult},
		{"multipoint", mut(func(b []byte) { b[1] |= 1 }), ErrMultipoint},
		{"my disc 0", mut(func(b []byte) { b[4], b[5], b[6], b[7] = 0, 0, 0, 0 }), ErrMyDisc},
		{"auth", append(mut(func(b []byte) { b[1] |= 4; b[3] = 26 }), 0, 0), ErrAuth},
	}
	for _, c := range cases {
		var p Packet
		err := p.Unmarshal(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if DropReason(err) == "other" {
			t.Errorf("%s: no drop reason for %v", c.name, err)
		}
	}
}

func FuzzPacket(f *testing.F) {
	f.Add((&Packet{State: Up, DetectMult: 3, MyDisc: 1, YourDisc: 2, DesiredMinTx: time.Second}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if err := p.Unmarshal(b); err != nil {
			return
		}
		var again Packet
		if err := again.Unmarshal(p.Marshal()); err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, p)
		}
	})
}

// changes records state changes per session key.
type changes struct {
	mu  sync.Mutex
	all []StateChange
	c   *sync.Cond
}

// receive subscribes to m and hands every change to fn on a goroutine of
// its own, which ends when the subscription's channel is closed.
func receive(m *Manager, fn func(StateChange)) *Subscription {
	sub := m.Subscribe()
	go func() {
		for ch := range sub.C {
			fn(ch)
		}
	}()
	return sub
}

func watch(m *Manager) *changes {
	ch := &changes{}
	ch.c = sync.NewCond(&ch.mu)
	receive(m, func(s StateChange) {
		ch.mu.Lock()
		ch.all = append(ch.all, s)
		ch.c.Broadcast()
		ch.mu.Unlock()
	})
	return ch
}

// waitFor waits for a change to state st of key after index from; it
// returns the change and the index after it.
func (ch *changes) waitFor(t testing.TB, k SessionKey, st State, from int) (StateChange, int) {
	t.Helper()
	timer := time.AfterFunc(30*time.Second, func() { ch.mu.Lock(); ch.c.Broadcast(); ch.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(30 * time.Second)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for {
		for i := from; i < len(ch.all); i++ {
			if ch.all[i].Key == k && ch.all[i].New == st {
				return ch.all[i], i + 1
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never reached %s: %+v", k, st, ch.all)
		}
		ch.c.Wait()
	}
}

// Loopback addresses of this package's tests: other packages' tests (bgp)
// run BFD on 127.0.0.x at the same time.
var (
	addrA = netip.MustParseAddr("127.0.3.1")
	addrB = netip.MustParseAddr("127.0.3.2")
	keyA  = SessionKey{Local: addrA, Peer: addrB}
	keyB  = SessionKey{Local: addrB, Peer: addrA}
)

func fast(k SessionKey) Config {
	return Config{Key: k, DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
}

func pair(t testing.TB) (ma, mb *Manager, ca, cb *changes) {
	ma, mb = NewManager(ManagerOptions{}), NewManager(ManagerOptions{})
	t.Cleanup(ma.Close)
	t.Cleanup(mb.Close)
	return ma, mb, watch(ma), watch(mb)
}

// of returns the changes recorded so far for a key.
func (ch *changes) of(k SessionKey) []StateChange {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var out []StateChange
	for _, c := range ch.all {
		if c.Key == k {
			out = append(out, c)
		}
	}
	return out
}

// transitions is how many state transitions the recorded events stand for.
func transitions(evs []StateChange) int {
	n := 0
	for _, e := range evs {
		n += 1 + e.Coalesced
	}
	return n
}

// checkChain checks what a subscriber heard of one session: every event
// changes the state, each starts where the previous one ended, the first
// starts at from and the last ends at to.
func checkChain(t testing.TB, evs []StateChange, from, to State) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatalf("no events")
	}
	prev := from
	for i, e := range evs {
		if e.Old == e.New || e.Old != prev {
			t.Fatalf("event %d of %+v breaks the chain", i, evs)
		}
		prev = e.New
	}
	if prev != to {
		t.Fatalf("last state heard %s, session is %s: %+v", prev, to, evs)
	}
}
