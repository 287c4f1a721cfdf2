package bgp_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/echoprobe"
	"github.com/openinof/inof/internal/selfexec"
	"github.com/openinof/inof/internal/syncbuf"
)

// peerProbe is the reflector's echo probe as the test tells it to answer,
// per probed switch, recording every probe it was asked for.
type peerProbe struct {
	mu      sync.Mutex
	answers map[netip.Addr]echoprobe.Result
	calls   []echoprobe.Options
}

func (p *peerProbe) probe(_ context.Context, o echoprobe.Options) (echoprobe.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, o)
	if r, ok := p.answers[o.Peer]; ok {
		return r, nil
	}
	return echoprobe.Answered, nil
}

// set makes the switch at peer answer r from now on.
func (p *peerProbe) set(peer netip.Addr, r echoprobe.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers[peer] = r
}

// since returns the probes asked for from the n-th on.
func (p *peerProbe) since(n int) []echoprobe.Options {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]echoprobe.Options(nil), p.calls[n:]...)
}

func (p *peerProbe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

// isolateFabric is a reflector r with confirmation and two switches a and
// b, both with BFD (3 × 50 ms) towards r, each switch's BFD in a child
// process of its own (ca, cb) so the test can silence either; b holds a's
// record rec. Its addresses are 127.0.47.x, used by no other BFD test.
type isolateFabric struct {
	r, a, b *bgptest.Node
	ca, cb  *selfexec.Child
	rm      *bfd.Manager
	rec     *record.Device
	probe   *peerProbe
	logged  *syncbuf.Buffer
}

// newIsolateFabric starts the fabric with confirmation hold hold; with
// mute b's kernel never answers echo (b can be no control).
func newIsolateFabric(t *testing.T, hold time.Duration, mute bool) *isolateFabric {
	t.Helper()
	bgptest.SkipUnderRace(t)
	ctx := context.Background()
	f := &isolateFabric{rm: bfd.NewManager(bfd.ManagerOptions{}), probe: &peerProbe{answers: map[netip.Addr]echoprobe.Result{}},
		logged: &syncbuf.Buffer{}}
	t.Cleanup(f.rm.Close)
	cfg := bgp.BFDConfirm{Hold: hold, MaxHold: hold}.WithProbe(f.probe.probe)
	logger := slog.New(slog.NewTextHandler(f.logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.r = bgptest.StartReflector(t, bgptest.Addr("127.0.47.1"), bgp.Options{BFD: f.rm, BFDConfirm: cfg, Logger: logger})
	f.a = bgptest.StartClient(t, bgptest.Addr("127.0.47.2"), bgp.Options{})
	f.b = bgptest.StartClient(t, bgptest.Addr("127.0.47.3"), bgp.Options{})
	if mute {
		f.probe.set(f.b.Addr, echoprobe.Silent)
	}
	fast := &bgp.NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	for _, c := range []*bgptest.Node{f.a, f.b} {
		bgptest.Connect(t, f.r, c, func(n *bgp.Neighbor) {
			if n.Address == c.Addr { // the reflector's side
				n.BFD, n.LocalAddress = fast, f.r.Addr
			}
		})
	}
	f.ca, _ = selfexec.Start(t, bfdChildEnv+"="+f.a.Addr.String()+","+f.r.Addr.String())
	f.cb, _ = selfexec.Start(t, bfdChildEnv+"="+f.b.Addr.String()+","+f.r.Addr.String())
	zone := record.ZoneRT(bgptest.ASN, "prod")
	if err := f.b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitEstablished(t, f.a, 1)
	bgptest.WaitEstablished(t, f.b, 1)
	waitBFDState(t, f.rm, f.a.Addr, bfd.Up)
	waitBFDState(t, f.rm, f.b.Addr, bfd.Up)
	f.rec = bgptest.Device(f.a.RouterID(), 1)
	if err := f.a.Publish(ctx, f.rec, zone); err != nil {
		t.Fatal(err)
	}
	f.b.View.WaitFor(t, "a's record at b", func(m map[string]bgp.RecordEvent) bool { return m[string(f.rec.Key())].Record != nil })
	// The switches' baselines (the probes at their BFD up) applied: each
	// that answered may serve as the other's control.
	f.waitUntil(t, "the baselines answered", func() bool {
		return f.r.EchoAnswered(f.a.Addr) && (mute || f.r.EchoAnswered(f.b.Addr))
	})
	return f
}

// waitUntil polls ok, failing the test after a bound only a broken
// fabric reaches.
func (f *isolateFabric) waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; reflector's stats %+v, log:\n%s", what, f.r.Stats(), f.logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// downProbes checks that the probes asked for since the n-th are a's
// down's and its control's, b's, both with the down's timeout.
func (f *isolateFabric) downProbes(t *testing.T, n int) {
	t.Helper()
	var suspect, control bool
	for _, o := range f.probe.since(n) {
		if o.Timeout < 5*time.Millisecond || o.Timeout > 50*time.Millisecond || o.Local != f.r.Addr {
			t.Fatalf("probe %+v, want one from %s with a tenth of the detection time (5–50 ms)", o, f.r.Addr)
		}
		suspect = suspect || o.Peer == f.a.Addr
		control = control || o.Peer == f.b.Addr
	}
	if !suspect || !control {
		t.Fatalf("probes at a's down %+v: want a's and its control b's", f.probe.since(n))
	}
}

// TestReflectorSilentSwitchBesideAnsweringControl: switch a's BFD goes
// down (its child stopped) and a is silent to the down's echo probe; the
// control asked beside it, switch b with BFD up, answers: the reflector
// itself is reachable, so a is declared gone at once (a's record withdrawn
// at b) although the hold is a minute.
func TestReflectorSilentSwitchBesideAnsweringControl(t *testing.T) {
	f := newIsolateFabric(t, time.Minute, false)
	n := f.probe.count()
	f.probe.set(f.a.Addr, echoprobe.Silent)
	if err := f.ca.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer f.ca.Signal(syscall.SIGCONT)
	f.b.View.WaitFor(t, "a's record withdrawn before the hold ran out", func(m map[string]bgp.RecordEvent) bool { return m[string(f.rec.Key())].Record == nil })
	if st := f.r.Stats(); st.BFDConfirmed != 1 || st.BFDUnconfirmed != 0 {
		t.Fatalf("stats %+v, want one confirmed BFD down", st)
	}
	f.downProbes(t, n)
	bgptest.WaitState(t, f.r, f.a.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
}

// TestReflectorSilentSwitchBesideSilentControl: as above, but the control
// b is silent too (b's BFD still up): the reflector may be the one cut
// off (in a soak, its own uplink flapped and every switch's probe failed),
// so a's silence confirms nothing; BFD back within the hold costs a
// nothing and counts unconfirmed.
func TestReflectorSilentSwitchBesideSilentControl(t *testing.T) {
	f := newIsolateFabric(t, time.Minute, false)
	n := f.probe.count()
	f.probe.set(f.a.Addr, echoprobe.Silent)
	f.probe.set(f.b.Addr, echoprobe.Silent)
	if err := f.ca.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The reflector says why it waits once it has both probes' results;
	// had it confirmed a instead, the count says so at once.
	f.waitUntil(t, "the silent control's result", func() bool {
		return strings.Contains(f.logged.String(), "so is the control switch asked beside it") || f.r.Stats().BFDConfirmed > 0
	})
	if st := f.r.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v: a confirmed gone by its silence while the control was silent too", st)
	}
	f.downProbes(t, n)
	if err := f.ca.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, f.rm, f.a.Addr, bfd.Up)
	f.waitUntil(t, "BFD back counted unconfirmed", func() bool { return f.r.Stats().BFDUnconfirmed >= 1 })
	if st := f.r.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v, want no confirmed down", st)
	}
	if w := f.b.View.WithdrawsOf([][]byte{f.rec.Key()}); w[string(f.rec.Key())] != 0 || !f.b.View.Has(f.rec.Key()) {
		t.Fatalf("a's record withdrawn at b (%v withdraws) though a was never confirmed gone", w)
	}
	bgptest.WaitState(t, f.r, f.a.Addr, func(s bgp.SessionState) bool { return s == bgp.StateEstablished })
}

// TestReflectorHearingNoSwitchConfirmsNone: every switch's BFD goes down
// at once (both children stopped) and both kernels answer echo, so only
// the hold (a second) could confirm: while the reflector hears none of
// its switches its downs are kept pending (cut off, not its fabric gone)
// and none is confirmed. Once b is back, a, still down, is confirmed after
// a hold.
func TestReflectorHearingNoSwitchConfirmsNone(t *testing.T) {
	f := newIsolateFabric(t, time.Second, false)
	for _, c := range []*selfexec.Child{f.ca, f.cb} {
		if err := c.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer c.Signal(syscall.SIGCONT)
	}
	waitBFDState(t, f.rm, f.a.Addr, bfd.Down)
	waitBFDState(t, f.rm, f.b.Addr, bfd.Down)
	// The holds run out with both down: kept (said once in the log), or,
	// without the rule, confirmed.
	f.waitUntil(t, "the holds run out hearing no switch", func() bool {
		return strings.Contains(f.logged.String(), "this reflector seems cut off") || f.r.Stats().BFDConfirmed > 0
	})
	if st := f.r.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v: a switch confirmed gone while the reflector heard none", st)
	}
	if !f.b.View.Has(f.rec.Key()) {
		t.Fatal("a's record withdrawn while the reflector heard no switch")
	}

	if err := f.cb.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, f.rm, f.b.Addr, bfd.Up)
	f.b.View.WaitFor(t, "a's record withdrawn once b is heard again", func(m map[string]bgp.RecordEvent) bool { return m[string(f.rec.Key())].Record == nil })
	if st := f.r.Stats(); st.BFDConfirmed != 1 {
		t.Fatalf("stats %+v, want a's down (only) confirmed", st)
	}
	for _, s := range f.rm.Sessions() {
		if s.Key.Peer == f.a.Addr && s.State == bfd.Up {
			t.Fatal("a's BFD up: its down was not the one confirmed")
		}
	}
}

