package l2proto

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/openinof/inof/inof"
)

// LLDP TLV types used here (IEEE 802.1AB).
const (
	lldpEnd       = 0
	lldpChassisID = 1
	lldpPortID    = 2
	lldpTTL       = 3
	lldpOrg       = 127
)

// Registration org TLV identity: Huawei OUI 00-18-82, subtype 101.
var regOUI = [3]byte{0x00, 0x18, 0x82}

const (
	regSubtype = 101
	// regFixedLen is the org TLV value length without the NQN (OUI through
	// the NQN length byte).
	regFixedLen = 31
	// maxNQNLen fits an NQN in the 9-bit LLDP TLV length (511 − 31) and
	// above NVMe's 223-byte NQN limit.
	maxNQNLen = 255
)

// Chassis and port ID subtypes used by nvme-snsd.
const (
	ChassisIDMAC     = 4 // chassis ID subtype: MAC address
	PortIDIfaceName  = 5 // port ID subtype: interface name
	RegistrationTTL  = 120
	FlagSubscribe    = 0x80 // service flag: subscribe to state-change notifications
	addrTypeIPv4     = 1
	addrTypeIPv6     = 2
	RegistrationVer  = 1
	ProtocolVersion1 = 0x0101 // "NVMe-oF 1.1", what snsd sends
)

// LLDPDU is an LLDP data unit as nvme-snsd sends it: chassis ID, port ID,
// TTL and the registration org TLV. Other TLVs are skipped on decode.
type LLDPDU struct {
	ChassisSubtype uint8
	ChassisID      []byte
	PortSubtype    uint8
	PortID         []byte
	TTL            uint16 // seconds; 0 means "forget me now"
	Registration   *Registration
}

// Registration is the value of the org TLV (00-18-82, subtype 101): who the
// device is and what it offers.
type Registration struct {
	Version  uint8 // 1
	Flags    uint8 // service flags, high nibble of byte 5 (FlagSubscribe)
	Addr     netip.Addr
	Role     inof.Role
	Protocol inof.Protocol
	ProtoVer uint16 // 0x0101
	Port     uint16 // NVMe-oF service id; 0 if not configured
	NQN      string
}

// Device returns the vocabulary form of the registration.
func (r *Registration) Device() inof.Device {
	return inof.Device{Addr: r.Addr, Role: r.Role, Protocol: r.Protocol, Port: r.Port, NQN: r.NQN}
}

// MarshalBinary encodes the LLDPDU: chassis ID, port ID, TTL, the
// registration TLV if set, End.
func (l *LLDPDU) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 64+len(l.PortID))
	var err error
	if b, err = appendLLDPTLV(b, lldpChassisID, append([]byte{l.ChassisSubtype}, l.ChassisID...)); err != nil {
		return nil, err
	}
	if b, err = appendLLDPTLV(b, lldpPortID, append([]byte{l.PortSubtype}, l.PortID...)); err != nil {
		return nil, err
	}
	if b, err = appendLLDPTLV(b, lldpTTL, binary.BigEndian.AppendUint16(nil, l.TTL)); err != nil {
		return nil, err
	}
	if l.Registration != nil {
		v, err := l.Registration.MarshalBinary()
		if err != nil {
			return nil, err
		}
		if b, err = appendLLDPTLV(b, lldpOrg, v); err != nil {
			return nil, err
		}
	}
	return append(b, 0, 0), nil
}

func appendLLDPTLV(b []byte, typ uint8, v []byte) ([]byte, error) {
	if len(v) > 511 {
		return nil, fmt.Errorf("%w: LLDP TLV %d of %d bytes", ErrLength, typ, len(v))
	}
	return append(binary.BigEndian.AppendUint16(b, uint16(typ)<<9|uint16(len(v))), v...), nil
}

// UnmarshalBinary decodes an LLDPDU (the Ethernet payload). The first three
// TLVs must be chassis ID, port ID and TTL, as IEEE 802.1AB requires; then
// TLVs up to End (or the end of the buffer, for padded frames) are read and
// all but the registration TLV are skipped. A malformed registration TLV is
// an error, not a skip.
func (l *LLDPDU) UnmarshalBinary(b []byte) error {
	*l = LLDPDU{}
	return l.decode(b, nil)
}

