package l2proto

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

var (
	hostMAC   = net.HardwareAddr{0xa6, 0xb9, 0xd7, 0x5d, 0xf8, 0xea}
	switchMAC = net.HardwareAddr{0xd2, 0x16, 0xd4, 0xc1, 0xa6, 0x22}
	hostIP    = netip.MustParseAddr("10.77.0.2")
	targetIP  = netip.MustParseAddr("10.77.0.100")
)

const interopNQN = "nqn.2014-08.org.example:nvme:interop-target"

func mustDecode(t *testing.T, b []byte) Frame {
	t.Helper()
	f, err := DecodeFrame(b)
	if err != nil {
		t.Fatalf("decode %x: %v", b, err)
	}
	return f
}

func TestCaptureRegistration(t *testing.T) {
	frames := readPcap(t, "host-register.pcap")
	f := mustDecode(t, frames[0].data)
	want := &LLDPDU{
		ChassisSubtype: ChassisIDMAC, ChassisID: []byte(hostMAC),
		PortSubtype: PortIDIfaceName, PortID: []byte("snsd_veth-h_01"),
		TTL: 120,
		Registration: &Registration{Version: 1, Flags: FlagSubscribe, Addr: hostIP,
			Role: inof.RoleHost, Protocol: inof.ProtocolRoCE, ProtoVer: ProtocolVersion1},
	}
	if !reflect.DeepEqual(f.LLDP, want) {
		t.Fatalf("LLDP = %+v %+v\nwant %+v %+v", f.LLDP, f.LLDP.Registration, want, want.Registration)
	}
	if !bytes.Equal(f.Source, hostMAC) {
		t.Fatalf("source %s", f.Source)
	}
	enc, err := LLDPFrame(hostMAC, want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, frames[0].data) {
		t.Fatalf("LLDP re-encode\n got %x\nwant %x", enc, frames[0].data)
	}

	q := mustDecode(t, frames[1].data)
	if q.Message == nil || len(q.Message.Queries) != 1 || q.Message.Queries[0].Host != hostIP {
		t.Fatalf("zone query = %+v", q.Message)
	}
	enc, err = MessageFrame(hostMAC, &Message{Version: Version1, Queries: []ZoneQuery{{Host: hostIP}}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, frames[1].data) {
		t.Fatalf("query re-encode\n got %x\nwant %x", enc, frames[1].data)
	}
}

// TestCaptureNotifyAck checks the named notify/ACK exchanges: the values the
// fact sheet states, and byte-for-byte re-encoding of both directions.
func TestCaptureNotifyAck(t *testing.T) {
	cases := []struct {
		file    string
		version uint8
		want    Notification
	}{
		{"notify-active.pcap", Version1, Notification{Target: targetIP, Host: hostIP, Seq: 0x1001,
			State: inof.StateActive, Reason: inof.ReasonLinkDown, Role: inof.RoleTarget,
			Protocol: inof.ProtocolRoCE, Port: 4420, NQN: interopNQN}},
		{"notify-cancel-port0.pcap", Version0, Notification{Target: targetIP, Host: hostIP, Seq: 0x200d,
			State: inof.StateInactive, Reason: inof.ReasonLinkDown, Role: inof.RoleTarget,
			Protocol: inof.ProtocolRoCE, Port: 0, NQN: interopNQN}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			frames := readPcap(t, c.file)
			var notify, ack []byte
			for _, fr := range frames {
				f := mustDecode(t, fr.data)
				switch {
				case f.Message != nil && len(f.Message.Notifications) > 0:
					notify = fr.data
				case f.Message != nil && len(f.Message.Acks) > 0:
					ack = fr.data
				}
			}
			if notify == nil || ack == nil {
				t.Fatalf("capture lacks notify (%v) or ACK (%v)", notify != nil, ack != nil)
			}
			m := mustDecode(t, notify).Message
			if m.Version != c.version || len(m.Notifications) != 1 || m.Notifications[0] != c.want {
				t.Fatalf("notify = v%d %+v\nwant v%d %+v", m.Version, m.Notifications, c.version, c.want)
			}
			enc, err := MessageFrame(switchMAC, &Message{Version: c.version, Notifications: []Notification{c.want}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, notify) {
				t.Fatalf("notify re-encode\n got %x\nwant %x", enc, notify)
			}
			a := mustDecode(t, ack).Message
			wantAck := Ack{Target: targetIP, Host: hostIP, Seq: c.want.Seq}
			if len(a.Acks) != 1 || a.Acks[0] != wantAck || a.Acks[0].Key() != c.want.Key() {
				t.Fatalf("ack = %+v, want %+v", a.Acks, wantAck)
			}
			enc, err = MessageFrame(hostMAC, &Message{Version: Version1, Acks: []Ack{wantAck}})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, ack) {
				t.Fatalf("ACK re-encode\n got %x\nwant %x", enc, ack)
			}
		})
	}
}

