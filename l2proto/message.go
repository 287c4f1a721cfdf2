package l2proto

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/openinof/inof/inof"
)

// 0x88A7 header: version(1) reserved(1) tlv_len(2) reserved(4).
const msgHeaderLen = 8

// Header versions. Version 0 (nvme-snsd's develop branch) carries state and
// reason in one byte each; version 1 in four bytes, big-endian.
const (
	Version0 = 0
	Version1 = 1
)

// Root TLV types: the "structured" flag 0x20 | the message kind.
const (
	rootStructured = 0x20
	RootNotify     = rootStructured | 1
	RootAck        = rootStructured | 2
	RootZoneQuery  = rootStructured | 3
	rootTypeMask   = 0x3F // bits 6-7 are ignored on receive
)

// Sub-TLV types.
const (
	subSrcIPv4 = 1 // target address
	subDstIPv4 = 2 // host address
	subSrcIPv6 = 3
	subDstIPv6 = 4
	subSeq     = 5
	subState   = 6
	subReason  = 7
	subInfo    = 8
)

// Completeness bitmaps nvme-snsd requires for a notify (bit t-1 per sub-TLV
// type t with the required length).
const (
	completeIPv4 = 0xF3 // {1,2,5,6,7,8}
	completeIPv6 = 0xFC // {3,4,5,6,7,8}
	ackIPv4      = 0x13 // {1,2,5}
	ackIPv6      = 0x1C // {3,4,5}
)

const (
	tlvHeaderLen = 3
	infoFixedLen = 7   // role, protocol, reserved(2), port(2), nqn_len
	maxInfoLen   = 262 // the largest additional-info value snsd accepts
	// queryFrameLen is the payload length of nvme-snsd's zone query frame.
	queryFrameLen = msgHeaderLen + tlvHeaderLen + tlvHeaderLen + 16
)

// Message is the payload of one 0x88A7 frame: several root TLVs of the
// three kinds. Encoding writes notifications, then ACKs, then queries.
type Message struct {
	Version       uint8
	Notifications []Notification
	Acks          []Ack
	Queries       []ZoneQuery
}

// Notification tells a host that a target became active or inactive.
type Notification struct {
	Target   netip.Addr // sub-TLV 1/3: becomes nvme's traddr
	Host     netip.Addr // sub-TLV 2/4: becomes host_traddr; must be the host's registered address
	Seq      uint32     // sub-TLV 5: opaque to the host, echoed in the ACK
	State    inof.State
	Reason   inof.Reason
	Role     inof.Role     // the target's role
	Protocol inof.Protocol // the target's service protocol
	Port     uint16        // the target's service id; 0 means the default (4420)
	NQN      string        // the target's NQN; nvme-snsd ignores it
}

// Ack acknowledges one notification: it echoes target, host and sequence.
type Ack struct {
	Target netip.Addr
	Host   netip.Addr
	Seq    uint32
}

// AckKey is how a sender matches an ACK to what it sent.
type AckKey struct {
	Target, Host netip.Addr
	Seq          uint32
}

// Key returns the ACK that acknowledges n.
func (n *Notification) Key() AckKey { return AckKey{n.Target, n.Host, n.Seq} }

// Key returns the matching key of the ACK.
func (a *Ack) Key() AckKey { return AckKey{a.Target, a.Host, a.Seq} }

// ZoneQuery asks the switch for every target the host may see.
type ZoneQuery struct {
	Host netip.Addr
}

// notificationLen is the encoded root TLV size (header included) of n.
func notificationLen(n *Notification, version uint8) int {
	al := 4
	if n.Target.Is6() {
		al = 16
	}
	sl := 4
	if version == Version0 {
		sl = 1
	}
	return tlvHeaderLen + 2*(tlvHeaderLen+al) + (tlvHeaderLen + 4) + 2*(tlvHeaderLen+sl) + tlvHeaderLen + infoFixedLen + len(n.NQN)
}

// MaxNotificationsLen is the number of payload bytes (header included) that
// a message with the given notifications occupies; callers pack frames with it.
func MaxNotificationsLen(version uint8, ns []Notification) int {
	l := msgHeaderLen
	for i := range ns {
		l += notificationLen(&ns[i], version)
	}
	return l
}