// decode reads an LLDPDU into l, which the caller has reset. With a Decoder,
// the IDs alias b and the registration is the Decoder's (see Decoder);
// without one (nil), l owns copies.
func (l *LLDPDU) decode(b []byte, d *Decoder) error {
	i := 0
	for ; len(b) > 0; i++ {
		if len(b) < 2 {
			return fmt.Errorf("%w: truncated TLV header", ErrLLDP)
		}
		h := binary.BigEndian.Uint16(b)
		typ, n := uint8(h>>9), int(h&0x1FF)
		if len(b) < 2+n {
			return fmt.Errorf("%w: TLV %d length %d beyond %d bytes", ErrLLDP, typ, n, len(b)-2)
		}
		v := b[2 : 2+n]
		b = b[2+n:]
		want := [...]uint8{lldpChassisID, lldpPortID, lldpTTL}
		if i < len(want) && typ != want[i] {
			return fmt.Errorf("%w: TLV %d where %d is required", ErrLLDP, typ, want[i])
		}
		switch typ {
		case lldpEnd:
			return nil
		case lldpChassisID, lldpPortID:
			if n < 2 || n > 256 {
				return fmt.Errorf("%w: ID TLV %d of length %d", ErrLLDP, typ, n)
			}
			id := v[1:n:n]
			if d == nil {
				id = bytes.Clone(id)
			}
			if typ == lldpChassisID {
				l.ChassisSubtype, l.ChassisID = v[0], id
			} else {
				l.PortSubtype, l.PortID = v[0], id
			}
		case lldpTTL:
			if n < 2 {
				return fmt.Errorf("%w: TTL TLV of length %d", ErrLLDP, n)
			}
			l.TTL = binary.BigEndian.Uint16(v)
		case lldpOrg:
			if n < 4 || [3]byte(v[0:3]) != regOUI || v[3] != regSubtype {
				continue
			}
			r := d.registration()
			if err := r.decode(v, d.nameCache()); err != nil {
				return err
			}
			l.Registration = r
		}
	}
	if i < 3 {
		return fmt.Errorf("%w: missing mandatory TLVs", ErrLLDP)
	}
	return nil
}

// MarshalBinary encodes the org TLV value (OUI through NQN).
func (r *Registration) MarshalBinary() ([]byte, error) {
	var at uint8
	switch {
	case r.Addr.Is4():
		at = addrTypeIPv4
	case r.Addr.Is6():
		at = addrTypeIPv6
	default:
		return nil, fmt.Errorf("%w: registration without address", ErrValue)
	}
	if len(r.NQN) > maxNQNLen {
		return nil, fmt.Errorf("%w: NQN of %d bytes (max %d)", ErrValue, len(r.NQN), maxNQNLen)
	}
	if r.NQN != "" {
		if err := inof.ValidateWireNQN(r.NQN); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrValue, err)
		}
	}
	b := make([]byte, regFixedLen, regFixedLen+len(r.NQN))
	copy(b[0:3], regOUI[:])
	b[3] = regSubtype
	b[4] = r.Version
	b[5] = r.Flags&0xF0 | at
	a16 := r.Addr.As16()
	if r.Addr.Is4() {
		a4 := r.Addr.As4()
		a16 = [16]byte{}
		copy(a16[:], a4[:])
	}
	copy(b[8:24], a16[:])
	b[24] = uint8(r.Role)
	b[25] = uint8(r.Protocol)
	binary.BigEndian.PutUint16(b[26:], r.ProtoVer)
	binary.BigEndian.PutUint16(b[28:], r.Port)
	b[30] = uint8(len(r.NQN))
	return append(b, r.NQN...), nil
}

// UnmarshalBinary decodes the org TLV value (starting at the OUI).
func (r *Registration) UnmarshalBinary(v []byte) error { return r.decode(v, nil) }

// decode is UnmarshalBinary taking the NQN from names (nil: a new string).
func (r *Registration) decode(v []byte, names *nameCache) error {
	if len(v) < regFixedLen {
		return fmt.Errorf("%w: registration TLV of %d bytes, need %d", ErrLength, len(v), regFixedLen)
	}
	if [3]byte(v[0:3]) != regOUI || v[3] != regSubtype {
		return fmt.Errorf("%w: not a registration TLV", ErrValue)
	}
	*r = Registration{Version: v[4], Flags: v[5] & 0xF0, ProtoVer: binary.BigEndian.Uint16(v[26:]),
		Port: binary.BigEndian.Uint16(v[28:]), Role: inof.Role(v[24]), Protocol: inof.Protocol(v[25])}
	switch v[5] & 0x0F {
	case addrTypeIPv4:
		r.Addr = netip.AddrFrom4([4]byte(v[8:12]))
	case addrTypeIPv6:
		r.Addr = netip.AddrFrom16([16]byte(v[8:24]))
	default:
		return fmt.Errorf("%w: address type %d", ErrValue, v[5]&0x0F)
	}
	if !r.Addr.IsValid() || r.Addr.IsUnspecified() || r.Addr.IsMulticast() {
		return fmt.Errorf("%w: registration address %s", ErrValue, r.Addr)
	}
	if !r.Role.Valid() {
		return fmt.Errorf("%w: role %d", ErrValue, v[24])
	}
	if !r.Protocol.Valid() {
		return fmt.Errorf("%w: protocol %d", ErrValue, v[25])
	}
	n := int(v[30])
	if len(v) < regFixedLen+n {
		return fmt.Errorf("%w: NQN length %d beyond TLV", ErrLength, n)
	}
	r.NQN = names.str(v[regFixedLen : regFixedLen+n])
	if r.NQN != "" {
		if err := inof.ValidateWireNQN(r.NQN); err != nil {
			r.NQN = ""
			return fmt.Errorf("registration: %w", err)
		}
	}
	return nil
}