// TestCaptureAcceptance replays every notification the switch side sent in
// the captures and checks that our decoder accepts exactly those nvme-snsd
// ACKed: a switch that only sends what DecodeFrame accepts is always heard.
// Frames snsd dropped for host-side reasons (flood guard, foreign host IP) are
// told apart as the fact sheet describes. Every captured ACK must also be the
// one our encoder produces for the notification it answers.
func TestCaptureAcceptance(t *testing.T) {
	files := []string{"notify-active.pcap", "notify-inactive.pcap", "notify-cancel-port0.pcap",
		"notify-variants.pcap", "emu-session.pcap", "session-all.pcap", "emu-restrain5.pcap",
		"tcp-config-no-lldp.pcap"}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			frames := readPcap(t, file)
			var checked, acked int
			for i, fr := range frames {
				if bytes.Equal(fr.data[6:12], hostMAC) {
					f, err := DecodeFrame(fr.data)
					if err != nil {
						t.Errorf("frame %d from host does not decode: %v", i, err)
					}
					if f.LLDP != nil && f.LLDP.Registration.Addr != hostIP {
						t.Errorf("frame %d registers %s", i, f.LLDP.Registration.Addr)
					}
					continue
				}
				checked++
				f, err := DecodeFrame(fr.data)
				accept := err == nil && f.Message != nil && len(f.Message.Notifications) > 0
				if accept {
					// snsd's host-IP check: the host only owns 10.77.0.2.
					for _, n := range f.Message.Notifications {
						if n.Host != hostIP {
							accept = false
						}
					}
				}
				ack := ackAfter(frames, i)
				if ack != nil {
					acked++
				}
				if accept && ack == nil && !floodDropped(frames, i) && !tcpConfigRun(fr.data) {
					t.Errorf("frame %d accepted by us but not ACKed by snsd: %x", i, fr.data)
				}
				if !accept && ack != nil {
					t.Errorf("frame %d rejected by us (%v) but ACKed by snsd: %x", i, err, fr.data)
				}
				if accept && ack != nil {
					var want Message
					want.Version = Version1
					for _, n := range f.Message.Notifications {
						want.Acks = append(want.Acks, Ack{Target: n.Target, Host: n.Host, Seq: n.Seq})
					}
					enc, err := MessageFrame(hostMAC, &want)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(enc, ack) {
						t.Errorf("frame %d: ACK\n got %x\nwant %x", i, enc, ack)
					}
				}
			}
			if checked == 0 {
				t.Fatal("no switch frames in capture")
			}
			t.Logf("%d switch frames, %d ACKed", checked, acked)
		})
	}
}

// tcpConfigRun reports whether frame is the notification of the lab run in
// which snsd was configured for TCP (tcp-config-no-lldp.pcap, sequence
// 0x3001): no port was registered, so nothing was ACKed (fact sheet §9).
func tcpConfigRun(frame []byte) bool {
	f, err := DecodeFrame(frame)
	return err == nil && f.Message != nil && len(f.Message.Notifications) == 1 && f.Message.Notifications[0].Seq == 0x3001
}

