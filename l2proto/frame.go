package l2proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/mdlayher/ethernet"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/reason"
)

// EtherTypes of the protocol.
const (
	EtherTypeLLDP   ethernet.EtherType = 0x88CC // registration (host → switch)
	EtherTypeNotify ethernet.EtherType = 0x88A7 // notify, ACK, zone query
)

// Group addresses. Both are IEEE 802.1 link-local: a bridge does not forward
// them, so the protocol is always one hop.
var (
	// GroupNotify is the destination of every 0x88A7 frame. nvme-snsd drops
	// notifications sent to any other address, its own unicast MAC included.
	GroupNotify = net.HardwareAddr{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0D}
	// GroupLLDP is the nearest-bridge LLDP address nvme-snsd registers to.
	GroupLLDP = net.HardwareAddr{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E}
)

const (
	ethHeaderLen = 14
	// MaxFrameLen is the largest untagged frame without FCS at MTU 1500.
	MaxFrameLen = 1514
)

// Sentinel errors. Every decode error wraps exactly one of them, so a
// receiver can count drops per reason with errors.Is (see DropReason).
var (
	ErrShort        = errors.New("frame too short")
	ErrTooLong      = errors.New("frame too long")
	ErrDestination  = errors.New("wrong destination MAC")
	ErrEtherType    = errors.New("wrong EtherType")
	ErrVLANTagged   = errors.New("VLAN-tagged frame")
	ErrVersion      = errors.New("unsupported header version")
	ErrLength       = errors.New("bad length field")
	ErrIncomplete   = errors.New("incomplete TLV set")
	ErrNoTLV        = errors.New("no usable root TLV")
	ErrValue        = errors.New("invalid field value")
	ErrLLDP         = errors.New("malformed LLDPDU")
	ErrNoRegistered = errors.New("LLDPDU without registration TLV")
)

// DropReason maps a decode error, or a registration the Registry refused, to
// a short, stable label for counters and logs ("short", "version", ...,
// "port-full", "table-full"). Errors not from this package map to "other".
func DropReason(err error) string { return dropReasons.Of(err) }

var dropReasons = reason.Table{
	{Err: ErrShort, Name: "short"},
	{Err: ErrTooLong, Name: "too-long"},
	{Err: ErrDestination, Name: "destination"},
	{Err: ErrEtherType, Name: "ethertype"},
	{Err: ErrVLANTagged, Name: "vlan-tagged"},
	{Err: ErrVersion, Name: "version"},
	{Err: ErrLength, Name: "length"},
	{Err: ErrIncomplete, Name: "incomplete"},
	{Err: ErrNoTLV, Name: "no-tlv"},
	{Err: inof.ErrText, Name: "text"},
	{Err: ErrValue, Name: "value"},
	{Err: ErrLLDP, Name: "lldp"},
	{Err: ErrNoRegistered, Name: "not-registration"},
	{Err: ErrPortFull, Name: "port-full"},
	{Err: ErrTableFull, Name: "table-full"},
	{Err: ErrMACBound, Name: "mac-bound"},
	{Err: ErrRateRegistrations, Name: "rate-registrations"},
	{Err: ErrRateQueries, Name: "rate-queries"},
}

// DropReasons lists every label DropReason returns, with "unexpected" (a
// well-formed frame a receiver has no use for), so that counters can show
// every reason from the start.
func DropReasons() []string { return dropReasons.Names("unexpected") }

// Frame is one decoded frame of the protocol: exactly one of LLDP and
// Message is set. A Frame from DecodeFrame owns its memory; one from a
// Decoder borrows it (see Decoder).
type Frame struct {
	Source  net.HardwareAddr
	LLDP    *LLDPDU
	Message *Message
}

// DecodeFrame decodes a whole untagged Ethernet frame (no FCS). LLDP frames
// must go to GroupLLDP and carry the registration TLV; 0x88A7 frames must go
// to GroupNotify, as nvme-snsd requires. A 0x88A7 message with some valid and
// some invalid root TLVs returns both the frame (valid TLVs only) and an error.
//
// The frame it returns owns all its memory (nothing aliases b). A receive
// loop should use a Decoder instead, which allocates nothing per frame.
func DecodeFrame(b []byte) (Frame, error) { return decodeFrame(b, nil) }

// decodeFrame decodes b into storage d owns, with views over b, or (d nil)
// into fresh copies.
func decodeFrame(b []byte, d *Decoder) (Frame, error) {
	if len(b) < ethHeaderLen {
		return Frame{}, fmt.Errorf("%w: %d bytes", ErrShort, len(b))
	}
	if len(b) > MaxFrameLen {
		return Frame{}, fmt.Errorf("%w: %d bytes", ErrTooLong, len(b))
	}
	dst, src := net.HardwareAddr(b[0:6]), net.HardwareAddr(b[6:12:12])
	et := ethernet.EtherType(binary.BigEndian.Uint16(b[12:14]))
	if et == ethernet.EtherTypeVLAN || et == ethernet.EtherTypeServiceVLAN {
		return Frame{}, ErrVLANTagged
	}
	payload := b[ethHeaderLen:]
	var f Frame
	if d == nil {
		f.Source = bytes.Clone(src)
	} else {
		f.Source = src
	}
	switch et {
	case EtherTypeLLDP:
		if !bytes.Equal(dst, GroupLLDP) {
			return Frame{}, fmt.Errorf("%w: LLDP to %s", ErrDestination, dst)
		}
		l := d.lldpDU()
		if err := l.decode(payload, d); err != nil {
			return Frame{}, err
		}
		if l.Registration == nil {
			return Frame{}, ErrNoRegistered
		}
		f.LLDP = l
	case EtherTypeNotify:
		if !bytes.Equal(dst, GroupNotify) {
			return Frame{}, fmt.Errorf("%w: 0x88A7 to %s", ErrDestination, dst)
		}
		m := d.message()
		err := m.decode(payload, d.nameCache())
		if len(m.Notifications)+len(m.Acks)+len(m.Queries) == 0 {
			return Frame{}, err
		}
		// Partly valid: the valid root TLVs count (as in snsd), and the
		// error reports the first invalid one.
		f.Message = m
		return f, err
	default:
		return Frame{}, fmt.Errorf("%w: %#04x", ErrEtherType, uint16(et))
	}
	return f, nil
}

// EncodeFrame returns the untagged Ethernet frame dst|src|type|payload
// without padding (the NIC pads short frames; nvme-snsd sends them unpadded
// on veth as well).
func EncodeFrame(dst, src net.HardwareAddr, et ethernet.EtherType, payload []byte) []byte {
	b := make([]byte, ethHeaderLen, ethHeaderLen+len(payload))
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:14], uint16(et))
	return append(b, payload...)
}

// LLDPFrame encodes l as a frame to GroupLLDP from src.
func LLDPFrame(src net.HardwareAddr, l *LLDPDU) ([]byte, error) {
	p, err := l.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return EncodeFrame(GroupLLDP, src, EtherTypeLLDP, p), nil
}

// MessageFrame encodes m as a frame to GroupNotify from src.
func MessageFrame(src net.HardwareAddr, m *Message) ([]byte, error) {
	p, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if ethHeaderLen+len(p) > MaxFrameLen {
		return nil, fmt.Errorf("%w: message of %d bytes exceeds one frame", ErrTooLong, len(p))
	}
	return EncodeFrame(GroupNotify, src, EtherTypeNotify, p), nil
}
