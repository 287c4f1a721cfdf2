package bfd

import (
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// These tests use real UDP sockets on loopback. They wait for events, never
// for a fixed time, and use timers slow enough (detection ≥ 3 s) that a
// loaded machine does not drop a session by accident.

func slow(k SessionKey) Config {
	return Config{Key: k, DesiredMinTx: 300 * time.Millisecond, RequiredMinRx: 300 * time.Millisecond, DetectMult: 10}
}

// TestSocketsUpDown: over UDP, sessions send from a port in 49152-65535
// with TTL 255 (or the peer would drop them), come Up, and a removed peer
// takes the survivor Down with neighbor-signaled-down.
func TestSocketsUpDown(t *testing.T) {
	ma, mb, ca, cb := pair(t)
	sa, err := ma.Add(slow(keyA))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Add(slow(keyB)); err != nil {
		t.Fatal(err)
	}
	if port := sa.conn.conn.(*udpSender).c.LocalAddr().(*net.UDPAddr).Port; port < srcPortMin || port > srcPortMax {
		t.Fatalf("source port %d", port)
	}
	_, ia := ca.waitFor(t, keyA, Up, 0)
	cb.waitFor(t, keyB, Up, 0)
	if err := mb.Remove(keyB); err != nil {
		t.Fatal(err)
	}
	down, _ := ca.waitFor(t, keyA, Down, ia)
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

// TestRemoveFromSubscriber: a subscriber removes the session it hears
// about, and adds it again, from inside its callback. Until subscribers
// got their own goroutines this deadlocked (the callback ran on the
// session's goroutine, which Remove waits for); the test waits a bounded
// time and fails instead of hanging. It uses real sockets and only the
// exported API.
func TestRemoveFromSubscriber(t *testing.T) {
	ma, mb, _, _ := pair(t)
	type result struct {
		removeErr, addErr error
	}
	done := make(chan result, 1)
	first := true
	receive(ma, func(ch StateChange) {
		if ch.Key != keyA || ch.New != Up || !first {
			return
		}
		first = false
		var r result
		r.removeErr = ma.Remove(keyA)
		_, r.addErr = ma.Add(slow(keyA))
		done <- r
	})
	if _, err := ma.Add(slow(keyA)); err != nil {
		t.Fatal(err)
	}
	if _, err := mb.Add(slow(keyB)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.removeErr != nil || r.addErr != nil {
			t.Fatalf("from a subscriber: Remove: %v, Add: %v", r.removeErr, r.addErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Remove called from a subscriber did not return within 30 s (deadlock)")
	}
	// The session added again from the callback comes Up (b saw the first
	// one go AdminDown, then answers the new one).
	s, ok := ma.Session(keyA)
	if !ok {
		t.Fatal("the session added from the subscriber is missing")
	}
	for deadline := time.Now().Add(30 * time.Second); s.Status().State != Up; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the session added from the subscriber never came Up: %+v", s.Status())
		}
	}
}

// TestSocketsShareSendSocket: over UDP, the sessions of one local address
// send from one socket (one source port in 49152-65535), sessions of
// other addresses from their own; removing some sessions leaves the
// socket to the others, which stay Up and keep receiving, and the last
// one's removal closes it.
func TestSocketsShareSendSocket(t *testing.T) {
	ma, mb, ca, cb := pair(t)
	const n = 8
	var ka, kb []SessionKey
	for i := range n {
		peer := netip.AddrFrom4([4]byte{127, 0, 3, byte(10 + i)})
		ka = append(ka, SessionKey{Local: addrA, Peer: peer})
		kb = append(kb, SessionKey{Local: peer, Peer: addrA})
		if _, err := ma.Add(slow(ka[i])); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(slow(kb[i])); err != nil {
			t.Fatal(err)
		}
	}
	heard, nextB := make([]int, n), make([]int, n)
	for i := range n {
		ca.waitFor(t, ka[i], Up, 0)
		heard[i] = len(ca.of(ka[i]))
		_, nextB[i] = cb.waitFor(t, kb[i], Up, 0)
	}
	localPort := func(s *Session) int { return s.conn.conn.(*udpSender).c.LocalAddr().(*net.UDPAddr).Port }
	sa0, _ := ma.Session(ka[0])
	port := localPort(sa0)
	if port < srcPortMin || port > srcPortMax {
		t.Fatalf("source port %d", port)
	}
	ports := map[int]bool{}
	for i := range n {
		sa, _ := ma.Session(ka[i])
		if sa.conn.conn != sa0.conn.conn || localPort(sa) != port {
			t.Fatalf("session %s sends from port %d, %s from %d", ka[i], localPort(sa), ka[0], port)
		}
		sb, _ := mb.Session(kb[i])
		ports[localPort(sb)] = true
	}
	if len(ports) != n {
		t.Fatalf("%d sessions of %d local addresses send from %d ports", n, n, len(ports))
	}
	if d := ma.Drops(); len(d) != 0 {
		t.Fatalf("drops %v", d)
	}

	for i := range n / 2 {
		if err := ma.Remove(ka[i]); err != nil {
			t.Fatal(err)
		}
		if down, _ := cb.waitFor(t, kb[i], Down, nextB[i]); down.Diag != DiagNeighborDown {
			t.Fatalf("removed peer: diag %s", down.Diag)
		}
	}
	// The others still send from the socket: their peers keep receiving.
	for i := n / 2; i < n; i++ {
		sb, _ := mb.Session(kb[i])
		from := sb.Status().Received
		for deadline := time.Now().Add(30 * time.Second); sb.Status().Received < from+3; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s received nothing after the other sessions were removed: %+v", kb[i], sb.Status())
			}
		}
		if evs := ca.of(ka[i]); len(evs) != heard[i] {
			t.Fatalf("%s left Up: %+v", ka[i], evs)
		}
	}
	for i := n / 2; i < n; i++ {
		if err := ma.Remove(ka[i]); err != nil {
			t.Fatal(err)
		}
	}
	ma.mu.Lock()
	left := len(ma.senders)
	ma.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d send sockets open with no session", left)
	}
}
