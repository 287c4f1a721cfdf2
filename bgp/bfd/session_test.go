package bfd

import (
	"testing"
	"testing/synctest"
	"time"
)

// The state machine tests run in a synctest bubble on the in-memory
// network: the clock is fake and advances only when every session waits
// for a timer, so timers, detection times and Poll sequences are checked
// exactly, whatever the load on the machine.

// TestSessionUpPollDown: two sessions come Up, finish the Poll sequence to
// 50 ms, and the survivor goes Down when its peer falls silent (detection
// time expired, 100-150 ms after the silence) or is removed (AdminDown: at
// once).
func TestSessionUpPollDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		ca, cb := watch(ma), watch(mb)
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
		time.Sleep(time.Second)
		sa.mu.Lock()
		polling := sa.pollActive
		sa.mu.Unlock()
		if st := sa.Status(); polling || st.TxInterval != 50*time.Millisecond || st.DetectTime != 150*time.Millisecond || st.RemoteDisc != sb.myDisc {
			t.Fatalf("after Poll/Final (polling %v): %+v", polling, st)
		}

		// Silence: b's socket closes without a word; a must time out, one
		// detection time (3 × 50 ms) after b's last packet, which was sent
		// less than one interval (≤ 50 ms) before the silence.
		silenced := time.Now()
		sb.conn.Close()
		down, ia := ca.waitFor(t, keyA, Down, ia)
		if down.Diag != DiagControlExpired || down.PeerAdminDown {
			t.Fatalf("silent peer: diag %s, peer admin down %v", down.Diag, down.PeerAdminDown)
		}
		if took := down.At.Sub(silenced); took <= 100*time.Millisecond || took > 150*time.Millisecond {
			t.Fatalf("silent peer detected after %s, want (100 ms, 150 ms]", took)
		}
		mb.Remove(keyB)

		// Back up, then a clean removal: AdminDown tells a at once.
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		_, ia = ca.waitFor(t, keyA, Up, ia)
		removed := time.Now()
		if err := mb.Remove(keyB); err != nil {
			t.Fatal(err)
		}
		down, _ = ca.waitFor(t, keyA, Down, ia)
		if down.Diag != DiagNeighborDown || !down.At.Equal(removed) || !down.PeerAdminDown {
			t.Fatalf("removed peer: diag %s after %s (peer admin down %v), want neighbor-signaled-down at once, from AdminDown",
				down.Diag, down.At.Sub(removed), down.PeerAdminDown)
		}
	})
}

// TestSessionStaysUp: once Up at the default 3 × 300 ms, each side sends at
// the agreed interval at once (not at the 1 s used while Down, which would
// exceed the 900 ms detection time), so the session stays Up for 10 s with
// a packet at least every 300 ms.
func TestSessionStaysUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		ca := watch(ma)
		sa, err := ma.Add(Config{Key: keyA})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(Config{Key: keyB}); err != nil {
			t.Fatal(err)
		}
		_, next := ca.waitFor(t, keyA, Up, 0)
		base := sa.Status().Received
		time.Sleep(10 * time.Second)
		st := sa.Status()
		if got := st.Received - base; got < 33 {
			t.Fatalf("%d packets in 10 s, want ≥ 33 (one per ≤ 300 ms)", got)
		}
		if st.State != Up || st.DetectTime != 900*time.Millisecond || st.TxInterval != 300*time.Millisecond {
			t.Fatalf("status %+v", st)
		}
		if evs := ca.of(keyA); len(evs) != next {
			t.Fatalf("session left Up: %+v", evs)
		}
	})
}

