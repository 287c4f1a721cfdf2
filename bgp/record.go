package bgp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/openinof/inof/inof"
)

// MaxRecordSize bounds key + value + 8 bytes per route target of one record.
// GoBGP v3 sends one NLRI per UPDATE and has no extended messages (4096
// bytes); after the BGP header and the attributes a reflector adds, ~3.9 KB
// are left. A larger record would be dropped silently by GoBGP, so it is
// refused here with ErrTooLarge.
const MaxRecordSize = 3900

// RecordType is the first byte of every key and the second of every value.
type RecordType uint8

// Record types.
const (
	TypeDevice RecordType = 1 // a device a switch sees on an access port
	TypeConfig RecordType = 2 // a configuration object a reflector holds
)

const valueVersion = 1

// Codec errors.
var (
	ErrTooLarge  = errors.New("record too large")
	ErrMalformed = errors.New("malformed record")
)

// Record is one NoF record: a canonical key and a versioned value.
type Record interface {
	// Key returns the canonical NLRI key: the type and the identity.
	Key() []byte
	// MarshalValue encodes the value.
	MarshalValue() ([]byte, error)
}

// DeviceRecord is published by the switch that sees a device on one of its
// access ports (draft-lin-idr-bgp-nof-nlri "Device Discovery"). The key is
// (switch, address): two switches that see one device publish two records.
type DeviceRecord struct {
	Switch     uint32 // router-id of the originating switch
	Device     inof.Device
	State      inof.State
	Reason     inof.Reason // why the state last changed
	AccessPort string      // switch interface the device is on
	Since      time.Time   // first registration (millisecond precision)
	Changed    time.Time   // last state change (millisecond precision)
}

// ConfigRecord carries one configuration object (zone, alias, settings,
// lossless profile) as re-originated by one reflector. The payload is opaque
// here; Version and Deleted let readers pick the newest copy per object
// across reflectors and keep deletions as tombstones.
type ConfigRecord struct {
	Reflector uint32 // router-id of the reflector originating this copy
	Kind      uint8  // object kind, owned by the payload's package
	Name      string // object name (empty for singletons)
	Gen       uint64 // object generation (hybrid logical clock)
	Writer    uint32 // router-id of the reflector that wrote this version
	Deleted   bool
	Payload   []byte
}

// ConfigObject identifies an object regardless of the reflector copy.
type ConfigObject struct {
	Kind uint8
	Name string
}

// Object returns the object the record describes.
func (c *ConfigRecord) Object() ConfigObject { return ConfigObject{c.Kind, c.Name} }

// Newer reports whether c's version is above o's: generation, then writer.
func (c *ConfigRecord) Newer(o *ConfigRecord) bool {
	if c.Gen != o.Gen {
		return c.Gen > o.Gen
	}
	return c.Writer > o.Writer
}

// Key implements Record: type(1) switch(4) family(1: 4|6) address(4|16).
func (d *DeviceRecord) Key() []byte {
	k := binary.BigEndian.AppendUint32([]byte{byte(TypeDevice)}, d.Switch)
	return appendAddr(k, d.Device.Addr)
}

func appendAddr(b []byte, a netip.Addr) []byte {
	if a.Is4() {
		a4 := a.As4()
		return append(append(b, 4), a4[:]...)
	}
	a16 := a.As16()
	return append(append(b, 6), a16[:]...)
}

// MarshalValue implements Record:
// version(1)=1 type(1)=1 role(1) protocol(1) port(2) state(1) reason(1)
// since(8, unix ms) changed(8, unix ms) access_port_len(1) access_port
// nqn_len(1) nqn.
func (d *DeviceRecord) MarshalValue() ([]byte, error) {
	if !d.Device.Addr.IsValid() {
		return nil, fmt.Errorf("%w: device without address", ErrMalformed)
	}
	if len(d.AccessPort) > 255 || len(d.Device.NQN) > 255 {
		return nil, fmt.Errorf("%w: access port or NQN over 255 bytes", ErrTooLarge)
	}
	v := []byte{valueVersion, byte(TypeDevice), byte(d.Device.Role), byte(d.Device.Protocol)}
	v = binary.BigEndian.AppendUint16(v, d.Device.Port)
	v = append(v, byte(d.State), byte(d.Reason))
	v = binary.BigEndian.AppendUint64(v, uint64(d.Since.UnixMilli()))
	v = binary.BigEndian.AppendUint64(v, uint64(d.Changed.UnixMilli()))
	v = append(append(v, byte(len(d.AccessPort))), d.AccessPort...)
	return append(append(v, byte(len(d.Device.NQN))), d.Device.NQN...), nil
}

// Key implements Record: type(1) reflector(4) kind(1) name_len(1) name.
func (c *ConfigRecord) Key() []byte {
	k := binary.BigEndian.AppendUint32([]byte{byte(TypeConfig)}, c.Reflector)
	return append(append(append(k, c.Kind), byte(len(c.Name))), c.Name...)
}