// MarshalBinary encodes the message. Addresses of one notification or ACK
// must both be IPv4 or both IPv6.
func (m *Message) MarshalBinary() ([]byte, error) {
	if m.Version > Version1 {
		return nil, fmt.Errorf("%w: %d", ErrVersion, m.Version)
	}
	b := make([]byte, msgHeaderLen, MaxNotificationsLen(m.Version, m.Notifications)+len(m.Acks)*48+len(m.Queries)*22)
	b[0] = m.Version
	var err error
	for i := range m.Notifications {
		if b, err = m.Notifications[i].append(b, m.Version); err != nil {
			return nil, fmt.Errorf("notification %d: %w", i, err)
		}
	}
	for i := range m.Acks {
		if b, err = m.Acks[i].append(b); err != nil {
			return nil, fmt.Errorf("ack %d: %w", i, err)
		}
	}
	for i := range m.Queries {
		if b, err = m.Queries[i].append(b); err != nil {
			return nil, fmt.Errorf("query %d: %w", i, err)
		}
	}
	tl := len(b) - msgHeaderLen
	if tl == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrNoTLV)
	}
	if tl > 0xFFFF {
		return nil, fmt.Errorf("%w: %d bytes of TLVs", ErrTooLong, tl)
	}
	binary.BigEndian.PutUint16(b[2:4], uint16(tl))
	if len(m.Notifications) == 0 && len(m.Acks) == 0 && len(m.Queries) == 1 && len(b) < queryFrameLen {
		// nvme-snsd's query struct always reserves room for an IPv6
		// address; the zero padding beyond tlv_len is part of its frame.
		b = append(b, make([]byte, queryFrameLen-len(b))...)
	}
	return b, nil
}

func addrPair(target, host netip.Addr) (t, h uint8, err error) {
	switch {
	case target.Is4() && host.Is4():
		return subSrcIPv4, subDstIPv4, nil
	case target.Is6() && !target.Is4In6() && host.Is6() && !host.Is4In6():
		return subSrcIPv6, subDstIPv6, nil
	}
	return 0, 0, fmt.Errorf("%w: target %s and host %s must both be IPv4 or both IPv6", ErrValue, target, host)
}

// beginRoot appends a root TLV header with a zero length and returns where
// the length goes; endRoot fills it in.
func beginRoot(b []byte, typ uint8) ([]byte, int) {
	return append(b, typ, 0, 0), len(b) + 1
}

func endRoot(b []byte, at int) {
	binary.BigEndian.PutUint16(b[at:], uint16(len(b)-at-2))
}

func appendSub(b []byte, typ uint8, v ...byte) []byte {
	return append(binary.BigEndian.AppendUint16(append(b, typ), uint16(len(v))), v...)
}

func appendAddr(b []byte, typ uint8, a netip.Addr) []byte {
	if a.Is4() {
		a4 := a.As4()
		return appendSub(b, typ, a4[:]...)
	}
	a16 := a.As16()
	return appendSub(b, typ, a16[:]...)
}

func appendSmall(b []byte, typ uint8, v uint8, version uint8) []byte {
	if version == Version0 {
		return appendSub(b, typ, v)
	}
	return appendSub(b, typ, 0, 0, 0, v)
}

// checkNotifyNQN refuses an NQN a notification cannot carry: too long for
// sub-TLV 8, or one a receiver would refuse (inof.ValidateWireNQN): a
// switch never tells a host what the host must not act on.
func checkNotifyNQN(nqn string) error {
	if infoFixedLen+len(nqn) > maxInfoLen {
		return fmt.Errorf("%w: NQN of %d bytes", ErrValue, len(nqn))
	}
	if nqn != "" {
		if err := inof.ValidateWireNQN(nqn); err != nil {
			return fmt.Errorf("%w: %w", ErrValue, err)
		}
	}
	return nil
}

func (n *Notification) append(b []byte, version uint8) ([]byte, error) {
	ts, hs, err := addrPair(n.Target, n.Host)
	if err != nil {
		return nil, err
	}
	if err := checkNotifyNQN(n.NQN); err != nil {
		return nil, err
	}
	b, at := beginRoot(b, RootNotify)
	b = appendAddr(b, ts, n.Target)
	b = appendAddr(b, hs, n.Host)
	b = appendSub(b, subSeq, byte(n.Seq>>24), byte(n.Seq>>16), byte(n.Seq>>8), byte(n.Seq))
	b = appendSmall(b, subState, uint8(n.State), version)
	b = appendSmall(b, subReason, uint8(n.Reason), version)
	b = append(b, subInfo)
	b = binary.BigEndian.AppendUint16(b, uint16(infoFixedLen+len(n.NQN)))
	b = append(b, uint8(n.Role), uint8(n.Protocol), 0, 0, byte(n.Port>>8), byte(n.Port), uint8(len(n.NQN)))
	b = append(b, n.NQN...)
	endRoot(b, at)
	return b, nil
}

