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
		receive(ma, func(ch StateChange) {
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
			t.Fatalf("the stuck subscriber received %d events", stuck)
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
		// transitions; the slow subscriber heard its first event (the
		// session's addition), the one its delivery goroutine held out to
		// it while it was stuck, and at most two events more.
		if transitions(all) < 6 || len(heard) > 4 {
			t.Fatalf("expected ≥ 6 transitions, coalesced into ≤ 4 events for the slow subscriber: %+v", heard)
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

// TestCancelAndCloseEndGoroutines counts the goroutines the manager
// started (the engine, receive loops, delivery) and checks that Cancel and
// Close end them without waiting for receivers busy with an event (those
// goroutines are the subscribers' own), and close every channel.
func TestCancelAndCloseEndGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma := n.manager(t)
		mb := n.manager(t)
		gate, entered := make(chan struct{}), make(chan struct{})
		openGate := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(openGate) // on failure: let the receiver return
		// busy receives a subscription until its channel is closed, stuck
		// at its first Up until gate opens; done is closed when it ends.
		busy := func(sub *Subscription) (done chan struct{}) {
			done = make(chan struct{})
			var once sync.Once
			go func() {
				defer close(done)
				for ch := range sub.C {
					if ch.New == Up {
						once.Do(func() { close(entered) })
						<-gate
					}
				}
			}()
			return done
		}
		first := busy(ma.Subscribe())
		receive(ma, func(StateChange) {})
		third := ma.Subscribe()
		thirdDone := make(chan struct{})
		go func() {
			defer close(thirdDone)
			for range third.C {
			}
		}()
		if _, err := ma.Add(fast(keyA)); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		<-entered
		synctest.Wait()
		// The engine, one receive loop, three subscriptions.
		if got := ma.running.Load(); got != 5 {
			t.Fatalf("%d goroutines before Close, want 5", got)
		}

		third.Cancel() // returns at once
		<-thirdDone    // its channel was closed
		synctest.Wait()
		if got := ma.running.Load(); got != 4 {
			t.Fatalf("%d goroutines after Cancel, want 4", got)
		}

		ma.Close() // the first receiver is still stuck: Close does not wait for it
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("%d goroutines after Close", got)
		}
		select {
		case <-first:
			t.Fatal("the stuck receiver ended before it was let go")
		default:
		}
		openGate()
		<-first // its channel was closed by Close
		if _, err := ma.Add(fast(keyA)); err == nil {
			t.Fatal("Add after Close")
		}
		if _, ok := <-ma.Subscribe().C; ok {
			t.Fatal("Subscribe after Close: the channel is open")
		}
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("Subscribe after Close started a goroutine")
		}
		ma.Close() // again: nothing to do
	})
}

// TestManagerCallsFromSubscriber: a receiver may call Remove, Add,
// Subscribe and its own Cancel while it handles an event (at most the event
// being handed over follows the Cancel), another one Close; Close called
// by a receiver returns, and every goroutine ends.
func TestManagerCallsFromSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma := n.manager(t)
		mb := n.manager(t)
		var sub *Subscription
		afterCancel := -1
		errs := make(chan error, 2)
		closed := make(chan struct{})
		sub = receive(ma, func(ch StateChange) {
			if afterCancel >= 0 {
				afterCancel++
				return
			}
			if ch.Key != keyA || ch.New != Up {
				return
			}
			// The session is Up and has no more changes until removed:
			// the next Up the new subscriber hears is the new session's.
			receive(ma, func(ch StateChange) {
				if ch.Key == keyA && ch.New == Up {
					ma.Close()
					close(closed)
				}
			})
			errs <- ma.Remove(keyA)
			_, err := ma.Add(fast(keyA))
			errs <- err
			afterCancel = 0
			sub.Cancel()
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
		if afterCancel > 1 {
			t.Fatalf("%d events received after Cancel, want at most 1", afterCancel)
		}
		if got := ma.running.Load(); got != 0 {
			t.Fatalf("%d goroutines left after Close from a receiver", got)
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
	s := newSubscription(m) // no delivery goroutine: stuck
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

// TestEachStopWaits: Each's stop returns only once the call in progress
// has returned, and no call starts after it.
func TestEachStopWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newMemNet()
		ma, mb := n.manager(t), n.manager(t)
		gate, entered := make(chan struct{}), make(chan struct{})
		var once sync.Once
		calls := 0
		stop := ma.Subscribe().Each(func(ch StateChange) {
			calls++
			if ch.New == Up {
				once.Do(func() { close(entered) })
				<-gate
			}
		})
		if _, err := ma.Add(fast(keyA)); err != nil {
			t.Fatal(err)
		}
		if _, err := mb.Add(fast(keyB)); err != nil {
			t.Fatal(err)
		}
		<-entered
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("stop returned while the call was in progress")
		default:
		}
		close(gate)
		<-stopped
		n0 := calls
		ma.Remove(keyA)
		synctest.Wait()
		if calls != n0 {
			t.Fatalf("%d calls after stop", calls-n0)
		}
	})
}
