package l2proto

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// benchFrame is one captured frame of each kind nvme-snsd exchanges.
type benchFrame struct {
	name  string
	frame []byte
}

func benchFrames(tb testing.TB) []benchFrame {
	regs := readPcap(tb, "host-register.pcap")
	act := readPcap(tb, "notify-active.pcap")
	return []benchFrame{{"lldp", regs[0].data}, {"notify", act[0].data}, {"ack", act[1].data}, {"query", regs[1].data}}
}

// reportPerFrame adds ns/frame (one frame per iteration) next to ns/op.
func reportPerFrame(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
}

// BenchmarkDecode is the receive-path decode: a reused Decoder.
func BenchmarkDecode(b *testing.B) {
	for _, c := range benchFrames(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			var dec Decoder
			for b.Loop() {
				if _, err := dec.Decode(c.frame); err != nil {
					b.Fatal(err)
				}
			}
			reportPerFrame(b)
		})
	}
}

// BenchmarkDecodeFrame is the owning decode (every result a fresh copy).
func BenchmarkDecodeFrame(b *testing.B) {
	for _, c := range benchFrames(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			for b.Loop() {
				if _, err := DecodeFrame(c.frame); err != nil {
					b.Fatal(err)
				}
			}
			reportPerFrame(b)
		})
	}
}

// newBenchPort is a switch port whose registry already holds the captured
// host (so an LLDPDU is the periodic refresh) and whose notifier has nothing
// in flight (so an ACK is counted stale).
func newBenchPort(tb testing.TB) *SwitchPort {
	// Limits out of reach: the benchmarks measure the receive path, not
	// the drops a flood costs (TestPortRateLimits covers those).
	unlimited := Rate{PerSecond: 1 << 30, Burst: 1 << 30}
	return newTestPort(tb, SwitchPortConfig{OnQuery: func(string, ZoneQuery) {},
		Limits: PortLimits{Registrations: unlimited, Queries: unlimited}})
}

// newTestPort is a switch port "sw1" on an in-memory link, with a fresh
// registry and notifier, and cfg's other fields (a discarding logger if
// none).
func newTestPort(tb testing.TB, cfg SwitchPortConfig) *SwitchPort {
	reg, err := NewRegistry(RegistryConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	sw, _ := NewMemPair("sw1", switchMAC, "host", hostMAC)
	nt, err := NewNotifier(NotifierConfig{Link: sw})
	if err != nil {
		tb.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Link, cfg.Registry, cfg.Notifier = sw, reg, nt
	p, err := NewSwitchPort(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkReceive is a switch port's whole receive path after the socket
// read: decode, then registry refresh (LLDP), notifier (ACK) or the query
// callback.
func BenchmarkReceive(b *testing.B) {
	p := newBenchPort(b)
	now := time.Now()
	for _, c := range benchFrames(b) {
		if c.name == "notify" {
			continue // hosts send no notifications; see BenchmarkDecode
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			dec := new(Decoder)
			for b.Loop() {
				p.handle(dec, "sw1", c.frame, now)
			}
			reportPerFrame(b)
		})
	}
	if st := p.cfg.Registry.Stats(); st.Entries != 1 {
		b.Fatalf("registry has %d entries, want the captured host", st.Entries)
	}
}

func BenchmarkEncode(b *testing.B) {
	n := Notification{Target: targetIP, Host: hostIP, Seq: 1, State: inof.StateActive, Role: inof.RoleTarget,
		Protocol: inof.ProtocolRoCE, Port: 4420, NQN: interopNQN}
	l := lldpFor(hostIP, "snsd_veth-h_01", 120, inof.RoleHost)
	msgs := []struct {
		name string
		m    *Message
	}{
		{"notify", &Message{Version: Version1, Notifications: []Notification{n}}},
		{"ack", &Message{Version: Version1, Acks: []Ack{{Target: targetIP, Host: hostIP, Seq: 1}}}},
		{"query", &Message{Version: Version1, Queries: []ZoneQuery{{Host: hostIP}}}},
	}
	b.Run("lldp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LLDPFrame(hostMAC, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range msgs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MessageFrame(switchMAC, c.m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
