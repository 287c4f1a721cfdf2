package hostagent

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless/readback"
)

var (
	hostMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	swMAC   = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	hostIP  = netip.MustParseAddr("10.0.0.2")
)

const (
	hostNQN = "nqn.2014-08.org.nvmexpress:uuid:6a1f0c3e-0000-4000-8000-000000000002"
	subNQN  = "nqn.2014-08.org.example:nvme:array1"
)

// testOptions: one host interface eth0 (10.0.0.2, NVMe/TCP), no metrics
// listener, a state file in a fresh directory, no restrain time.
func testOptions(t *testing.T) Options {
	o := DefaultOptions()
	o.MetricsListen = ""
	o.StateFile = filepath.Join(t.TempDir(), "state.json")
	o.HostNQN = hostNQN
	o.RestrainTime = 0
	o.Interfaces = []InterfaceOptions{{Name: "eth0", Role: "host", Protocol: "tcp", Address: hostIP.String()}}
	return o
}

// harness runs an Agent on a MemLink; the test plays the switch on the
// other end.
type harness struct {
	t       *testing.T
	clk     *fakeClock
	nv      *fakeNVMe
	kern    *fakeKernel
	watch   *fakeClock // the lanes' deadline watch (advanced by the stuck test only)
	sw      *l2proto.MemLink
	reg     *prometheus.Registry
	regs    chan l2proto.Frame // LLDPDUs and zone queries from the host
	acks    chan []l2proto.Ack // ACK frames from the host
	carrier atomic.Bool
	changes atomic.Uint64          // carrier changes, as the kernel counts them
	reads   chan bool              // every carrier value the agent read
	links   chan l2proto.LinkState // link events the agent's WatchLinks reports
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	agent   *Agent
}

func start(t *testing.T, o Options, clk *fakeClock, nv *fakeNVMe) *harness {
	t.Helper()
	return startCarrier(t, o, clk, nv, true)
}

// startCarrier starts with the interface's carrier up or down.
func startCarrier(t *testing.T, o Options, clk *fakeClock, nv *fakeNVMe, up bool) *harness {
	t.Helper()
	return startFull(t, o, clk, nv, nv, nil, up)
}

// startFull starts with every fake given: ex runs the commands (nv or a
// wrapper of it), dcb reads DCB state back (nil: rtnetlink).
func startFull(t *testing.T, o Options, clk *fakeClock, nv *fakeNVMe, ex Executor, dcb readback.DCBReader, up bool) *harness {
	t.Helper()
	h := &harness{t: t, clk: clk, nv: nv, kern: newFakeKernel(nv), watch: newFakeClock(), reg: prometheus.NewRegistry(), regs: make(chan l2proto.Frame, 256),
		acks: make(chan []l2proto.Ack, 256), reads: make(chan bool, 100000), done: make(chan error, 1),
		links: make(chan l2proto.LinkState)}
	h.carrier.Store(up)
	hostEnd, swEnd := l2proto.NewMemPair("eth0", hostMAC, "sw1", swMAC)
	h.sw = swEnd
	empty := ""
	a, err := New(Config{Options: o, Links: map[string]l2proto.Link{o.Interfaces[0].Name: hostEnd}, Exec: ex, DCB: dcb,
		SubsysClass: &empty, Clock: clk, Registry: h.reg, Kernel: h.kern, WatchClock: h.watch,
		Carrier: func(string) (Carrier, error) {
			v := h.carrier.Load()
			select {
			case h.reads <- v:
			default:
			}
			return Carrier{Up: v, Changes: h.changes.Load()}, nil
		},
		WatchLinks: func(ctx context.Context, fn func(l2proto.LinkState)) error {
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case s := <-h.links:
					fn(s)
				}
			}
		},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.agent = cancel, a
	go func() { h.done <- a.Run(ctx) }()
	go h.switchSide()
	t.Cleanup(func() {
		h.stop()
		swEnd.Close()
	})
	return h
}

// stop ends Run and returns its error.
func (h *harness) stop() error {
	if h.stopped {
		return nil
	}
	h.stopped = true
	h.cancel()
	select {
	case err := <-h.done:
		return err
	case <-time.After(wait):
		h.t.Fatal("Run did not return")
		return nil
	}
}

func (h *harness) switchSide() {
	buf := make([]byte, l2proto.MaxFrameLen+4)
	for {
		n, err := h.sw.ReadFrame(buf)
		if err != nil {
			return
		}
		f, err := l2proto.DecodeFrame(buf[:n])
		if err != nil {
			h.t.Errorf("host sent an undecodable frame %x: %v", buf[:n], err)
			continue
		}
		if f.Message != nil && len(f.Message.Acks) > 0 {
			h.acks <- f.Message.Acks
			continue
		}
		h.regs <- f
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func (h *harness) nextReg() l2proto.Frame {
	h.t.Helper()
	select {
	case f := <-h.regs:
		return f
	case <-time.After(wait):
		h.t.Fatal("no registration or zone query")
		return l2proto.Frame{}
	}
}

// expectRegs takes the next frames from the host's announcer and checks
// their kinds: 'L' an LLDPDU, 'Q' a zone query.
func (h *harness) expectRegs(kinds string) []l2proto.Frame {
	h.t.Helper()
	var fs []l2proto.Frame
	for _, k := range kinds {
		f := h.nextReg()
		fs = append(fs, f)
		switch {
		case k == 'L' && f.LLDP != nil:
		case k == 'Q' && f.Message != nil && len(f.Message.Queries) == 1:
		default:
			h.t.Fatalf("frame %d: %+v, want %c", len(fs), f, k)
		}
	}
	return fs
}

func (h *harness) send(ns ...l2proto.Notification) {
	h.t.Helper()
	fr, err := l2proto.MessageFrame(swMAC, &l2proto.Message{Version: l2proto.Version1, Notifications: ns})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.sw.WriteFrame(fr); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) expectAck() []l2proto.Ack {
	h.t.Helper()
	select {
	case a := <-h.acks:
		return a
	case <-time.After(wait):
		h.t.Fatal("no ACK")
		return nil
	}
}

// notify sends one notification and checks its ACK.
func (h *harness) notify(n l2proto.Notification) {
	h.t.Helper()
	h.send(n)
	if a := h.expectAck(); len(a) != 1 || a[0].Key() != n.Key() {
		h.t.Fatalf("ACK %+v for %+v", a, n)
	}
}

// setCarrier changes carrier as the kernel would.
func (h *harness) setCarrier(up bool) {
	if h.carrier.Swap(up) != up {
		h.changes.Add(1)
	}
}

// waitCarrier waits until the agent has read carrier value v.
func (h *harness) waitCarrier(v bool) {
	h.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case got := <-h.reads:
			if got == v {
				return
			}
		case <-deadline:
			h.t.Fatalf("agent never read carrier %v", v)
		}
	}
}

func note(target string, seq uint32, st inof.State, r inof.Reason, nqn string) l2proto.Notification {
	return l2proto.Notification{Target: netip.MustParseAddr(target), Host: hostIP, Seq: seq, State: st, Reason: r,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: nqn}
}

func active(target string, seq uint32) l2proto.Notification {
	return note(target, seq, inof.StateActive, inof.ReasonNone, subNQN)
}

func inactive(target string, seq uint32, r inof.Reason) l2proto.Notification {
	return note(target, seq, inof.StateInactive, r, subNQN)
}

// metric returns the value of a counter or gauge with exactly these labels
// (0 if the series does not exist).
func (h *harness) metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	fams, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
