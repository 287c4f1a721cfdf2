package bfd

import (
	"errors"
	"net"
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

func watch(m *Manager) *changes {
	ch := &changes{}
	ch.c = sync.NewCond(&ch.mu)
	m.Subscribe(func(s StateChange) {
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

// TestSessionUpPollDown: two sessions come Up, finish the Poll sequence to
// 50 ms, and the survivor goes Down when its peer is removed (AdminDown) or
// falls silent (detection time expired).
func TestSessionUpPollDown(t *testing.T) {
	ma, mb, ca, cb := pair(t)
	sa, err := ma.Add(fast(keyA))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := mb.Add(fast(keyB))
	if err != nil {
		t.Fatal(err)
	}
	_, ia := ca.waitFor(t, keyA, Up, 0)
	cb.waitFor(t, keyB, Up, 0)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st := sa.Status()
		sa.mu.Lock()
		polling := sa.pollActive
		sa.mu.Unlock()
		if !polling && st.TxInterval == 50*time.Millisecond && st.DetectTime == 150*time.Millisecond {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := sa.Status(); st.TxInterval != 50*time.Millisecond || st.DetectTime != 150*time.Millisecond || st.RemoteDisc != sb.myDisc {
		t.Fatalf("after Poll/Final: %+v", st)
	}

	// Silence: b's socket closes without a word; a must time out.
	sb.conn.Close()
	down, ia := ca.waitFor(t, keyA, Down, ia)
	if down.Diag != DiagControlExpired {
		t.Fatalf("silent peer: diag %s", down.Diag)
	}
	mb.Remove(keyB)

	// Back up, then a clean removal: AdminDown tells a at once.
	if _, err := mb.Add(fast(keyB)); err != nil {
		t.Fatal(err)
	}
	_, ia = ca.waitFor(t, keyA, Up, ia)
	if err := mb.Remove(keyB); err != nil {
		t.Fatal(err)
	}
	down, _ = ca.waitFor(t, keyA, Down, ia)
	if down.Diag != DiagNeighborDown {
		t.Fatalf("removed peer: diag %s", down.Diag)
	}
}

// TestReceiveDrops: packets with TTL below 255, bad fields, a zero
// your-discriminator while Up, or an unknown discriminator are dropped and
// counted; none of them disturbs the session.
func TestReceiveDrops(t *testing.T) {
	ma := NewManager(ManagerOptions{})
	defer ma.Close()
	if _, err := ma.Add(Config{Key: keyA}); err != nil {
		t.Fatal(err)
	}
	send := func(ttl int, p Packet) {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrB, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raw, _ := c.SyscallConn()
		raw.Control(func(fd uintptr) { setTTL(fd, ttl) })
		if _, err := c.WriteToUDP(p.Marshal(), net.UDPAddrFromAddrPort(netip.AddrPortFrom(addrA, Port))); err != nil {
			t.Fatal(err)
		}
	}
	ok := Packet{State: Down, DetectMult: 3, MyDisc: 99, DesiredMinTx: time.Second, RequiredMinRx: time.Second}
	send(64, ok)
	upNoDisc := ok
	upNoDisc.State = Up
	send(255, upNoDisc)
	unknown := ok
	unknown.YourDisc = 12345
	send(255, unknown)
	badVer := ok
	badVer.MyDisc = 0
	send(255, badVer)
	want := map[string]uint64{"ttl": 1, "your-discriminator-zero": 1, "unknown-discriminator": 1, "my-discriminator": 1}
	deadline := time.Now().Add(10 * time.Second)
	for !reflect.DeepEqual(ma.Drops(), want) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := ma.Drops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("drops %v, want %v", got, want)
	}
	if st := ma.Sessions()[0]; st.State != Down || st.Received != 0 {
		t.Fatalf("session disturbed: %+v", st)
	}
}

// TestSessionStaysUp: once Up at the default 3 × 300 ms, each side sends at
// the agreed interval at once (not at the 1 s used while Down), so ten
// packets pass without the session dropping.
func TestSessionStaysUp(t *testing.T) {
	ma, mb, ca, _ := pair(t)
	sa, err := ma.Add(Config{Key: keyA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Add(Config{Key: keyB}); err != nil {
		t.Fatal(err)
	}
	_, next := ca.waitFor(t, keyA, Up, 0)
	base := sa.Status().Received
	for sa.Status().Received < base+10 {
		time.Sleep(20 * time.Millisecond)
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	for _, c := range ca.all[next:] {
		if c.Key == keyA {
			t.Fatalf("session left Up: %+v", c)
		}
	}
}