// MarshalValue implements Record: version(1)=1 type(1)=2 flags(1: bit0
// deleted) gen(8) writer(4) payload_len(2) payload.
func (c *ConfigRecord) MarshalValue() ([]byte, error) {
	if len(c.Name) > 255 {
		return nil, fmt.Errorf("%w: name of %d bytes", ErrTooLarge, len(c.Name))
	}
	if len(c.Payload) > MaxRecordSize {
		return nil, fmt.Errorf("%w: payload of %d bytes", ErrTooLarge, len(c.Payload))
	}
	var flags byte
	if c.Deleted {
		flags = 1
	}
	v := []byte{valueVersion, byte(TypeConfig), flags}
	v = binary.BigEndian.AppendUint64(v, c.Gen)
	v = binary.BigEndian.AppendUint32(v, c.Writer)
	v = binary.BigEndian.AppendUint16(v, uint16(len(c.Payload)))
	return append(v, c.Payload...), nil
}

// EncodeRecord returns key and value and checks the size limit with rts
// route targets attached.
func EncodeRecord(r Record, rts int) (key, value []byte, err error) {
	key = r.Key()
	if value, err = r.MarshalValue(); err != nil {
		return nil, nil, err
	}
	if n := len(key) + len(value) + 8*rts; n > MaxRecordSize {
		return nil, nil, fmt.Errorf("%w: %d bytes with %d route targets (limit %d)", ErrTooLarge, n, rts, MaxRecordSize)
	}
	return key, value, nil
}

// DecodeRecord decodes a record received in an opaque NLRI. Every error
// wraps ErrMalformed.
func DecodeRecord(key, value []byte) (Record, error) {
	if len(key) == 0 || len(value) < 2 {
		return nil, fmt.Errorf("%w: key %d bytes, value %d bytes", ErrMalformed, len(key), len(value))
	}
	if value[0] != valueVersion {
		return nil, fmt.Errorf("%w: value version %d", ErrMalformed, value[0])
	}
	if RecordType(key[0]) != RecordType(value[1]) {
		return nil, fmt.Errorf("%w: key type %d, value type %d", ErrMalformed, key[0], value[1])
	}
	var r Record
	var err error
	switch RecordType(key[0]) {
	case TypeDevice:
		r, err = decodeDevice(key, value)
	case TypeConfig:
		r, err = decodeConfig(key, value)
	default:
		return nil, fmt.Errorf("%w: type %d", ErrMalformed, key[0])
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(r.Key(), key) {
		return nil, fmt.Errorf("%w: key not canonical", ErrMalformed)
	}
	return r, nil
}

// reader reads big-endian fields and remembers a short read.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) next(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8   { return r.next(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.next(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.next(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.next(8)) }
func (r *reader) str() string { return string(r.next(int(r.u8()))) }

func (r *reader) done(what string) error {
	if r.bad {
		return fmt.Errorf("%w: %s truncated", ErrMalformed, what)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %s has %d trailing bytes", ErrMalformed, what, len(r.b))
	}
	return nil
}

func decodeDevice(key, value []byte) (*DeviceRecord, error) {
	k := reader{b: key[1:]}
	d := &DeviceRecord{Switch: k.u32()}
	switch fam := k.u8(); fam {
	case 4:
		d.Device.Addr = netip.AddrFrom4([4]byte(k.next(4)))
	case 6:
		d.Device.Addr = netip.AddrFrom16([16]byte(k.next(16)))
	default:
		return nil, fmt.Errorf("%w: address family %d", ErrMalformed, fam)
	}
	if err := k.done("device key"); err != nil {
		return nil, err
	}
	v := reader{b: value[2:]}
	d.Device.Role, d.Device.Protocol = inof.Role(v.u8()), inof.Protocol(v.u8())
	d.Device.Port = v.u16()
	d.State, d.Reason = inof.State(v.u8()), inof.Reason(v.u8())
	d.Since = time.UnixMilli(int64(v.u64()))
	d.Changed = time.UnixMilli(int64(v.u64()))
	d.AccessPort = v.str()
	d.Device.NQN = v.str()
	if err := v.done("device value"); err != nil {
		return nil, err
	}
	switch {
	case !d.Device.Addr.IsValid() || d.Device.Addr.IsUnspecified() || d.Device.Addr.IsMulticast():
		return nil, fmt.Errorf("%w: device address %s", ErrMalformed, d.Device.Addr)
	case !d.Device.Role.Valid():
		return nil, fmt.Errorf("%w: role %d", ErrMalformed, d.Device.Role)
	case !d.Device.Protocol.Valid():
		return nil, fmt.Errorf("%w: protocol %d", ErrMalformed, d.Device.Protocol)
	case d.State > inof.StateActive:
		return nil, fmt.Errorf("%w: state %d", ErrMalformed, d.State)
	case d.Reason > inof.ReasonBFDDown:
		return nil, fmt.Errorf("%w: reason %d", ErrMalformed, d.Reason)
	}
	return d, nil
}

func decodeConfig(key, value []byte) (*ConfigRecord, error) {
	c, err := decodeConfigKey(key)
	if err != nil {
		return nil, err
	}
	v := reader{b: value[2:]}
	flags := v.u8()
	if flags&^1 != 0 {
		return nil, fmt.Errorf("%w: config flags %#x", ErrMalformed, flags)
	}
	c.Deleted = flags&1 != 0
	c.Gen, c.Writer = v.u64(), v.u32()
	c.Payload = bytes.Clone(v.next(int(v.u16())))
	if err := v.done("config value"); err != nil {
		return nil, err
	}
	return c, nil
}