func (a *Ack) append(b []byte) ([]byte, error) {
	ts, hs, err := addrPair(a.Target, a.Host)
	if err != nil {
		return nil, err
	}
	b, at := beginRoot(b, RootAck)
	b = appendAddr(b, ts, a.Target)
	b = appendAddr(b, hs, a.Host)
	b = appendSub(b, subSeq, byte(a.Seq>>24), byte(a.Seq>>16), byte(a.Seq>>8), byte(a.Seq))
	endRoot(b, at)
	return b, nil
}

func (q *ZoneQuery) append(b []byte) ([]byte, error) {
	typ := uint8(subDstIPv4)
	switch {
	case q.Host.Is4():
	case q.Host.Is6():
		typ = subDstIPv6
	default:
		return nil, fmt.Errorf("%w: zone query without host address", ErrValue)
	}
	b, at := beginRoot(b, RootZoneQuery)
	b = appendAddr(b, typ, q.Host)
	endRoot(b, at)
	return b, nil
}

// UnmarshalBinary decodes a 0x88A7 payload (after the Ethernet header) with
// nvme-snsd's rules: version ≤ 1; tlv_len non-zero and within the buffer
// (trailing padding allowed); root TLVs are read until the first one of an
// unknown kind; a notify must carry exactly the complete sub-TLV set with the
// lengths of its header version; unknown sub-TLVs are ignored; a repeated
// sub-TLV overwrites the earlier one. A message with no valid root TLV is an
// error; with some valid and some invalid ones, the valid ones are returned
// and the error reports the first invalid one.
func (m *Message) UnmarshalBinary(b []byte) error {
	*m = Message{}
	return m.decode(b, nil)
}

// decode is UnmarshalBinary appending to m's slices, which the caller has
// emptied, and taking NQNs from names (nil: new strings).
func (m *Message) decode(b []byte, names *nameCache) error {
	if len(b) < msgHeaderLen {
		return fmt.Errorf("%w: 0x88A7 payload of %d bytes", ErrShort, len(b))
	}
	m.Version = b[0]
	if m.Version > Version1 {
		return fmt.Errorf("%w: %d", ErrVersion, m.Version)
	}
	tl := int(binary.BigEndian.Uint16(b[2:4]))
	if tl == 0 || tl > len(b)-msgHeaderLen {
		return fmt.Errorf("%w: tlv_len %d with %d bytes after the header", ErrLength, tl, len(b)-msgHeaderLen)
	}
	b = b[msgHeaderLen : msgHeaderLen+tl]
	var firstErr error
	for len(b) > 0 {
		if len(b) < tlvHeaderLen {
			firstErr = keepFirst(firstErr, fmt.Errorf("%w: truncated root TLV header", ErrLength))
			break
		}
		typ, n := b[0]&rootTypeMask, int(binary.BigEndian.Uint16(b[1:3]))
		if len(b) < tlvHeaderLen+n {
			firstErr = keepFirst(firstErr, fmt.Errorf("%w: root TLV %#02x length %d beyond %d bytes", ErrLength, typ, n, len(b)-tlvHeaderLen))
			break
		}
		v := b[tlvHeaderLen : tlvHeaderLen+n]
		b = b[tlvHeaderLen+n:]
		var err error
		switch typ {
		case RootNotify:
			var x Notification
			if err = x.decode(v, m.Version, names); err == nil {
				m.Notifications = append(m.Notifications, x)
			}
		case RootAck:
			var x Ack
			if err = x.decode(v); err == nil {
				m.Acks = append(m.Acks, x)
			}
		case RootZoneQuery:
			var x ZoneQuery
			if err = x.decode(v); err == nil {
				m.Queries = append(m.Queries, x)
			}
		default:
			firstErr = keepFirst(firstErr, fmt.Errorf("%w: unknown root TLV type %#02x", ErrNoTLV, typ))
			b = nil
		}
		firstErr = keepFirst(firstErr, err)
	}
	if len(m.Notifications)+len(m.Acks)+len(m.Queries) == 0 {
		if firstErr == nil {
			firstErr = ErrNoTLV
		}
		return firstErr
	}
	return firstErr
}

func keepFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// subTLVs walks sub-TLVs, calling fn for each; a sub-TLV that runs past the
// end of the value is an error.
func subTLVs(v []byte, fn func(typ uint8, val []byte)) error {
	for len(v) > 0 {
		if len(v) < tlvHeaderLen {
			return fmt.Errorf("%w: truncated sub-TLV header", ErrLength)
		}
		typ, n := v[0], int(binary.BigEndian.Uint16(v[1:3]))
		if len(v) < tlvHeaderLen+n {
			return fmt.Errorf("%w: sub-TLV %d length %d beyond %d bytes", ErrLength, typ, n, len(v)-tlvHeaderLen)
		}
		fn(typ, v[tlvHeaderLen:tlvHeaderLen+n])
		v = v[tlvHeaderLen+n:]
	}
	return nil
}