// ackAfter returns the host's ACK frame answering frame i: the next frame from
// the host within 50 ms that carries ACKs.
func ackAfter(frames []captured, i int) []byte {
	for _, fr := range frames[i+1:] {
		if fr.at.Sub(frames[i].at) > 50*time.Millisecond {
			return nil
		}
		if !bytes.Equal(fr.data[6:12], hostMAC) {
			continue
		}
		if f, err := DecodeFrame(fr.data); err == nil && f.Message != nil && len(f.Message.Acks) > 0 {
			return fr.data
		}
	}
	return nil
}

// floodDropped reports whether snsd's flood guard was active at frame i: at
// least 500 frames within the preceding 500 ms, or such a burst less than
// 11 s before (it leaves drop mode after about 10.5 s).
func floodDropped(frames []captured, i int) bool {
	at := frames[i].at
	for j := range frames[:i+1] {
		if at.Sub(frames[j].at) > 11*time.Second {
			continue
		}
		n := 0
		for k := j; k <= i && frames[k].at.Sub(frames[j].at) <= 500*time.Millisecond; k++ {
			n++
		}
		if n >= 500 {
			return true
		}
	}
	return false
}

func TestMessageErrors(t *testing.T) {
	valid, err := (&Message{Version: Version1, Notifications: []Notification{{Target: targetIP, Host: hostIP,
		Seq: 7, State: inof.StateActive, Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}}}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"short", valid[:5], ErrShort},
		{"version 2", mut(func(b []byte) []byte { b[0] = 2; return b }), ErrVersion},
		{"tlv_len 0", mut(func(b []byte) []byte { b[2], b[3] = 0, 0; return b }), ErrLength},
		{"tlv_len overrun", mut(func(b []byte) []byte { b[3]++; return b }), ErrLength},
		{"root overrun", mut(func(b []byte) []byte { b[10]++; return append(b, 0) }), ErrLength},
		{"unknown root", mut(func(b []byte) []byte { b[8] = 0x25; return b }), ErrNoTLV},
		{"state 1 byte in v1", mut(func(b []byte) []byte {
			b[0] = Version0 // v0 wants 1-byte state/reason; the frame has 4-byte ones
			return b
		}), ErrIncomplete},
		{"truncated sub-TLV", mut(func(b []byte) []byte {
			b[3] -= 2
			b[10] -= 2
			return b[:len(b)-2]
		}), ErrLength},
	}
	for _, c := range cases {
		var m Message
		err := m.UnmarshalBinary(c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if DropReason(err) == "other" {
			t.Errorf("%s: error %v has no drop reason", c.name, err)
		}
	}
}

