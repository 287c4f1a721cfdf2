package l2proto

import (
	"bytes"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/openinof/inof/inof"
)

// hostileNQNs are NQNs a device may send and the decoders must refuse.
var hostileNQNs = []string{
	"nqn.2014-08.org.example:a\xff\xfe",
	"nqn.2014-08.org.example:t,nr_io_queues=1,queue_size=2",
	"nqn.2014-08.org.example:\x1b[2J\x1b]0;owned\x07",
	"nqn.2014-08.org.example:a b",
}

// hostileFrame encodes with a placeholder NQN of nqn's length (the
// encoders refuse hostile NQNs) and puts nqn in its place: what a device
// that does not use our encoders sends.
func hostileFrame(nqn string, encode func(placeholder string) ([]byte, error)) ([]byte, error) {
	ph := []byte(strings.Repeat("Z", len(nqn)))
	b, err := encode(string(ph))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndex(b, ph)
	if i < 0 {
		return nil, fmt.Errorf("placeholder not in the encoding")
	}
	copy(b[i:], nqn)
	return b, nil
}

// seedHostile adds registrations and notifications carrying hostileNQNs
// (frames if frames, else payloads; LLDP if lldp, else 0x88A7).
func seedHostile(f *testing.F, frames, lldp bool) {
	src := []byte{2, 0, 0, 0, 0, 1}
	for _, nqn := range hostileNQNs {
		b, err := hostileFrame(nqn, func(ph string) ([]byte, error) {
			reg := &Registration{Version: RegistrationVer, Addr: netip.MustParseAddr("192.0.2.9"), Role: inof.RoleTarget,
				Protocol: inof.ProtocolTCP, ProtoVer: ProtocolVersion1, Port: 4420, NQN: ph}
			l := &LLDPDU{ChassisSubtype: ChassisIDMAC, ChassisID: src, PortSubtype: PortIDIfaceName, PortID: []byte("p"),
				TTL: RegistrationTTL, Registration: reg}
			m := &Message{Version: Version1, Notifications: []Notification{{Target: netip.MustParseAddr("192.0.2.9"),
				Host: netip.MustParseAddr("192.0.2.1"), State: inof.StateActive, Reason: 1, Role: inof.RoleTarget,
				Protocol: inof.ProtocolTCP, Port: 4420, NQN: ph}}}
			switch {
			case lldp && frames:
				return LLDPFrame(src, l)
			case lldp:
				return l.MarshalBinary()
			case frames:
				return MessageFrame(src, m)
			}
			return m.MarshalBinary()
		})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// checkNQNs fails unless every NQN in fr passes inof.ValidateWireNQN.
func checkNQNs(t *testing.T, l *LLDPDU, m *Message) {
	t.Helper()
	if l != nil && l.Registration != nil && l.Registration.NQN != "" {
		if err := inof.ValidateWireNQN(l.Registration.NQN); err != nil {
			t.Fatalf("decoded a registration with %v", err)
		}
	}
	if m != nil {
		for _, n := range m.Notifications {
			if n.NQN != "" {
				if err := inof.ValidateWireNQN(n.NQN); err != nil {
					t.Fatalf("decoded a notification with %v", err)
				}
			}
		}
	}
}

// seedCaptures adds every captured frame (or its payload) to the corpus.
func seedCaptures(f *testing.F, payloadOnly bool) {
	for _, file := range []string{"host-register.pcap", "notify-variants.pcap", "notify-cancel-port0.pcap", "emu-session.pcap"} {
		for _, fr := range readPcap(f, file) {
			if payloadOnly {
				f.Add(fr.data[ethHeaderLen:])
			} else {
				f.Add(fr.data)
			}
		}
	}
}

// FuzzDecodeFrame: any input decodes or errors without panicking, and what
// decodes re-encodes to something that decodes to the same values.
func FuzzDecodeFrame(f *testing.F) {
	seedCaptures(f, false)
	seedHostile(f, true, true)
	seedHostile(f, true, false)
	dirty := readPcap(f, "notify-active.pcap")[0].data
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		// A reused Decoder (here: after a notification) agrees with
		// DecodeFrame on every input.
		var dec Decoder
		dec.Decode(dirty)
		if got, gerr := dec.Decode(b); fmt.Sprint(gerr) != fmt.Sprint(err) || !sameFrame(got, fr) {
			t.Fatalf("Decoder %+v, %v; DecodeFrame %+v, %v", got, gerr, fr, err)
		}
		checkNQNs(t, fr.LLDP, fr.Message)
		if err != nil {
			if DropReason(err) == "other" {
				t.Fatalf("error without drop reason: %v", err)
			}
			if fr.Message == nil {
				return
			}
		}
		var enc []byte
		switch {
		case fr.LLDP != nil:
			enc, err = LLDPFrame(fr.Source, fr.LLDP)
		case fr.Message != nil:
			enc, err = MessageFrame(fr.Source, fr.Message)
		default:
			t.Fatal("decoded frame with neither LLDP nor message")
		}
		if err != nil {
			t.Fatalf("re-encode %+v: %v", fr, err)
		}
		again, err := DecodeFrame(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded frame: %v", err)
		}
		if !reflect.DeepEqual(again, fr) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, fr)
		}
	})
}

// FuzzMessage round-trips 0x88A7 payloads, including partly valid ones.
func FuzzMessage(f *testing.F) {
	seedCaptures(f, true)
	seedHostile(f, false, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Message
		err := m.UnmarshalBinary(b)
		checkNQNs(t, nil, &m)
		if len(m.Notifications)+len(m.Acks)+len(m.Queries) == 0 {
			if err == nil {
				t.Fatal("no TLVs and no error")
			}
			return
		}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m, err)
		}
		var again Message
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("decode of re-encoded message: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, m)
		}
	})
}

// FuzzLLDP round-trips LLDPDUs.
func FuzzLLDP(f *testing.F) {
	for _, fr := range readPcap(f, "host-register.pcap") {
		if fr.data[12] == 0x88 && fr.data[13] == 0xcc {
			f.Add(fr.data[ethHeaderLen:])
		}
	}
	seedHostile(f, false, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		var l LLDPDU
		if err := l.UnmarshalBinary(b); err != nil {
			return
		}
		checkNQNs(t, &l, nil)
		enc, err := l.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode %+v: %v", l, err)
		}
		var again LLDPDU
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("decode of re-encoded LLDPDU: %v", err)
		}
		if !reflect.DeepEqual(again, l) {
			t.Fatalf("round trip\n got %+v\nwant %+v", again, l)
		}
	})
}
