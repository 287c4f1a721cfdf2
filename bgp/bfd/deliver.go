package bfd

import "sync"

// maxPendingSessions bounds a subscription's queue: at most this many
// sessions with undelivered changes (each holds at most two events). A
// subscriber further behind loses the oldest session's events (counted in
// DeliveryStats.Dropped). It only matters with more sessions than this or
// with many sessions removed while the subscriber is stuck.
const maxPendingSessions = 4096

// DeliveryStats counts, over all subscriptions of a Manager, what became of
// state changes on their way to subscribers.
type DeliveryStats struct {
	// Delivered is the number of events handed to receivers.
	Delivered uint64
	// Coalesced is the number of state changes folded into a later event of
	// the same session because the subscriber was behind (see
	// StateChange.Coalesced).
	Coalesced uint64
	// Dropped is the number of events discarded undelivered: the queue was
	// full (maxPendingSessions), or they were pending when the
	// subscription was cancelled or the manager closed.
	Dropped uint64
}

// Subscription is one subscriber's stream of state changes (see
// Manager.Subscribe).
type Subscription struct {
	// C carries the changes in order; it is closed once the subscription
	// has ended (Cancel, or the manager's Close) and its delivery
	// goroutine is gone.
	C <-chan StateChange
	s *subscription
}

// Cancel ends the subscription: pending events are dropped and C is closed
// soon after (at most the event being handed over may still be received
// before it). It never blocks, may be called from anywhere, also while
// handling an event of this subscription, and more than once.
func (s *Subscription) Cancel() { s.s.stop() }

// Each calls fn with every change the subscription receives, one at a
// time, on a goroutine of its own, until its channel is closed. The
// returned stop cancels the subscription and waits for fn's last call to
// return; fn must not call it (fn may call Cancel).
func (s *Subscription) Each(fn func(StateChange)) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range s.C {
			fn(ch)
		}
	}()
	return func() {
		s.Cancel()
		<-done
	}
}

// subscription delivers state changes to one subscriber from a goroutine of
// its own, fed by a per-session coalescing queue (see push).
type subscription struct {
	m    *Manager
	c    chan StateChange
	once sync.Once
	wake chan struct{} // capacity 1: there is something in the queue
	quit chan struct{} // closed by stop

	mu      sync.Mutex
	ended   bool
	pending map[SessionKey][]StateChange // per session, 1 or 2 events, in order
	order   []SessionKey                 // sessions with pending events, oldest first
}

func newSubscription(m *Manager) *subscription {
	return &subscription{m: m, c: make(chan StateChange), wake: make(chan struct{}, 1), quit: make(chan struct{}),
		pending: map[SessionKey][]StateChange{}}
}

// run is the delivery goroutine: it hands the receiver one event at a
// time, holding no lock while it waits, and closes the channel when the
// subscription ends.
func (s *subscription) run() {
	defer close(s.c)
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		for {
			ch, ok := s.next()
			if !ok {
				break
			}
			select {
			case <-s.quit: // ended while the event was taken: not handed over
				return
			default:
			}
			select {
			case s.c <- ch:
				s.m.delivered.Add(1)
			case <-s.quit:
				return
			}
		}
	}
}

// next pops the oldest pending event; false when there is none or the
// subscription has ended.
func (s *subscription) next() (StateChange, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || len(s.order) == 0 {
		return StateChange{}, false
	}
	k := s.order[0]
	q := s.pending[k]
	ch := q[0]
	if len(q) > 1 {
		s.pending[k] = q[1:]
	} else {
		delete(s.pending, k)
		s.order[0] = SessionKey{}
		s.order = s.order[1:]
	}
	return ch, true
}

// enqueue adds a change without blocking. It runs on a session goroutine.
func (s *subscription) enqueue(ch StateChange) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	q, ok := s.pending[ch.Key]
	if !ok && len(s.order) >= maxPendingSessions {
		old := s.order[0]
		s.order = s.order[1:]
		n := len(s.pending[old])
		delete(s.pending, old)
		s.m.dropped.Add(uint64(n))
		s.m.logQueueFullLocked(old, n)
	}
	if !ok {
		s.order = append(s.order, ch.Key)
	}
	q, folded := push(q, ch)
	s.pending[ch.Key] = q
	s.mu.Unlock()
	s.m.coalesced.Add(uint64(folded))
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// push appends a session's change to its pending events and returns them
// with the number of changes folded away. A session's changes form a chain
// (each starts where the previous one ended; a life starts AdminDown→Down
// and ends →AdminDown), and what the subscriber hears keeps that form:
//
//   - every event changes the state (Old != New) and the first pending
//     event starts from the state the subscriber heard last;
//   - at most two events are pending: a change is merged into the last
//     pending one (Old of that one; New, Diag and At of the change);
//   - when a merge would return to where the last event started (a flap:
//     Up→Down then Down→Up), the change is kept as a second event, so that
//     the subscriber still hears that the session left the state and came
//     back (Up→Down, then Down→Up);
//   - with two pending events, a change returning to where the second
//     started collapses all three into one.
func push(q []StateChange, ch StateChange) ([]StateChange, int) {
	merge := func(a, b StateChange) StateChange {
		return StateChange{Key: b.Key, Old: a.Old, New: b.New, Diag: b.Diag, PeerAdminDown: b.PeerAdminDown, At: b.At,
			Coalesced: a.Coalesced + b.Coalesced + 1}
	}
	switch len(q) {
	case 0:
		return append(q, ch), 0
	case 1:
		if m := merge(q[0], ch); m.Old != m.New {
			return []StateChange{m}, 1
		}
		return []StateChange{q[0], ch}, 0
	}
	if m := merge(q[1], ch); m.Old != m.New {
		return []StateChange{q[0], m}, 1
	}
	if m := merge(merge(q[0], q[1]), ch); m.Old != m.New {
		return []StateChange{m}, 2
	}
	// Unreachable while changes chain (q[0].Old == ch.New == q[1].Old would
	// make q[0] a change to itself); keep the subscriber's chain anyway.
	m := merge(q[1], ch)
	m.Old = q[0].New
	return []StateChange{q[0], m}, 1
}

// stop ends the subscription: pending events are dropped and the
// delivery goroutine returns (closing the channel) without waiting for
// the receiver. It does not wait itself.
func (s *subscription) stop() {
	s.once.Do(func() {
		s.m.mu.Lock()
		delete(s.m.subs, s)
		s.m.mu.Unlock()
		s.mu.Lock()
		s.ended = true
		n := 0
		for _, q := range s.pending {
			n += len(q)
		}
		s.pending, s.order = nil, nil
		s.mu.Unlock()
		s.m.dropped.Add(uint64(n))
		close(s.quit)
	})
}