// addrSub decodes the address sub-TLVs 1-4 if val has the required length
// and returns the completeness bit it earns (0 if it earns none).
func addrSub(typ uint8, val []byte, target, host *netip.Addr) uint32 {
	switch {
	case (typ == subSrcIPv4 || typ == subDstIPv4) && len(val) == 4:
		a := netip.AddrFrom4([4]byte(val))
		if typ == subSrcIPv4 {
			*target = a
		} else {
			*host = a
		}
	case (typ == subSrcIPv6 || typ == subDstIPv6) && len(val) == 16:
		a := netip.AddrFrom16([16]byte(val))
		if typ == subSrcIPv6 {
			*target = a
		} else {
			*host = a
		}
	default:
		return 0
	}
	return 1 << (typ - 1)
}

func (n *Notification) decode(v []byte, version uint8, names *nameCache) error {
	*n = Notification{}
	smallLen := 4
	if version == Version0 {
		smallLen = 1
	}
	var bits uint32
	var infoErr error
	err := subTLVs(v, func(typ uint8, val []byte) {
		if bit := addrSub(typ, val, &n.Target, &n.Host); bit != 0 {
			bits |= bit
			return
		}
		switch {
		case typ == subSeq && len(val) == 4:
			n.Seq = binary.BigEndian.Uint32(val)
		case (typ == subState || typ == subReason) && len(val) == smallLen:
			// Only the low byte is evaluated, as in snsd.
			if typ == subState {
				n.State = inof.State(val[smallLen-1])
			} else {
				n.Reason = inof.Reason(val[smallLen-1])
			}
		case typ == subInfo && len(val) <= maxInfoLen:
			if ierr := n.decodeInfo(val, names); ierr != nil {
				infoErr = ierr
				return
			}
		default:
			return // unknown type or wrong length: skipped, earns no bit
		}
		bits |= 1 << (typ - 1)
	})
	if err != nil {
		return err
	}
	if infoErr != nil {
		return infoErr
	}
	if bits != completeIPv4 && bits != completeIPv6 {
		return fmt.Errorf("%w: notify sub-TLV bitmap %#02x", ErrIncomplete, bits)
	}
	return nil
}

// decodeInfo reads sub-TLV 8; missing trailing fields read as zero, and the
// NQN ends at the first NUL or the end of the value (its length byte is not
// used, as in snsd). An NQN that fails inof.ValidateWireNQN is an error
// (wrapping inof.ErrText): the notification is refused whole.
func (n *Notification) decodeInfo(v []byte, names *nameCache) error {
	var fixed [infoFixedLen]byte
	copy(fixed[:], v)
	n.Role, n.Protocol = inof.Role(fixed[0]), inof.Protocol(fixed[1])
	n.Port = binary.BigEndian.Uint16(fixed[4:6])
	if len(v) > infoFixedLen {
		nqn := v[infoFixedLen:]
		for i, c := range nqn {
			if c == 0 {
				nqn = nqn[:i]
				break
			}
		}
		n.NQN = names.str(nqn)
		if n.NQN != "" {
			if err := inof.ValidateWireNQN(n.NQN); err != nil {
				n.NQN = ""
				return fmt.Errorf("notification: %w", err)
			}
		}
	}
	return nil
}

func (a *Ack) decode(v []byte) error {
	*a = Ack{}
	var bits uint32
	err := subTLVs(v, func(typ uint8, val []byte) {
		if bit := addrSub(typ, val, &a.Target, &a.Host); bit != 0 {
			bits |= bit
		} else if typ == subSeq && len(val) == 4 {
			a.Seq = binary.BigEndian.Uint32(val)
			bits |= 1 << (subSeq - 1)
		}
	})
	if err != nil {
		return err
	}
	if bits != ackIPv4 && bits != ackIPv6 {
		return fmt.Errorf("%w: ACK sub-TLV bitmap %#02x", ErrIncomplete, bits)
	}
	return nil
}

func (q *ZoneQuery) decode(v []byte) error {
	*q = ZoneQuery{}
	var unused netip.Addr
	var bits uint32
	err := subTLVs(v, func(typ uint8, val []byte) {
		if typ == subDstIPv4 || typ == subDstIPv6 {
			bits |= addrSub(typ, val, &unused, &q.Host)
		}
	})
	if err != nil {
		return err
	}
	if bits == 0 || !q.Host.IsValid() {
		return fmt.Errorf("%w: zone query without host address", ErrIncomplete)
	}
	return nil
}
