package l2proto

import (
	"math/rand/v2"
	"testing"
	"time"
)

// busyAckDelay is the ACK delay of nvme-snsd under a 5,000-notification
// burst as measured in issue #9 (p99 65–480 ms, once 1.6 s): per ACK frame,
// 60% within 40 ms, 30% 40–200 ms, 9% 200–480 ms, 1% 480 ms–1.6 s.
func busyAckDelay(r *rand.Rand) time.Duration {
	u := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	switch p := r.Float64(); {
	case p < 0.60:
		return u(2*ms, 40*ms)
	case p < 0.90:
		return u(40*ms, 200*ms)
	case p < 0.99:
		return u(200*ms, 480*ms)
	default:
		return u(480*ms, 1600*ms)
	}
}

// busyScenario is a load on the host model.
type busyScenario struct {
	spread time.Duration                  // Notify calls spread evenly over this (0: all at once)
	delay  func(*rand.Rand) time.Duration // ACK delay per frame
	stall  time.Duration                  // a stall of the host's ACKs, 1 s in
}

type modelRun struct { // counters of one model run
	delivered, gaveUp                       int
	sent, frames, retrans                   uint64
	duplicates, overflows, trips, guardDrop int
	maxPool                                 int
	took                                    time.Duration
}

// runBusyHost sends count notifications to the host model with its
// 1,000-slot pool, flood guard and busy-host ACK delays: all at once if
// spread is 0, else evenly over spread (a switch agent working through a
// zone change).
// A stall, if set, begins 1 s into the run.
func runBusyHost(t *testing.T, count int, sc busyScenario, cfg NotifierConfig, legacy bool, seed uint64) modelRun {
	spread := sc.spread
	t.Helper()
	s := newSim(t, cfg)
	if legacy {
		// The notifier before issue #9: a fixed first timeout doubling to
		// the cap, no RTT estimate, no window.
		s.nt.fixedRTO = true
		s.nt.cfg.Window = DefaultMaxPending
	}
	h := newHostModel(s, hostIP)
	h.rng = rand.New(rand.NewPCG(seed, 7))
	h.ackDelay = sc.delay
	h.poolSize = 1000
	h.guard = true
	t0 := s.clk.Now()
	if sc.stall > 0 {
		h.stallFrom = t0.Add(time.Second)
		h.stallUntil = h.stallFrom.Add(sc.stall)
	}
	for i := range count {
		if spread == 0 {
			s.notify(note(i))
			continue
		}
		s.after(time.Duration(i)*spread/time.Duration(count), func() { s.notify(note(i)) })
	}
	s.run(s.resultsDone(count), 10*time.Minute)
	var m modelRun
	for _, r := range s.results {
		if r.Err == nil {
			m.delivered++
		} else {
			m.gaveUp++
		}
	}
	st := s.nt.Stats()
	m.sent, m.frames, m.retrans = st.Sent, st.Frames, st.Retransmits
	m.duplicates, m.overflows, m.trips, m.guardDrop, m.maxPool = h.duplicates, h.overflows, h.trips, h.guardDrops, h.maxPool
	m.took = s.clk.Now().Sub(t0)
	return m
}

// TestNotifierBusyHost: 5,000 notifications for a busy nvme-snsd host,
// queued at once or spread over 5 s. With the window, the adaptive RTO and
// the pacing ceiling: no flood-guard trip, no pool overflow, every
// notification delivered, and far fewer duplicate tasks on the host than
// with the old notifier (fixed 100 ms first timeout, no window) on the same
// model and seeds. Also run: a host that stops answering for 2 s mid-burst
// (the old notifier overflows its pool), and a host three times slower: the
// same guarantees, and far fewer duplicates.
func TestNotifierBusyHost(t *testing.T) {
	slow := func(r *rand.Rand) time.Duration { return 3 * busyAckDelay(r) }
	for _, c := range []struct {
		name   string
		sc     busyScenario
		factor int // new duplicates fewer than old/factor (0: not compared)
	}{
		{"burst", busyScenario{delay: busyAckDelay}, 5},
		{"spread-5s", busyScenario{spread: 5 * time.Second, delay: busyAckDelay}, 5},
		// A stall longer than the RTO costs each notification in the
		// window one retransmission; what matters here is the pool.
		{"burst-stall-2s", busyScenario{delay: busyAckDelay, stall: 2 * time.Second}, 0},
		{"slow-host-spread-5s", busyScenario{spread: 5 * time.Second, delay: slow}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			const count, seeds = 5000, 3
			var oldDups, newDups, oldOver int
			var oldTook, newTook time.Duration
			for seed := range uint64(seeds) {
				old := runBusyHost(t, count, c.sc, NotifierConfig{InitialRTO: 100 * ms, MaxRTO: 3200 * ms}, true, seed)
				cur := runBusyHost(t, count, c.sc, NotifierConfig{}, false, seed)
				if cur.trips != 0 || cur.overflows != 0 || cur.delivered != count || cur.gaveUp != 0 {
					t.Errorf("seed %d: %+v; want no flood-guard trip, no pool overflow, all %d delivered", seed, cur, count)
				}
				if cur.maxPool > 2*DefaultWindow {
					t.Errorf("seed %d: pool peaked at %d with a window of %d", seed, cur.maxPool, DefaultWindow)
				}
				oldDups, newDups, oldOver = oldDups+old.duplicates, newDups+cur.duplicates, oldOver+old.overflows
				oldTook, newTook = oldTook+old.took, newTook+cur.took
			}
			t.Logf("%d runs of %d notifications: duplicates old %d, new %d; old pool overflows %d; mean time to the last result old %s, new %s",
				seeds, count, oldDups, newDups, oldOver, (oldTook / seeds).Round(ms), (newTook / seeds).Round(ms))
			if c.factor > 0 && newDups*c.factor >= oldDups {
				t.Errorf("duplicates: new %d, old %d; want fewer than old/%d", newDups, oldDups, c.factor)
			}
		})
	}
}

// TestNotifierAtCeilingNoFloodGuard: the fastest pacing NewNotifier accepts
// (250 frames per 500 ms) never reaches the flood guard, even when every
// frame is a retransmission to a host that stopped answering.
func TestNotifierAtCeilingNoFloodGuard(t *testing.T) {
	s := newSim(t, NotifierConfig{Rate: 480, Burst: 10, InitialRTO: 100 * ms, MaxAttempts: 4})
	h := newHostModel(s, hostIP)
	h.guard = true
	h.withhold = func(Notification, int) bool { return true }
	for i := range 5000 {
		n := note(i % 1000)
		n.Host = target(1000 + i/1000) // five hosts, window 256 each
		s.notify(n)
	}
	s.run(s.resultsDone(5000), time.Hour)
	if peak := maxInWindow(s.sends, FloodGuardPeriod+time.Nanosecond); peak > FrameCeiling || h.trips != 0 {
		t.Fatalf("peak %d frames in 500 ms, %d flood-guard trips", peak, h.trips)
	}
	t.Logf("%d frames, peak %d per 500 ms", len(s.sends), maxInWindow(s.sends, FloodGuardPeriod+time.Nanosecond))
}
