//go:build privileged

package l2proto

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/netns"
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
	mu    sync.Mutex
	evs   []Event
	query chan ZoneQuery
}

func startSwitch(t testing.TB, link Link, want int, cfg NotifierConfig) *privSwitch {
	t.Helper()
	s := &privSwitch{res: newResults(want), query: make(chan ZoneQuery, 16)}
	s.reg = NewRegistry(func(e Event) { s.mu.Lock(); s.evs = append(s.evs, e); s.mu.Unlock() })
	cfg.Link, cfg.OnResult = link, s.res.add
	var err error
	if s.nt, err = NewNotifier(cfg); err != nil {
		t.Fatal(err)
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
	r := sw.res.wait(t)[0]
	if r.Err != nil || r.Attempts != 1 || r.Notification.Seq != seq {
		t.Fatalf("result %+v", r)
	}
	got := h.received()
	want.Seq = seq
	if len(got) != 1 || got[0] != want {
		t.Fatalf("host received %+v, want %+v", got, want)
	}
}

// TestPrivRetransmitAndGiveUp: withheld ACKs cause retransmission with the
// same sequence number; a host that never ACKs makes the notifier give up
// after exactly MaxAttempts sends.
func TestPrivRetransmitAndGiveUp(t *testing.T) {
	swl, hostl := vethPair(t)
	giveUpTarget := netip.MustParseAddr("10.77.0.200")
	withhold := func(n Notification, seen int) bool { return n.Target == giveUpTarget || seen < 3 }
	sw := startSwitch(t, swl, 2, NotifierConfig{InitialRTO: 5 * time.Millisecond, MaxRTO: 20 * time.Millisecond, MaxAttempts: 5})
	h := startHost(t, hostl, withhold)

	n := Notification{Target: targetIP, Host: hostIP, State: inof.StateInactive, Reason: inof.ReasonLinkDown,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	if _, err := sw.nt.Notify(n); err != nil {
		t.Fatal(err)
	}
	n.Target = giveUpTarget
	if _, err := sw.nt.Notify(n); err != nil {
		t.Fatal(err)
	}
	for _, r := range sw.res.wait(t) {
		switch r.Notification.Target {
		case targetIP:
			if r.Err != nil || r.Attempts != 3 {
				t.Errorf("withheld twice: %+v", r)
			}
		case giveUpTarget:
			if !errors.Is(r.Err, ErrGaveUp) || r.Attempts != 5 {
				t.Errorf("never ACKed: %+v", r)
			}
		}
	}
	copies := map[netip.Addr]int{}
	for _, got := range h.received() {
		copies[got.Target]++
	}
	if copies[targetIP] != 3 || copies[giveUpTarget] != 5 {
		t.Fatalf("copies on the wire %v", copies)
	}
}

// TestPrivPacingBurst queues 5,000 notifications at once with the default
// pacing: every one is delivered, and no 500 ms window ever holds 500 frames
// (nvme-snsd's flood guard) — nor more than the configured rate allows.
func TestPrivPacingBurst(t *testing.T) {
	const count = 5000
	swl, hostl := vethPair(t)
	sw := startSwitch(t, swl, count, NotifierConfig{})
	h := startHost(t, hostl, nil)
	for i := range count {
		n := note(i)
		if _, err := sw.nt.Notify(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range sw.res.wait(t) {
		if r.Err != nil {
			t.Fatalf("result %+v", r)
		}
	}
	times := h.frameTimes()
	peak := maxInWindow(times, 500*time.Millisecond)
	t.Logf("%d notifications in %d frames over %s; peak %d frames per 500 ms", count, len(times),
		times[len(times)-1].Sub(times[0]).Round(time.Millisecond), peak)
	if peak >= floodGuardFrames || peak > DefaultRate/2+DefaultBurst {
		t.Fatalf("peak %d frames in 500 ms", peak)
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
// over a veth pair with pacing at its highest safe setting.
func BenchmarkPrivNotifierThroughput(b *testing.B) {
	swl, hostl := vethPair(b)
	sw := startSwitch(b, swl, b.N, NotifierConfig{Rate: 900, Burst: 40})
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
	var swl *PacketLink
	var w *LinkWatcher
	if err := swNS.Do(func() (err error) {
		if swl, err = ListenPacket("sw1"); err != nil {
			return err
		}
		w, err = NewLinkWatcher()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	reg := NewRegistry(log.add)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- w.Run(ctx, func(ifname string, running bool) {
			if ifname == "sw1" && !running {
				reg.LinkDown(ifname)
			}
		})
	}()
	f, err := DecodeFrame(readPcap(t, "host-register.pcap")[0].data)
	if err != nil {
		t.Fatal(err)
	}
	reg.Observe("sw1", f.Source, f.LLDP, time.Now())
	log.take()
	hostNS.MustIP("link", "set", "eth0", "down")
	deadline := time.Now().Add(10 * time.Second)
	for len(reg.Entries()) != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	expectEvents(t, log.take(), ev(Removed, hostIP, inof.ReasonLinkDown))
	swl.Close()
	cancel()
	if err := <-watchDone; err != context.Canceled {
		t.Fatalf("watcher: %v", err)
	}
}