// TestReflectorSilentSwitchWithoutControl: switch a's BFD goes down and a
// would be silent, but the other switch b never answered echo, so no
// control can say the reflector is reachable: a is not probed, its down
// waits out its hold (a minute), and BFD back counts it unconfirmed.
// (With no other switch at all, a's silence confirms by itself:
// TestBFDDownConfirmedBySilentProbe.)
func TestReflectorSilentSwitchWithoutControl(t *testing.T) {
	f := newIsolateFabric(t, time.Minute, true)
	n := f.probe.count()
	f.probe.set(f.a.Addr, echoprobe.Silent)
	if err := f.ca.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The reflector logs its decision to probe or not at the down.
	f.waitUntil(t, "a's down held", func() bool {
		return strings.Contains(f.logged.String(), "confirming before the switch is declared gone") || f.r.Stats().BFDConfirmed > 0
	})
	if st := f.r.Stats(); st.BFDConfirmed != 0 {
		t.Fatalf("stats %+v: a confirmed gone with no control beside its probe", st)
	}
	for _, o := range f.probe.since(n) {
		if o.Peer == f.a.Addr {
			t.Fatalf("a probed at its down (%+v) with no control to ask beside it", o)
		}
	}
	if err := f.ca.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitBFDState(t, f.rm, f.a.Addr, bfd.Up)
	f.waitUntil(t, "BFD back counted unconfirmed", func() bool { return f.r.Stats().BFDUnconfirmed >= 1 })
	if st := f.r.Stats(); st.BFDConfirmed != 0 || !f.b.View.Has(f.rec.Key()) {
		t.Fatalf("stats %+v, a's record at b %v: want no confirmed down and the record kept", st, f.b.View.Has(f.rec.Key()))
	}
}
