package bfd

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestSlowSubscriber: a subscriber stuck in its first call delays no
// session: while it is stuck, the session comes Up, is detected Down
// exactly as fast as without it (measured by the state machine's own
// timestamps on the fake clock), and comes Up again. Released, it hears a
// coalesced but consistent history ending at the current state, and every
// transition is accounted for.
func TestSlowSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		gate := make(chan struct{})
		var mu sync.Mutex
		var heard []StateChange
		ma.Subscribe(func(ch StateChange) {
			mu.Lock()
			heard = append(heard, ch)
			first := len(heard) == 1
			mu.Unlock()
			if first {
				<-gate
			}
		})
		ca := watch(ma)
		sa, err := ma.Add(fast(keyA))
		if err != nil {
			t.Fatal(err)
		}
		sb, err := mb.Add(fast(keyB))
		if err != nil {
			t.Fatal(err)
		}
		_, ia := ca.waitFor(t, keyA, Up, 0)
		time.Sleep(time.Second) // the Poll sequence settles 50 ms
		silenced := time.Now()
		sb.conn.Close()
		down, ia := ca.waitFor(t, keyA, Down, ia)
		if took := down.At.Sub(silenced); down.Diag != DiagControlExpired || took <= 100*time.Millisecond || took > 150*time.Millisecond {
			t.Fatalf("with a stuck subscriber: Down (%s) after %s, want (100 ms, 150 ms]", down.Diag, took)
		}
		mb.Remove(keyB)
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		_, ia = ca.waitFor(t, keyA, Up, ia)
		// A second flap: b removed (AdminDown) and added again.
		removed := time.Now()
		mb.Remove(keyB)
		if down, _ := ca.waitFor(t, keyA, Down, ia); !down.At.Equal(removed) {
			t.Fatalf("with a stuck subscriber: Down %s after the removal", down.At.Sub(removed))
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		ca.waitFor(t, keyA, Up, ia)
		time.Sleep(time.Second)
		mu.Lock()
		stuck := len(heard)
		mu.Unlock()
		if stuck != 1 {
			t.Fatalf("the stuck subscriber was called %d times", stuck)
		}
		close(gate)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		st := sa.Status().State
		checkChain(t, heard, AdminDown, st)
		all := ca.of(keyA)
		checkChain(t, all, AdminDown, st)
		if transitions(heard) != transitions(all) {
			t.Fatalf("slow subscriber's events stand for %d transitions, the fast one's for %d:\n%+v\n%+v",
				transitions(heard), transitions(all), heard, all)
		}
		// Added (AdminDown→Down), Up, Down, Up, Down, Up: at least six
		// transitions; the slow subscriber heard its first call (the
		// session's addition) and at most two events more.
		if transitions(all) < 6 || len(heard) > 3 {
			t.Fatalf("expected ≥ 6 transitions, coalesced into ≤ 3 events for the slow subscriber: %+v", heard)
		}
		folded := 0
		for _, e := range append(heard, all...) {
			folded += e.Coalesced
		}
		if ds := ma.DeliveryStats(); ds.Coalesced != uint64(folded) || ds.Delivered != uint64(len(heard)+len(all)) || ds.Dropped != 0 {
			t.Fatalf("delivery stats %+v; events %d+%d, folded %d", ds, len(heard), len(all), folded)
		}
	})
}

// TestCloseWaitsForGoroutines counts the goroutines the manager started
// (sessions, receive loops, delivery) and checks that Close ends them all,
// waiting for a subscriber's call in progress; cancel waits likewise.
func TestCloseWaitsForGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma := n.manager(t)
		mb := n.manager(t)
		gate, entered := make(chan struct{}), make(chan struct{})
		cancelGate, cancelEntered := make(chan struct{}), make(chan struct{})
		openGate := sync.OnceFunc(func() { close(gate) })
		openCancelGate := sync.OnceFunc(func() { close(cancelGate) })
		t.Cleanup(func() { openGate(); openCancelGate() }) // on failure: let the subscribers return
		var once sync.Once
		ma.Subscribe(func(ch StateChange) {
			if ch.New == Up {
				once.Do(func() { close(entered) })
				<-gate
			}
		})
		ma.Subscribe(func(StateChange) {})
		var once2 sync.Once
		cancel := ma.Subscribe(func(ch StateChange) {
			if ch.New == Up {
				once2.Do(func() { close(cancelEntered) })
				<-cancelGate
			}
		})
		if _, err := ma.Add(fast(keyA)); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		<-entered
		<-cancelEntered
		synctest.Wait()
		// One session, one receive loop, three subscriptions.
		if got := ma.running.Load(); got != 5 {
			t.Fatalf("%d goroutines before Close, want 5", got)
		}

		cancelled := make(chan struct{})
		go func() { cancel(); close(cancelled) }()
		synctest.Wait()
		select {
		case <-cancelled:
			t.Fatal("cancel returned while its subscriber was still running")
		default:
		}
		openCancelGate()
		<-cancelled
		// cancel returned after the delivery goroutine ended: nothing to
		// wait for.
		if got := ma.running.Load(); got != 4 {
			t.Fatalf("%d goroutines after cancel, want 4", got)
		}

		closed := make(chan struct{})
		go func() { ma.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a subscriber was still running")
		default:
		}
		if got := ma.running.Load(); got != 1 {
			t.Fatalf("%d goroutines left while Close waits, want 1 (the busy subscriber)", got)
		}
		openGate()
		<-closed
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("%d goroutines after Close", got)
		}
		if _, err := ma.Add(fast(keyA)); err == nil {
			t.Fatal("Add after Close")
		}
		ma.Subscribe(func(StateChange) {})()
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("Subscribe after Close started a goroutine")
		}
		ma.Close() // again: nothing to do
	})
}

