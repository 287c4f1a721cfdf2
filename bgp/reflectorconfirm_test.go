package bgp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/echoprobe"
	"github.com/openinof/inof/internal/selfexec"
)

// witness is a client a with BFD (3 × 50 ms) and confirmation towards a
// reflector r, and a client b whose record rec a holds; states are the
// session states a saw towards r from the start (its first session's
// opening included). Its addresses are 127.0.46.x: a BFD session of another
// test's (or another process's) on 127.0.0.x cannot come up with a's.
type witness struct {
	r, a, b *bgptest.Node
	am      *bfd.Manager
	rec     *record.Device
	zone    record.RouteTarget
	mu      sync.Mutex
	states  []bgp.SessionState
}

func newWitness(t *testing.T, cfg bgp.BFDConfirm) *witness {
	t.Helper()
	ctx := context.Background()
	w := &witness{am: bfd.NewManager(bfd.ManagerOptions{}), zone: record.ZoneRT(bgptest.ASN, "prod")}
	t.Cleanup(w.am.Close)
	w.r = bgptest.StartReflector(t, bgptest.Addr("127.0.46.1"), bgp.Options{})
	w.a = bgptest.StartClient(t, bgptest.Addr("127.0.46.2"), bgp.Options{BFD: w.am, BFDConfirm: cfg})
	w.b = bgptest.StartClient(t, bgptest.Addr("127.0.46.3"), bgp.Options{})
	fast := &bgp.NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	bgptest.Connect(t, w.r, w.a, func(n *bgp.Neighbor) {
		if n.Address == w.r.Addr { // a's side
			n.BFD = fast
		}
	})
	bgptest.Connect(t, w.r, w.b, nil)
	err := w.a.WatchNeighbors(ctx, func(ev bgp.NeighborEvent) {
		if ev.Address == w.r.Addr {
			w.mu.Lock()
			w.states = append(w.states, ev.State)
			w.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.a.Subscribe(ctx, w.zone); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitEstablished(t, w.a, 1)
	bgptest.WaitEstablished(t, w.b, 1)
	w.rec = bgptest.Device(w.b.RouterID(), 1)
	if err := w.b.Publish(ctx, w.rec, w.zone); err != nil {
		t.Fatal(err)
	}
	w.a.View.WaitFor(t, "b's record at a", func(m map[string]bgp.RecordEvent) bool { return m[string(w.rec.Key())].Record != nil })
	return w
}

// answered waits until a has applied the reflector's answer to the echo
// probe at BFD up (applied on a's BFD watch, after the probe returned): a
// down before it would not be probed.
func (w *witness) answered(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !w.a.EchoAnswered(w.r.Addr) {
		if time.Now().After(deadline) {
			t.Fatal("the reflector's answer at BFD up was never applied")
		}
		time.Sleep(time.Millisecond)
	}
}

// key is a's BFD session towards r.
func (w *witness) key() bfd.SessionKey { return bfd.SessionKey{Local: w.a.Addr, Peer: w.r.Addr} }

// bfd hands a the BFD change old → new towards r, as its BFD watch does.
func (w *witness) bfd(old, new bfd.State) {
	w.a.OnBFD(bfd.StateChange{Key: w.key(), Old: old, New: new, Diag: bfd.DiagControlExpired})
}

// keptThroughout checks, once a marker record of b's has reached a (so
// a's session events before it are in), that a's session to r never left
// Established and a still holds rec.
func (w *witness) keptThroughout(t *testing.T, i int) {
	t.Helper()
	marker := bgptest.Device(w.b.RouterID(), 100+i)
	if err := w.b.Publish(context.Background(), marker, w.zone); err != nil {
		t.Fatal(err)
	}
	w.a.View.WaitFor(t, "b's marker at a", func(m map[string]bgp.RecordEvent) bool { return m[string(marker.Key())].Record != nil })
	w.mu.Lock()
	defer w.mu.Unlock()
	up := slices.Index(w.states, bgp.StateEstablished)
	if up < 0 || slices.ContainsFunc(w.states[up:], func(s bgp.SessionState) bool { return s != bgp.StateEstablished }) {
		t.Fatalf("a's session to the reflector was reset: states %v", w.states)
	}
	if !w.a.View.Has(w.rec.Key()) {
		t.Fatal("a lost the reflector's routes")
	}
}

// fakeProbe answers for the reflector's kernel as told and hands each
// probe's options to the test.
type fakeProbe struct {
	result atomic.Int32 // an echoprobe.Result, 0 for an error
	calls  chan echoprobe.Options
}

func newFakeProbe(r echoprobe.Result) *fakeProbe {
	p := &fakeProbe{calls: make(chan echoprobe.Options, 16)}
	p.result.Store(int32(r))
	return p
}

func (p *fakeProbe) probe(_ context.Context, o echoprobe.Options) (echoprobe.Result, error) {
	p.calls <- o
	if r := echoprobe.Result(p.result.Load()); r != 0 {
		return r, nil
	}
	return 0, errors.New("no ICMP socket (test)")
}

func (p *fakeProbe) next(t *testing.T, what string) echoprobe.Options {
	t.Helper()
	select {
	case o := <-p.calls:
		return o
	case <-time.After(30 * time.Second):
		t.Fatalf("no probe %s", what)
	}
	return echoprobe.Options{}
}

// waitStats waits until a's speaker counts as ok says.
func waitStats(t *testing.T, n *bgptest.Node, what string, ok func(bgp.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(n.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: stats %+v", what, n.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClientBFDDownWitness: on a client, a BFD down towards a reflector
// whose kernel answered echo when BFD came up is held while the kernel
// answers the down's probe, and BFD back within the hold costs nothing
// (session and routes kept, counted unconfirmed); the same down with the
// kernel silent drops the reflector at once (a hold of a minute could not),
// counted confirmed. The probe is this package's stand-in;
// TestReflectorBFDStarvedKeepsSession runs the real one.
func TestClientBFDDownWitness(t *testing.T) {
	p := newFakeProbe(echoprobe.Answered)
	w := newWitness(t, bgp.BFDConfirm{Hold: time.Minute, MaxHold: time.Minute}.WithProbe(p.probe))

	w.bfd(bfd.Down, bfd.Up)
	if o := p.next(t, "when BFD came up"); o.Peer != w.r.Addr || o.Local != w.a.Addr || o.Timeout != bgp.BaselineProbe {
		t.Fatalf("probe at BFD up %+v, want %s from %s for %v", o, w.r.Addr, w.a.Addr, bgp.BaselineProbe)
	}
	w.answered(t)
	for i := range 3 {
		w.bfd(bfd.Up, bfd.Down)
		if o := p.next(t, "at the BFD down"); o.Peer != w.r.Addr || o.Timeout < 5*time.Millisecond || o.Timeout > 50*time.Millisecond {
			t.Fatalf("probe at BFD down %+v, want %s with a tenth of the detection time (5–50 ms)", o, w.r.Addr)
		}
		w.bfd(bfd.Down, bfd.Up)
		p.next(t, "when BFD came back")
		waitStats(t, w.a, "BFD back within the hold", func(s bgp.Stats) bool { return s.BFDUnconfirmed == uint64(i+1) })
		w.keptThroughout(t, i)
	}
	if st := w.a.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v: a down the reflector's kernel answered counted confirmed", st)
	}

	p.result.Store(int32(echoprobe.Silent))
	w.bfd(bfd.Up, bfd.Down)
	p.next(t, "at the BFD down")
	bgptest.WaitState(t, w.a, w.r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	if st := w.a.Stats(); st.BFDConfirmed != 1 || st.BFDUnconfirmed != 3 {
		t.Fatalf("stats %+v, want one confirmed down and three unconfirmed", st)
	}
}

// TestClientBFDDownWithoutWitness: a reflector whose kernel did not
// answer echo when BFD came up, or could not be probed, is dropped at
// once at a BFD down with no probe of the down (today's behaviour).
func TestClientBFDDownWithoutWitness(t *testing.T) {
	for _, tc := range []struct {
		name     string
		baseline echoprobe.Result
		hold     time.Duration
	}{
		{"silent at BFD up", echoprobe.Silent, time.Minute},
		{"probe impossible", 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFakeProbe(tc.baseline)
			w := newWitness(t, bgp.BFDConfirm{Hold: tc.hold, MaxHold: tc.hold}.WithProbe(p.probe))
			w.bfd(bfd.Down, bfd.Up)
			p.next(t, "when BFD came up")
			// The baseline's result is applied on a's BFD watch; a second
			// Up (no change of state for the confirmation) queues a probe
			// behind it, so once that one is asked for the first is in.
			w.bfd(bfd.Init, bfd.Up)
			p.next(t, "at the second Up")
			w.bfd(bfd.Up, bfd.Down)
			bgptest.WaitState(t, w.a, w.r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
			waitStats(t, w.a, "the drop counted", func(s bgp.Stats) bool { return s.BFDConfirmed == 1 })
			if len(p.calls) > 0 {
				t.Fatal("probed the down of a reflector that never answered echo")
			}
		})
	}
}

// TestClientBFDDownHeldWhileReflectorAnswers: BFD towards a reflector
// stays down past several holds while the reflector's kernel answers
// echo (its BFD filtered or its CPU starved): the switch asks again at
// every hold and keeps the session and its routes (the BGP hold timer
// ends a hung daemon's); the first silent answer drops it.
func TestClientBFDDownHeldWhileReflectorAnswers(t *testing.T) {
	const hold = 300 * time.Millisecond
	p := newFakeProbe(echoprobe.Answered)
	w := newWitness(t, bgp.BFDConfirm{Hold: hold, MaxHold: hold}.WithProbe(p.probe))
	w.bfd(bfd.Down, bfd.Up)
	p.next(t, "when BFD came up")
	w.answered(t)
	w.bfd(bfd.Up, bfd.Down)
	p.next(t, "at the BFD down")
	for i := range 3 {
		p.next(t, fmt.Sprintf("again when hold %d ran out", i+1))
	}
	w.keptThroughout(t, 0)
	if st := w.a.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v: dropped a reflector whose kernel answers", st)
	}
	p.result.Store(int32(echoprobe.Silent))
	p.next(t, "after the reflector fell silent")
	bgptest.WaitState(t, w.a, w.r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	waitStats(t, w.a, "the drop counted", func(s bgp.Stats) bool { return s.BFDConfirmed == 1 })
}

// TestReflectorBFDStarvedKeepsSession: the reflector's BFD runs in a child
// process that is stopped (SIGSTOP: a reflector starved of CPU) until the
// client's real BFD session towards it goes down; the reflector's kernel
// answers the real echo probe, so the client holds the drop, and when the
// child goes on and BFD is back the session and routes are still there
// (before the witness the client ended the session at once).
func TestReflectorBFDStarvedKeepsSession(t *testing.T) {
	var probed atomic.Int32
	probe := func(ctx context.Context, o echoprobe.Options) (echoprobe.Result, error) {
		r, err := echoprobe.Probe(ctx, o)
		if err == nil && r == echoprobe.Answered {
			probed.Add(1)
		}
		return r, err
	}
	w := newWitness(t, bgp.BFDConfirm{Hold: time.Minute, MaxHold: time.Minute}.WithProbe(probe))
	child, _ := selfexec.Start(t, bfdChildEnv+"="+w.r.Addr.String()+","+w.a.Addr.String())
	waitBFDState(t, w.am, w.r.Addr, bfd.Up)
	waitProbes := func(n int32) {
		deadline := time.Now().Add(30 * time.Second)
		for probed.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d echo probes answered, want %d", probed.Load(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitProbes(1) // the baseline at BFD up
	if err := child.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, w.am, w.r.Addr, bfd.Down)
	waitProbes(2) // the down's
	if err := child.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, w.am, w.r.Addr, bfd.Up)
	waitStats(t, w.a, "BFD back within the hold", func(s bgp.Stats) bool { return s.BFDUnconfirmed == 1 })
	w.keptThroughout(t, 0)
	if st := w.a.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v, want no confirmed down", st)
	}
}