// TestSetTimersKeepsSessionUp: new timers on an Up session (a reload) are
// announced with a Poll; both sides move to the new interval and detection
// time, and the session never leaves Up. A smaller interval applies at
// once, a larger one after the Final.
func TestSetTimersKeepsSessionUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		ca := watch(ma)
		sa, err := ma.Add(Config{Key: keyA})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := mb.Add(Config{Key: keyB})
		if err != nil {
			t.Fatal(err)
		}
		_, next := ca.waitFor(t, keyA, Up, 0)
		time.Sleep(2 * time.Second)
		if err := ma.SetTimers(keyA, Timers{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 5}); err != nil {
			t.Fatal(err)
		}
		if err := mb.SetTimers(keyB, Timers{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		st := sa.Status()
		if st.State != Up || st.TxInterval != 50*time.Millisecond || st.DesiredMinTx != 50*time.Millisecond ||
			st.RequiredMinRx != 50*time.Millisecond || st.DetectMult != 5 {
			t.Fatalf("a after the change: %+v", st)
		}
		// b detects a's silence after a's multiplier × b's agreed receive interval.
		if st := sb.Status(); st.DetectTime != 5*50*time.Millisecond || st.DetectMult != DefaultDetectMult {
			t.Fatalf("b after the change: %+v", st)
		}
		// Back to a slower interval: applies once the Poll completes.
		if err := ma.SetTimers(keyA, Timers{DesiredMinTx: 500 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		if st := sa.Status(); st.State != Up || st.TxInterval != 500*time.Millisecond {
			t.Fatalf("a after slowing down: %+v", st)
		}
		if evs := ca.of(keyA); len(evs) != next {
			t.Fatalf("session left Up: %+v", evs)
		}
		if err := ma.SetTimers(SessionKey{Local: keyA.Local, Peer: keyA.Local}, Timers{}); err == nil {
			t.Fatal("timers of an unknown session accepted")
		}
	})
}

// TestDetectionWaitsForUnreadPackets: when the detection time expires
// while the peer's packets wait unread in the receive socket (the receive
// path is behind, not the peer silent), the expiry is put off by half a
// detection time; a reader that catches up within it keeps the session Up.
// A reader that stays behind gets the session declared Down at the
// deferred time, one deferral per silence.
func TestDetectionWaitsForUnreadPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		ca := watch(ma)
		if _, err := ma.Add(fast(keyA)); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		_, next := ca.waitFor(t, keyA, Up, 0)
		time.Sleep(time.Second) // Poll done: 3 × 50 ms
		rx := n.listener(addrA)

		// Behind for 200 ms: past the 150 ms detection time of the last
		// packet read, within the 75 ms it is put off by.
		release := rx.hold()
		time.Sleep(200 * time.Millisecond)
		release()
		time.Sleep(time.Second)
		if evs := ca.of(keyA); len(evs) != next {
			t.Fatalf("session left Up while its reader was behind: %+v", evs[next:])
		}
		if d := ma.Deferred(); d != 1 {
			t.Fatalf("deferred %d detections, want 1", d)
		}

		// Behind for good: Down once the deferral ran out, 150 ms + 75 ms
		// after the last packet read (the reader, already waiting, reads
		// the next one, ≤ 50 ms after the hold).
		held := time.Now()
		rx.hold()
		down, _ := ca.waitFor(t, keyA, Down, next)
		if took := down.At.Sub(held); down.Diag != DiagControlExpired || took < 225*time.Millisecond || took > 275*time.Millisecond {
			t.Fatalf("reader stuck: Down (%s) after %s, want [225 ms, 275 ms]", down.Diag, took)
		}
		if d := ma.Deferred(); d != 2 {
			t.Fatalf("deferred %d detections, want 2", d)
		}
	})
}

// TestEngineBatchesSends: 64 sessions of one local address send through
// one socket, the packets that fall due in one engine wake-up in one call,
// and batching loses nothing: every packet a session sent reached its peer
// exactly once (the in-memory network delivers at once, so at rest each
// side's Sent equals the other's Received), and no session left Up.
func TestEngineBatchesSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		ca := watch(ma)
		const sessions = 64
		ka, kb := addPairs(t, ma, mb, ca, sessions, 9)
		upEvents := len(ca.of(ka[0]))
		time.Sleep(time.Second) // Poll sequences done
		synctest.Wait()
		status := func() (a, b []Status) {
			for i := range sessions {
				sa, _ := ma.Session(ka[i])
				sb, _ := mb.Session(kb[i])
				a, b = append(a, sa.Status()), append(b, sb.Status())
			}
			return a, b
		}
		a0, b0 := status()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		a1, b1 := status()
		for i := range sessions {
			sentA, recvB := a1[i].Sent-a0[i].Sent, b1[i].Received-b0[i].Received
			sentB, recvA := b1[i].Sent-b0[i].Sent, a1[i].Received-a0[i].Received
			if a1[i].State != Up || b1[i].State != Up || sentA != recvB || sentB != recvA {
				t.Fatalf("session %d over 10 s: a sent %d, b received %d; b sent %d, a received %d\n%+v\n%+v",
					i, sentA, recvB, sentB, recvA, a1[i], b1[i])
			}
			// 10 s at 75-100 % of 100 ms: 100-134 packets.
			if sentA < 100 || sentA > 134 {
				t.Fatalf("session %d sent %d packets in 10 s at 100 ms", i, sentA)
			}
		}
		if got := len(ca.of(ka[0])); got != upEvents {
			t.Fatalf("session left Up: %+v", ca.of(ka[0]))
		}
		s := n.sender(addrA)
		s.mu.Lock()
		calls, packets, most := s.calls, s.packets, s.most
		s.mu.Unlock()
		t.Logf("%d packets in %d sends, at most %d in one", packets, calls, most)
		if most < 2 || calls*2 > packets {
			t.Fatalf("%d packets in %d sends (at most %d in one): not batched", packets, calls, most)
		}
	})
}
