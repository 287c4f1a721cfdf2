//go:build privileged

package l2proto

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/internal/syncbuf"
)

// vethPair opens AF_PACKET links on both ends of a veth joining two fresh
// namespaces: "sw1" on the switch side, "eth0" on the host side.
func vethPair(t testing.TB) (sw, host *PacketLink) {
	t.Helper()
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	open := func(ns *netns.NS, ifname string) *PacketLink {
		var l *PacketLink
		if err := ns.Do(func() (err error) { l, err = ListenPacket(ifname); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	return open(swNS, "sw1"), open(hostNS, "eth0")
}

// privSwitch runs a SwitchPort with a notifier on link and answers zone
// queries with notifications for targets.
type privSwitch struct {
	reg   *Registry
	nt    *Notifier
	port  *SwitchPort
	res   *results
	log   eventLog
	query chan ZoneQuery
}

// startSwitch starts the switch side; prepare, if given, sees the notifier
// before it runs.
func startSwitch(t testing.TB, link Link, want int, cfg NotifierConfig, prepare ...func(*Notifier)) *privSwitch {
	t.Helper()
	s := &privSwitch{res: newResults(want), query: make(chan ZoneQuery, 16)}
	s.reg = newTestRegistry(t, RegistryConfig{})
	runRegistry(t, s.reg, &s.log)
	cfg.Link, cfg.OnResult = link, s.res.add
	var err error
	if s.nt, err = NewNotifier(cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range prepare {
		f(s.nt)
	}
	s.port, err = NewSwitchPort(SwitchPortConfig{Link: link, Registry: s.reg, Notifier: s.nt,
		OnQuery: func(_ string, q ZoneQuery) { s.query <- q }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.nt.Run(ctx) }()
	go func() { defer wg.Done(); s.port.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

func startHost(t testing.TB, link Link, withhold func(Notification, int) bool) *snsdHost {
	h := newSNSDHost(link, hostIP)
	h.withhold = withhold
	done := make(chan error, 1)
	go func() { done <- h.run() }()
	t.Cleanup(func() {
		link.Close()
		if err := <-done; err != nil {
			t.Errorf("host: %v", err)
		}
	})
	return h
}

// replayRegistration sends the captured snsd LLDPDU and zone query.
func replayRegistration(t testing.TB, host Link) {
	t.Helper()
	for _, fr := range readPcap(t, "host-register.pcap")[:2] {
		if err := host.WriteFrame(fr.data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrivRegistrationNotifyAck: the captured snsd registration and query
// arrive over a real veth; the switch registers the host, answers the query
// with a notification, and the host's ACK completes it.
func TestPrivRegistrationNotifyAck(t *testing.T) {
	swl, hostl := vethPair(t)
	sw := startSwitch(t, swl, 1, NotifierConfig{})
	h := startHost(t, hostl, nil)
	replayRegistration(t, hostl)

	var q ZoneQuery
	select {
	case q = <-sw.query:
	case <-time.After(10 * time.Second):
		t.Fatal("no zone query")
	}
	e, ok := sw.reg.Lookup("sw1", hostIP)
	if !ok || e.Device.Role != inof.RoleHost || e.Device.Protocol != inof.ProtocolRoCE || e.PortID != "snsd_veth-h_01" || e.TTL != 120*time.Second {
		t.Fatalf("registration %+v (found %v)", e, ok)
	}
	want := Notification{Target: targetIP, Host: q.Host, State: inof.StateActive, Reason: inof.ReasonNone,
		Role: inof.RoleTarget, Protocol: inof.ProtocolRoCE, Port: 4420, NQN: interopNQN}
	seq, err := sw.nt.Notify(want)
	if err != nil {
		t.Fatal(err)
	}
	// On a loaded machine an ACK may come after the retransmission timeout:
	// then the host gets another copy under the same sequence number, which
	// is correct; what must hold is delivery and that every copy is this
	// notification.
	r := sw.res.wait(t)[0]
	if r.Err != nil || r.Attempts < 1 || r.Notification.Seq != seq {
		t.Fatalf("result %+v", r)
	}
	got := h.received()
	want.Seq = seq
	if len(got) != r.Attempts && len(got) != r.Attempts-1 { // the last copy may still be on its way
		t.Fatalf("host received %d copies for %d sends", len(got), r.Attempts)
	}
	for _, g := range got {
		if g != want {
			t.Fatalf("host received %+v, want %+v", g, want)
		}
	}
	if len(got) == 0 {
		t.Fatal("host received nothing")
	}
}

// TestPrivRetransmitAndGiveUp: withheld ACKs cause retransmission with the
// same sequence number; a host that never ACKs makes the notifier give up
// after exactly MaxAttempts sends. The checks hold whatever the machine's
// load: a late ACK may cost an extra copy, but every copy the notifier
// counts reaches the host, under one sequence number.
func TestPrivRetransmitAndGiveUp(t *testing.T) {
	swl, hostl := vethPair(t)
	giveUpTarget := netip.MustParseAddr("10.77.0.200")
	withhold := func(n Notification, seen int) bool { return n.Target == giveUpTarget || seen < 3 }
	sw := startSwitch(t, swl, 2, NotifierConfig{InitialRTO: 5 * time.Millisecond, MaxRTO: 20 * time.Millisecond, MaxAttempts: 5})
	h := startHost(t, hostl, withhold)

	n := Notification{Target: targetIP, Host: hostIP, State: inof.StateInactive, Reason: inof.ReasonLinkDown,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	seqs := map[netip.Addr]uint32{}
	for _, target := range []netip.Addr{targetIP, giveUpTarget} {
		n.Target = target
		seq, err := sw.nt.Notify(n)
		if err != nil {
			t.Fatal(err)
		}
		seqs[target] = seq
	}
	attempts := map[netip.Addr]int{}
	for _, r := range sw.res.wait(t) {
		attempts[r.Notification.Target] = r.Attempts
		switch r.Notification.Target {
		case targetIP:
			if r.Err != nil || r.Attempts < 3 {
				t.Errorf("withheld twice: %+v", r)
			}
		case giveUpTarget:
			if !errors.Is(r.Err, ErrGaveUp) || r.Attempts != 5 {
				t.Errorf("never ACKed: %+v", r)
			}
		}
	}
	copies := func() map[netip.Addr]int {
		c := map[netip.Addr]int{}
		for _, got := range h.received() {
			if got.Seq != seqs[got.Target] {
				t.Fatalf("copy of %s with sequence %d, want %d", got.Target, got.Seq, seqs[got.Target])
			}
			c[got.Target]++
		}
		return c
	}
	waitFor(t, "every copy at the host", func() bool {
		c := copies()
		return c[targetIP] == attempts[targetIP] && c[giveUpTarget] == 5
	})
}

// TestPrivPacingBurst queues 5,000 notifications at once with the default
// pacing over a real veth: every one is delivered, and the frames leave as
// the token bucket allows (measured on the sending side, on the notifier's
// own clock: receive times say more about the scheduler than the pacer).
func TestPrivPacingBurst(t *testing.T) {
	const count = 5000
	swl, hostl := vethPair(t)
	var mu sync.Mutex
	var sends []time.Time
	sw := startSwitch(t, swl, count, NotifierConfig{}, func(nt *Notifier) {
		nt.onSend = func(now time.Time, _ []byte) { mu.Lock(); sends = append(sends, now); mu.Unlock() }
	})
	h := startHost(t, hostl, nil)
	for i := range count {
		if _, err := sw.nt.Notify(note(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range sw.res.wait(t) {
		if r.Err != nil {
			t.Fatalf("result %+v", r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	peak := maxInWindow(sends, FloodGuardPeriod+time.Nanosecond)
	recv := h.frameTimes()
	t.Logf("%d notifications in %d frames over %s; peak %d frames per 500 ms sent (%d received)", count, len(sends),
		sends[len(sends)-1].Sub(sends[0]).Round(time.Millisecond), peak, maxInWindow(recv, FloodGuardPeriod))
	if limit := maxFramesPerPeriod(DefaultRate, DefaultBurst); peak > limit {
		t.Fatalf("peak %d frames in 500 ms, pacing allows %d", peak, limit)
	}
}

// TestPrivGarbageFlood: thousands of malformed frames are counted and
// dropped, and a registration sent after them is still taken.
func TestPrivGarbageFlood(t *testing.T) {
	swl, hostl := vethPair(t)
	sw := startSwitch(t, swl, 0, NotifierConfig{})
	reg := readPcap(t, "host-register.pcap")[0].data
	bad := append([]byte(nil), reg...)
	bad[70] = 9 // the registration's role byte: no such role
	badVer := EncodeFrame(GroupNotify, hostMAC, EtherTypeNotify, []byte{7, 0, 0, 1, 0, 0, 0, 0, 0})
	const floods = 2000
	for i := range floods {
		f := badVer
		if i%2 == 0 {
			f = bad
		}
		if err := hostl.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	replayRegistration(t, hostl)
	select {
	case <-sw.query:
	case <-time.After(10 * time.Second):
		t.Fatal("registration lost behind garbage")
	}
	if _, ok := sw.reg.Lookup("sw1", hostIP); !ok {
		t.Fatal("host not registered")
	}
	c := sw.port.Drops().Counts()
	var total uint64
	for _, v := range c {
		total += v
	}
	kdrops, err := swl.KernelDrops()
	if err != nil {
		t.Fatal(err)
	}
	if c["version"] != floods/2 || c["value"] != floods/2 || total != floods {
		t.Fatalf("drop counts %v, want %d in all (kernel dropped %d)", c, floods, kdrops)
	}
}

// BenchmarkPrivNotifierThroughput measures notifications ACKed per second
// over a veth pair with pacing at the ceiling NewNotifier allows.
func BenchmarkPrivNotifierThroughput(b *testing.B) {
	swl, hostl := vethPair(b)
	sw := startSwitch(b, swl, b.N, NotifierConfig{Rate: 480, Burst: 10})
	startHost(b, hostl, nil)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := sw.nt.Notify(note(i % 60000)); err != nil {
			b.Fatal(err)
		}
	}
	sw.res.wait(b)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "acked/s")
}

// TestPrivLinkDown: when the host side of the veth goes down, the watcher
// reports the switch port's carrier loss and the registry removes the host at
// once with reason link down.
func TestPrivLinkDown(t *testing.T) {
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	var w *LinkWatcher
	if err := swNS.Do(func() (err error) { w, err = NewLinkWatcher(slog.New(slog.DiscardHandler)); return err }); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	reg := newTestRegistry(t, RegistryConfig{})
	runRegistry(t, reg, &log)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	states := make(chan LinkState, 64)
	watchDone := make(chan error, 1)
	// armed: the port was reported running once. A new veth's carrier
	// comes up a moment after both ends are up (the kernel's link watch
	// defers it), so the first reports may say it is not running yet;
	// those are no link down of a registered port.
	var armed atomic.Bool
	go func() {
		watchDone <- w.Run(ctx, func(s LinkState) {
			if s.Name == "sw1" {
				if !s.Running && armed.Load() {
					reg.LinkDown(s.Name)
				}
				states <- s
			}
		})
	}()
	// The initial dump, or the report that follows it, says the port is
	// up (veth carrier follows the peer).
	waitState(t, states, true)
	armed.Store(true)
	f, err := DecodeFrame(readPcap(t, "host-register.pcap")[0].data)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Observe("sw1", f.Source, f.LLDP, time.Now()); err != nil {
		t.Fatal(err)
	}
	hostNS.MustIP("link", "set", "eth0", "down")
	waitState(t, states, false)
	waitFor(t, "link-down removal and the port's own event", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.evs) >= 3
	})
	expectEvents(t, log.take(), ev(Registered, hostIP, 0), ev(Removed, hostIP, inof.ReasonLinkDown), portDown("sw1"))
	hostNS.MustIP("link", "set", "eth0", "up")
	waitState(t, states, true)
	cancel()
	if err := <-watchDone; err != context.Canceled {
		t.Fatalf("watcher: %v", err)
	}
}

// waitState waits for a report of sw1 in the running state wanted; reports
// of the other state before it (the kernel may report a change twice, or
// a carrier that settles after the link came up) are passed over.
func waitState(t *testing.T, states <-chan LinkState, running bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var last []LinkState
	for {
		select {
		case s := <-states:
			if s.Running == running {
				return
			}
			last = append(last, s)
		case <-timeout:
			t.Fatalf("no report of sw1 running=%v; reports meanwhile: %+v", running, last)
		}
	}
}

// TestPrivLinkWatcherOverflow: with a tiny netlink receive buffer and a
// consumer that stalls, events are lost (ENOBUFS), or the subscription is
// ended first by a signal (EINTR: the receive timeout makes recvfrom
// return it); either way the watcher re-reads the links and still reports
// the port's final carrier state.
func TestPrivLinkWatcherOverflow(t *testing.T) {
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	var w *LinkWatcher
	var logs syncbuf.Buffer
	if err := swNS.Do(func() (err error) {
		w, err = NewLinkWatcher(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	w.rcvbuf = 1024 // the kernel's minimum: a few messages
	// A subscription idle for Wake ends by itself, and events sent after
	// that reach no socket: on a loaded machine 1 s can pass between the
	// stuck report and the flood. Five seconds is also how long the
	// watcher may take to end after cancel.
	w.wake = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release, stuck := make(chan struct{}), make(chan struct{}, 1)
	var mu sync.Mutex
	last := map[string]bool{}
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- w.Run(ctx, func(s LinkState) {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-release
			mu.Lock()
			last[s.Name] = s.Running
			mu.Unlock()
		})
	}()
	// While the consumer is stuck (subscribed, in its first report), flood
	// the namespace with link events and leave sw1 without carrier.
	select {
	case <-stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("no report from the initial dump")
	}
	// Each namespace's changes come from one `ip -batch`, so they arrive in
	// a burst however slow the machine is at starting processes.
	var adds, flaps strings.Builder
	for i := range 60 {
		fmt.Fprintf(&adds, "link add v%d type veth peer name v%dp\n", i, i)
		fmt.Fprintf(&flaps, "link set eth0 %s\n", map[bool]string{true: "down", false: "up"}[i%2 == 0])
	}
	flaps.WriteString("link set eth0 down\n")
	dir := t.TempDir()
	for _, b := range []struct {
		ns   *netns.NS
		file string
		text string
	}{{swNS, "adds", adds.String()}, {hostNS, "flaps", flaps.String()}} {
		path := filepath.Join(dir, b.file)
		if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		b.ns.MustIP("-batch", path)
	}
	close(release)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		running, ok := last["sw1"]
		mu.Unlock()
		if ok && !running && w.LostEvents()+w.interrupted.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sw1 reported=%v running=%v; events lost %d times, interrupted %d times; log:\n%s",
				ok, running, w.LostEvents(), w.interrupted.Load(), logs.String())
		}
	}
	t.Logf("events lost %d times, subscriptions interrupted %d times", w.LostEvents(), w.interrupted.Load())
	cancel()
	if err := <-watchDone; err != context.Canceled {
		t.Fatalf("watcher: %v", err)
	}
}

// TestPrivPortAdminDownUp: a switch port set administratively down and up
// again keeps its SwitchPort reading (the socket reports ENETDOWN once;
// before, Run returned on it and the port went deaf for good).
func TestPrivPortAdminDownUp(t *testing.T) {
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	var swl, hostl *PacketLink
	if err := swNS.Do(func() (err error) { swl, err = ListenPacket("sw1"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := hostNS.Do(func() (err error) { hostl, err = ListenPacket("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostl.Close() })
	reg := newTestRegistry(t, RegistryConfig{})
	var log eventLog
	runRegistry(t, reg, &log)
	nt, err := NewNotifier(NotifierConfig{Link: swl})
	if err != nil {
		t.Fatal(err)
	}
	queries := make(chan ZoneQuery, 16)
	port, err := NewSwitchPort(SwitchPortConfig{Link: swl, Registry: reg, Notifier: nt,
		OnQuery: func(_ string, q ZoneQuery) { queries <- q }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- port.Run(ctx) }()
	ended := false
	defer func() {
		cancel()
		if !ended {
			if err := <-done; err != context.Canceled {
				t.Errorf("Run: %v", err)
			}
		}
	}()

	swNS.MustIP("link", "set", "sw1", "down")
	swNS.MustIP("link", "set", "sw1", "up")
	hostNS.MustIP("link", "set", "eth0", "up")
	// Registrations are resent until the port answers: the veth needs a
	// moment to carry frames again after it came up.
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-done:
			ended = true
			t.Fatalf("SwitchPort.Run ended after the port went down and up: %v", err)
		default:
		}
		replayRegistration(t, hostl)
		select {
		case q := <-queries:
			if q.Host != hostIP {
				t.Fatalf("query from %s", q.Host)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no zone query after the port came back up")
		}
	}
}

// TestPrivStrayFrames: a registration on an interface that is not an
// access port is reported by the StrayWatcher (for counting); one on an
// access port is not (its PacketLink reads it), and the kernel's filter
// keeps it from the watcher's socket altogether.
func TestPrivStrayFrames(t *testing.T) {
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	netns.Veth(t, swNS, "sw2", hostNS, "eth1")
	var w *StrayWatcher
	if err := swNS.Do(func() (err error) { w, err = ListenStray([]string{"sw1"}); return err }); err != nil {
		t.Fatal(err)
	}
	open := func(ifname string) *PacketLink {
		var l *PacketLink
		if err := hostNS.Do(func() (err error) { l, err = ListenPacket(ifname); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	onAccess, onUplink := open("eth0"), open("eth1")
	ctx, cancel := context.WithCancel(context.Background())
	stray := make(chan string, 64)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, func(ifname string, _ []byte) { stray <- ifname }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// The access port first: if it were reported, it would come before the
	// uplink's frame.
	replayRegistration(t, onAccess)
	deadline := time.After(20 * time.Second)
	for {
		replayRegistration(t, onUplink)
		select {
		case name := <-stray:
			if name != "sw2" {
				t.Fatalf("a frame on %s reported as stray; want only sw2", name)
			}
			if n := w.skipped.Load(); n != 0 {
				t.Fatalf("%d frames of the access port reached the watcher's socket past its filter", n)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("the registration on the uplink was never reported")
		}
	}
}