func TestFrameErrors(t *testing.T) {
	good, err := MessageFrame(switchMAC, &Message{Version: Version1, Acks: []Ack{{Target: targetIP, Host: hostIP, Seq: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	unicast := bytes.Clone(good)
	copy(unicast, hostMAC)
	tagged := append(append(bytes.Clone(good[:12]), 0x81, 0x00, 0x00, 0x0a), good[12:]...)
	otherType := bytes.Clone(good)
	otherType[12], otherType[13] = 0x08, 0x00
	lldpNoReg, _ := LLDPFrame(hostMAC, &LLDPDU{ChassisSubtype: 4, ChassisID: hostMAC, PortSubtype: 5, PortID: []byte("x"), TTL: 120})
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"short", good[:10], ErrShort},
		{"too long", make([]byte, 1515), ErrTooLong},
		{"unicast destination", unicast, ErrDestination},
		{"vlan", tagged, ErrVLANTagged},
		{"ethertype", otherType, ErrEtherType},
		{"lldp without registration", lldpNoReg, ErrNoRegistered},
	}
	for _, c := range cases {
		if _, err := DecodeFrame(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	v6 := netip.MustParseAddr("fd00::1")
	if _, err := (&Message{Version: 1, Acks: []Ack{{Target: v6, Host: hostIP}}}).MarshalBinary(); !errors.Is(err, ErrValue) {
		t.Errorf("mixed families: %v", err)
	}
	if _, err := (&Message{Version: 1}).MarshalBinary(); !errors.Is(err, ErrNoTLV) {
		t.Errorf("empty: %v", err)
	}
	if _, err := (&Message{Version: 2, Queries: []ZoneQuery{{Host: hostIP}}}).MarshalBinary(); !errors.Is(err, ErrVersion) {
		t.Errorf("version: %v", err)
	}
	long := make([]byte, 300)
	if _, err := (&Message{Version: 1, Notifications: []Notification{{Target: targetIP, Host: hostIP, NQN: string(long)}}}).MarshalBinary(); !errors.Is(err, ErrValue) {
		t.Errorf("long NQN: %v", err)
	}
	if _, err := (&Registration{Addr: hostIP, NQN: string(long)}).MarshalBinary(); !errors.Is(err, ErrValue) {
		t.Errorf("long registration NQN: %v", err)
	}
}

func TestIPv6RoundTrip(t *testing.T) {
	m := Message{Version: Version1,
		Notifications: []Notification{
			{Target: netip.MustParseAddr("fd00::64"), Host: netip.MustParseAddr("fd00::2"), Seq: 9,
				State: inof.StateInactive, Reason: inof.ReasonBFDDown, Role: inof.RoleBoth, Protocol: inof.ProtocolTCP, Port: 8009, NQN: "nqn.x"},
			{Target: targetIP, Host: hostIP, Seq: 10, State: inof.StateActive, Role: inof.RoleTarget, Protocol: inof.ProtocolRoCE},
		},
		Acks:    []Ack{{Target: netip.MustParseAddr("fd00::64"), Host: netip.MustParseAddr("fd00::2"), Seq: 3}},
		Queries: []ZoneQuery{{Host: netip.MustParseAddr("fd00::2")}},
	}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got, m)
	}
	reg := &LLDPDU{ChassisSubtype: 4, ChassisID: hostMAC, PortSubtype: 5, PortID: []byte("eth0"), TTL: 120,
		Registration: &Registration{Version: 1, Flags: FlagSubscribe, Addr: netip.MustParseAddr("fd00::2"),
			Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, ProtoVer: ProtocolVersion1, Port: 4420, NQN: "nqn.2014-08.org.example:t1"}}
	lb, err := reg.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var gotL LLDPDU
	if err := gotL.UnmarshalBinary(lb); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&gotL, reg) {
		t.Fatalf("LLDP round trip\n got %+v %+v\nwant %+v %+v", gotL, gotL.Registration, reg, reg.Registration)
	}
}

// TestNotificationLen keeps the packing arithmetic honest against the
// encoder: for both header versions and address families, any NQN length
// the encoder takes, and several notifications in one message,
// MaxNotificationsLen is exactly the encoded payload length.
func TestNotificationLen(t *testing.T) {
	v6t, v6h := netip.MustParseAddr("fd00::64"), netip.MustParseAddr("fd00::2")
	for _, v := range []uint8{Version0, Version1} {
		var ns []Notification
		for nqn := 0; nqn <= min(maxInfoLen-infoFixedLen, inof.MaxNQNLen); nqn += 17 {
			n := Notification{Target: targetIP, Host: hostIP, Seq: uint32(nqn), State: inof.StateActive,
				Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, NQN: strings.Repeat("q", nqn)}
			if nqn%2 == 1 {
				n.Target, n.Host = v6t, v6h
			}
			ns = append(ns, n)
			for _, set := range [][]Notification{{n}, ns} {
				b, err := (&Message{Version: v, Notifications: set}).MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if got := MaxNotificationsLen(v, set); got != len(b) {
					t.Fatalf("v%d, %d notifications (last NQN %d bytes, %s): computed %d, encoded %d",
						v, len(set), nqn, n.Target, got, len(b))
				}
			}
		}
	}
}