// TestManagerCallsFromSubscriber: a subscriber may call Remove, Add,
// Subscribe and its own cancel (no call follows), another one Close;
// Close from inside a subscriber returns, and every goroutine ends once
// the subscriber returns.
func TestManagerCallsFromSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma := n.manager(t)
		mb := n.manager(t)
		var cancel func()
		cancelled := false
		errs := make(chan error, 2)
		closed := make(chan struct{})
		cancel = ma.Subscribe(func(ch StateChange) {
			if cancelled {
				t.Errorf("called after its cancel: %+v", ch)
			}
			if ch.Key != keyA || ch.New != Up {
				return
			}
			// The session is Up and has no more changes until removed:
			// the next Up the new subscriber hears is the new session's.
			ma.Subscribe(func(ch StateChange) {
				if ch.Key == keyA && ch.New == Up {
					ma.Close()
					close(closed)
				}
			})
			errs <- ma.Remove(keyA)
			_, err := ma.Add(fast(keyA))
			errs <- err
			cancelled = true
			cancel()
		})
		if _, err := ma.Add(fast(keyA)); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		<-closed
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("%d goroutines left after Close from a subscriber", got)
		}
		if len(ma.Sessions()) != 0 {
			t.Fatalf("sessions %v", ma.Sessions())
		}
	})
}

// TestPushInvariants drives the per-session queue with random transition
// sequences, delivering at random moments, and checks what the subscriber
// hears: after every change, one or two pending events that chain from the
// state it heard last to the current one (so a flap away from that state
// and back is never hidden: it takes two events); states it hears in the
// order the session went through them; every transition accounted for.
func TestPushInvariants(t *testing.T) {
	// A session is added (AdminDown→Down), changes state as RFC 5880
	// allows, and may be removed (→AdminDown) and added again.
	next := map[State][]State{AdminDown: {Down}, Down: {Init, Up, AdminDown}, Init: {Up, Down, AdminDown}, Up: {Down, AdminDown}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var q, heard []StateChange
		path := []State{AdminDown} // every state the session went through
		cur, lastHeard, folded := AdminDown, AdminDown, 0
		deliver := func() {
			if len(q) > 0 {
				heard = append(heard, q[0])
				lastHeard = q[0].New
				q = q[1:]
			}
		}
		for range 1 + r.IntN(16) {
			if r.IntN(3) == 0 {
				deliver()
			}
			to := next[cur][r.IntN(len(next[cur]))]
			var f int
			q, f = push(q, StateChange{Key: keyA, Old: cur, New: to})
			folded += f
			cur = to
			path = append(path, cur)
			if len(q) < 1 || len(q) > 2 {
				t.Fatalf("%d pending", len(q))
			}
			checkChain(t, q, lastHeard, cur)
		}
		for len(q) > 0 {
			deliver()
		}
		checkChain(t, heard, AdminDown, cur)
		if total := len(path) - 1; transitions(heard) != total || total-len(heard) != folded {
			t.Fatalf("%d transitions, heard %+v, folded %d", total, heard, folded)
		}
		// Heard states are a subsequence of the path.
		j := 0
		for _, e := range heard {
			for j < len(path) && path[j] != e.New {
				j++
			}
			if j == len(path) {
				t.Fatalf("heard %+v, not in the order of %v", heard, path)
			}
		}
	}
}

// TestQueueBound: a subscriber that never catches up holds at most two
// events for each of maxPendingSessions sessions; beyond that, the oldest
// session's events are dropped and counted.
func TestQueueBound(t *testing.T) {
	m := NewManager(ManagerOptions{net: newMemNet()})
	s := newSubscription(m, func(StateChange) {}) // no delivery goroutine: stuck
	key := func(i int) SessionKey {
		return SessionKey{Local: addrA, Peer: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})}
	}
	for i := range maxPendingSessions + 1 {
		k := key(i)
		for _, c := range [][2]State{{AdminDown, Down}, {Down, Up}, {Up, Down}, {Down, Up}} {
			s.enqueue(StateChange{Key: k, Old: c[0], New: c[1]})
		}
	}
	if len(s.order) != maxPendingSessions || len(s.pending) != maxPendingSessions || s.pending[key(0)] != nil {
		t.Fatalf("%d sessions queued (%d in order), oldest still there: %v", len(s.pending), len(s.order), s.pending[key(0)] != nil)
	}
	// Each session's four changes fold into one event, AdminDown→Up.
	q := s.pending[key(1)]
	checkChain(t, q, AdminDown, Up)
	if len(q) != 1 || q[0].Coalesced != 3 {
		t.Fatalf("queue of one session: %+v", q)
	}
	st := m.DeliveryStats()
	if st.Dropped != 1 || st.Coalesced != 3*(maxPendingSessions+1) {
		t.Fatalf("stats %+v: want the oldest session's event dropped, 3 changes coalesced per session", st)
	}
}
