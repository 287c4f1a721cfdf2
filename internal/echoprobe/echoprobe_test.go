package echoprobe

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakePeer is an endpoint on a fake clock: the peer answers request seq
// rtt[seq] after it was sent (never when rtt is negative or missing), and
// the probe's goroutine, starved, runs stall[op] late before each call of
// op ("send", "await", "queued") and stall["op n"] before the n-th (from 0). Its await behaves as a Go socket read: a
// read whose deadline has passed by the time the goroutine runs reports
// none without looking at the socket; queued looks at what has arrived.
type fakePeer struct {
	t      time.Time
	rtt    []time.Duration
	stall  map[string]time.Duration
	arrive []time.Time // when each reply is queued
	calls  []string
	n      map[string]int
}

func (f *fakePeer) now() time.Time { return f.t }

func (f *fakePeer) run(op string) {
	f.calls = append(f.calls, op)
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.t = f.t.Add(f.stall[op] + f.stall[fmt.Sprintf("%s %d", op, f.n[op])])
	f.n[op]++
}

func (f *fakePeer) send(id, seq int, token []byte) error {
	f.run("send")
	if seq < len(f.rtt) && f.rtt[seq] >= 0 {
		f.arrive = append(f.arrive, f.t.Add(f.rtt[seq]))
	}
	return nil
}

// first is when the first reply arrives (ok false: none will).
func (f *fakePeer) first() (time.Time, bool) {
	var at time.Time
	for _, a := range f.arrive {
		if at.IsZero() || a.Before(at) {
			at = a
		}
	}
	return at, !at.IsZero()
}

func (f *fakePeer) await(deadline time.Time, id int, token []byte) (bool, error) {
	f.run("await")
	if !f.t.Before(deadline) {
		return false, nil
	}
	if at, ok := f.first(); ok && !at.After(deadline) {
		f.t = later(f.t, at)
		return true, nil
	}
	f.t = deadline
	return false, nil
}

func (f *fakePeer) queued(id int, token []byte) (bool, error) {
	f.run("queued")
	at, ok := f.first()
	return ok && !at.After(f.t), nil
}

const fakeTimeout = 10 * time.Millisecond // two requests, 2.5 ms apart

// TestProbeStarved: a peer that answers inside the probe's window is
// Answered however late the probe's goroutine runs, and one that does not
// answer is Silent, the window ending as it would on time.
func TestProbeStarved(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		rtt   []time.Duration
		stall map[string]time.Duration
		want  Result
		took  time.Duration // the probe's length on the fake clock (0: not checked)
	}{
		{name: "on time, answered", rtt: []time.Duration{ms}, want: Answered, took: ms},
		{name: "on time, answer after the window", rtt: []time.Duration{fakeTimeout + ms, -1}, want: Silent, took: fakeTimeout},
		{name: "on time, dead", want: Silent, took: fakeTimeout},
		// Each read runs after its deadline: the replies wait in the
		// socket until the window is over.
		{name: "every read late", rtt: []time.Duration{ms, ms}, stall: map[string]time.Duration{"await": 20 * ms}, want: Answered},
		{name: "every read late, dead", stall: map[string]time.Duration{"await": 20 * ms}, want: Silent},
		// Starved before its first send: the requests leave after the
		// window measured from the start has passed; the replies take less
		// than half the timeout.
		{name: "sends late", rtt: []time.Duration{3 * ms, 3 * ms}, stall: map[string]time.Duration{"send 0": 30 * ms}, want: Answered},
		{name: "sends late, second answered", rtt: []time.Duration{-1, 3 * ms}, stall: map[string]time.Duration{"send 0": 30 * ms},
			want: Answered},
		{name: "sends late, answer after its share", rtt: []time.Duration{-1, 3*fakeTimeout/4 + ms},
			stall: map[string]time.Duration{"send 0": 30 * ms}, want: Silent, took: 30*ms + fakeTimeout},
		{name: "sends late, dead", stall: map[string]time.Duration{"send": 30 * ms}, want: Silent},
		// Starved before the final look too: what is queued counts.
		{name: "all late", rtt: []time.Duration{ms, ms},
			stall: map[string]time.Duration{"send": 30 * ms, "await": 20 * ms, "queued": 20 * ms}, want: Answered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1e9, 0)
			f := &fakePeer{t: start, rtt: tc.rtt, stall: tc.stall}
			r, err := probe(context.Background(), Options{Timeout: fakeTimeout}, f, f.now)
			if err != nil || r != tc.want {
				t.Fatalf("probe: %v, %v; want %v (calls %v)", r, err, tc.want, f.calls)
			}
			if took := f.t.Sub(start); tc.took != 0 && took != tc.took {
				t.Errorf("the probe took %v of the fake clock, want %v", took, tc.took)
			}
		})
	}
}

// TestProbeContextEndsFirst: a probe whose ctx ends before its window is
// an error, not Silent: it did not wait for the answer.
func TestProbeContextEndsFirst(t *testing.T) {
	start := time.Now()
	f := &fakePeer{t: start}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(fakeTimeout/4))
	defer cancel()
	r, err := probe(ctx, Options{Timeout: fakeTimeout}, f, f.now)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe with a ctx ending a quarter into its window: %v, %v; want an error", r, err)
	}
}
