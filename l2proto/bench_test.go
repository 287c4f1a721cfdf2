package l2proto

import (
	"testing"

	"github.com/openinof/inof/inof"
)

func benchFrames(b *testing.B) (lldp, notify, ack, query []byte) {
	regs := readPcap(b, "host-register.pcap")
	act := readPcap(b, "notify-active.pcap")
	return regs[0].data, act[0].data, act[1].data, regs[1].data
}

func BenchmarkDecode(b *testing.B) {
	lldp, notify, ack, query := benchFrames(b)
	for _, c := range []struct {
		name  string
		frame []byte
	}{{"lldp", lldp}, {"notify", notify}, {"ack", ack}, {"query", query}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			for b.Loop() {
				if _, err := DecodeFrame(c.frame); err != nil {
					b.Fatal(err)
				}
			}
		})
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
