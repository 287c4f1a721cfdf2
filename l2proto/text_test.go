package l2proto

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/openinof/inof/inof"
)

// TestHostileNQNRefused: a registration or notification whose NQN is not
// valid UTF-8, holds connect-option separators or control characters is
// refused whole, under the drop reason "text", by DecodeFrame and by a
// Decoder, and its NQN is never returned.
func TestHostileNQNRefused(t *testing.T) {
	src := []byte{2, 0, 0, 0, 0, 1}
	for _, nqn := range hostileNQNs {
		reg := &Registration{Version: RegistrationVer, Addr: netip.MustParseAddr("192.0.2.9"), Role: inof.RoleTarget,
			Protocol: inof.ProtocolTCP, ProtoVer: ProtocolVersion1, Port: 4420, NQN: nqn}
		n := Notification{Target: netip.MustParseAddr("192.0.2.9"), Host: netip.MustParseAddr("192.0.2.1"),
			State: inof.StateActive, Reason: 1, Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: nqn}
		// Our encoders and the notifier refuse to send it.
		if _, err := reg.MarshalBinary(); !errors.Is(err, inof.ErrText) {
			t.Errorf("NQN %q: registration encoded (%v)", nqn, err)
		}
		if _, err := (&Message{Version: Version1, Notifications: []Notification{n}}).MarshalBinary(); !errors.Is(err, inof.ErrText) {
			t.Errorf("NQN %q: notification encoded (%v)", nqn, err)
		}
		lf, err := hostileFrame(nqn, func(ph string) ([]byte, error) {
			r := *reg
			r.NQN = ph
			return LLDPFrame(src, &LLDPDU{ChassisSubtype: ChassisIDMAC, ChassisID: src, PortSubtype: PortIDIfaceName,
				PortID: []byte("p"), TTL: RegistrationTTL, Registration: &r})
		})
		if err != nil {
			t.Fatal(err)
		}
		mf, err := hostileFrame(nqn, func(ph string) ([]byte, error) {
			x := n
			x.NQN = ph
			return MessageFrame(src, &Message{Version: Version1, Notifications: []Notification{x}})
		})
		if err != nil {
			t.Fatal(err)
		}
		var dec Decoder
		for _, b := range [][]byte{lf, mf} {
			for _, decode := range []func([]byte) (Frame, error){DecodeFrame, dec.Decode} {
				fr, err := decode(b)
				if !errors.Is(err, inof.ErrText) || DropReason(err) != "text" {
					t.Errorf("NQN %q: err %v (reason %q), want a text drop", nqn, err, DropReason(err))
				}
				if fr.LLDP != nil && fr.LLDP.Registration != nil || fr.Message != nil && len(fr.Message.Notifications) > 0 {
					t.Errorf("NQN %q: decoded %+v", nqn, fr)
				}
			}
		}
	}
	// The same frame with a sound NQN decodes: the check refuses the NQN,
	// not the frame.
	good := &Registration{Version: RegistrationVer, Addr: netip.MustParseAddr("192.0.2.9"), Role: inof.RoleTarget,
		Protocol: inof.ProtocolTCP, ProtoVer: ProtocolVersion1, Port: 4420, NQN: "nqn.2014-08.org.example:t1"}
	b, err := LLDPFrame(src, &LLDPDU{ChassisSubtype: ChassisIDMAC, ChassisID: src, PortSubtype: PortIDIfaceName,
		PortID: []byte("p"), TTL: RegistrationTTL, Registration: good})
	if err != nil {
		t.Fatal(err)
	}
	if fr, err := DecodeFrame(b); err != nil || fr.LLDP.Registration.NQN != good.NQN {
		t.Errorf("sound registration: %+v, %v", fr, err)
	}
}
