package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/wire"
)

// MaxSize bounds key + value + 8 bytes per route target of one record.
// GoBGP v3 sends one NLRI per UPDATE and has no extended messages (4096
// bytes); after the BGP header and the attributes a reflector adds, ~3.9 KB
// are left. A larger record would be dropped silently by GoBGP, so it is
// refused here with ErrTooLarge.
const MaxSize = 3900

// Type is the first byte of every key and the second of every value.
type Type uint8

// Record types.
const (
	TypeDevice Type = 1 // a device a switch sees on an access port
	TypeConfig Type = 2 // a configuration object a reflector holds
	// TypeDeviceSet carries many devices of one switch that share their
	// route targets (DeviceSet).
	TypeDeviceSet Type = 3
	// TypeSwitch is a switch's announcement of what it reads
	// (Switch); it carries no route target, so only reflectors get
	// it.
	TypeSwitch Type = 4
	// TypeDiscovery is a switch's announcement of its discovery
	// controller (Discovery), for referrals.
	TypeDiscovery Type = 5
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
	// MarshalValue encodes the value; it refuses (with ErrMalformed or
	// ErrTooLarge) exactly what a receiver's Decode would refuse.
	MarshalValue() ([]byte, error)
}

// Device is published by the switch that sees a device on one of its
// access ports (draft-lin-idr-bgp-nof-nlri "Device Discovery"). The key is
// (switch, address, epoch): two switches that see one device publish two
// records, and a switch moves a device to other zones (route targets) under
// a new epoch (see DevicePublisher and DeviceTable).
type Device struct {
	// Report is what the record says: the originating switch, the device,
	// its status, access port and first registration (Changed and Since
	// have millisecond precision on the wire).
	inof.Report
	// Epoch orders the keys one switch used for one address; receivers
	// use the highest epoch present. DevicePublisher assigns it.
	Epoch uint64
}

// DeviceID identifies a device as one switch publishes it, across epochs.
type DeviceID struct {
	Switch inof.RouterID
	Addr   netip.Addr
}

// DeviceKey is the decoded key of a device record.
type DeviceKey struct {
	DeviceID
	Epoch uint64
}

// ID returns the device the record is about.
func (d *Device) ID() DeviceID { return DeviceID{Switch: d.Switch, Addr: d.Device.Addr} }

// Config carries one configuration object (zone, alias, settings,
// lossless profile), or one part of an object too large for one record, as
// re-originated by one reflector. The payload is opaque here; Gen, Writer
// and Deleted are the object's version and deletion flag (the one source of
// both): readers pick the newest copy per object across reflectors and keep
// deletions as tombstones.
type Config struct {
	Reflector inof.RouterID // the reflector originating this copy
	Kind      uint8         // object kind, owned by the payload's package
	Name      string        // object name (empty for singletons), at most 255 bytes
	Part      uint16        // part index of an object split over several records
	Gen       uint64        // object generation (hybrid logical clock)
	Writer    inof.RouterID // the reflector that wrote this version
	Deleted   bool
	Payload   []byte
}

// ConfigObject identifies an object part regardless of the reflector copy.
type ConfigObject struct {
	Kind uint8
	Name string
	Part uint16
}

// Object returns the object part the record describes.
func (c *Config) Object() ConfigObject {
	return ConfigObject{Kind: c.Kind, Name: c.Name, Part: c.Part}
}

// Newer reports whether c's version is above o's: generation, then writer.
func (c *Config) Newer(o *Config) bool {
	if c.Gen != o.Gen {
		return c.Gen > o.Gen
	}
	return c.Writer > o.Writer
}

// Key implements Record: type(1) switch(4) family(1: 4|6) address(4|16)
// epoch(8).
func (d *Device) Key() []byte { return d.appendKey(nil) }

func (d *Device) appendKey(k []byte) []byte {
	k = binary.BigEndian.AppendUint32(append(k, byte(TypeDevice)), uint32(d.Switch))
	return binary.BigEndian.AppendUint64(wire.AppendAddr(k, d.Device.Addr), d.Epoch)
}

// ParseDeviceKey decodes the key of a device record (a withdraw carries
// only the key). Errors wrap ErrMalformed.
func ParseDeviceKey(key []byte) (DeviceKey, error) {
	if len(key) == 0 || Type(key[0]) != TypeDevice {
		return DeviceKey{}, fmt.Errorf("%w: not a device key", ErrMalformed)
	}
	r := wire.NewReader(key[1:])
	k := DeviceKey{DeviceID: DeviceID{Switch: inof.RouterID(r.U32()), Addr: r.Addr()}, Epoch: r.U64()}
	if err := r.Done(); err != nil {
		return DeviceKey{}, fmt.Errorf("%w: device key: %w", ErrMalformed, err)
	}
	if err := checkDeviceAddr(k.Addr); err != nil {
		return DeviceKey{}, err
	}
	return k, nil
}

func checkDeviceAddr(a netip.Addr) error {
	if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() {
		return fmt.Errorf("%w: device address %s", ErrMalformed, a)
	}
	return nil
}

// Validate applies the rules every receiver applies to a device record;
// MarshalValue and Decode both use it, so what one side sends the
// other accepts.
func (d *Device) Validate() error {
	if err := checkDeviceAddr(d.Device.Addr); err != nil {
		return err
	}
	switch {
	case !d.Device.Role.Valid():
		return fmt.Errorf("%w: role %d", ErrMalformed, d.Device.Role)
	case !d.Device.Protocol.Valid():
		return fmt.Errorf("%w: protocol %d", ErrMalformed, d.Device.Protocol)
	case !d.State.Valid():
		return fmt.Errorf("%w: state %d", ErrMalformed, d.State)
	case !d.Reason.Valid():
		return fmt.Errorf("%w: reason %d", ErrMalformed, d.Reason)
	case len(d.AccessPort) > 255 || len(d.Device.NQN) > 255:
		return fmt.Errorf("%w: access port or NQN over 255 bytes", ErrTooLarge)
	}
	// The text rules of the L2 edge (docs/security.md, "Text from
	// devices"): a record from an older release or a foreign speaker
	// carrying an NQN that could add options to a host's connect, or text
	// that could rewrite an admin's terminal, is refused like any
	// malformed record.
	if d.Device.NQN != "" {
		if err := inof.ValidateWireNQN(d.Device.NQN); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	if err := inof.ValidateWireText("access port", d.AccessPort, 255); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// MarshalValue implements Record:
// version(1)=1 type(1)=1 role(1) protocol(1) port(2) state(1) reason(1)
// since(8, unix ms) changed(8, unix ms) access_port_len(1) access_port
// nqn_len(1) nqn.
func (d *Device) MarshalValue() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d.appendBody([]byte{valueVersion, byte(TypeDevice)}), nil
}

// appendBody appends what a device value and a device set entry share:
// role(1) protocol(1) port(2) state(1) reason(1) since(8) changed(8)
// access_port_len(1) access_port nqn_len(1) nqn.
func (d *Device) appendBody(v []byte) []byte {
	v = append(v, byte(d.Device.Role), byte(d.Device.Protocol))
	v = binary.BigEndian.AppendUint16(v, d.Device.Port)
	v = append(v, byte(d.State), byte(d.Reason))
	v = binary.BigEndian.AppendUint64(v, uint64(d.Since.UnixMilli()))
	v = binary.BigEndian.AppendUint64(v, uint64(d.Changed.UnixMilli()))
	v = append(append(v, byte(len(d.AccessPort))), d.AccessPort...)
	return append(append(v, byte(len(d.Device.NQN))), d.Device.NQN...)
}

// Same reports whether d and o encode alike: every field equal, the
// times to the millisecond the wire carries. A table that keeps records
// decoded compares them with it as a compact one compares their bytes.
func (d *Device) Same(o *Device) bool {
	return d.Switch == o.Switch && d.Epoch == o.Epoch && d.Device == o.Device && d.AccessPort == o.AccessPort &&
		d.State == o.State && d.Reason == o.Reason &&
		d.Changed.UnixMilli() == o.Changed.UnixMilli() && d.Since.UnixMilli() == o.Since.UnixMilli()
}

// bodySize is the length of appendBody's output.
func (d *Device) bodySize() int { return 24 + len(d.AccessPort) + len(d.Device.NQN) }

// readBody reads what appendBody wrote (the caller checks r's error).
func (d *Device) readBody(v *wire.Reader) {
	d.Device.Role, d.Device.Protocol = inof.Role(v.U8()), inof.Protocol(v.U8())
	d.Device.Port = v.U16()
	d.State, d.Reason = inof.State(v.U8()), inof.Reason(v.U8())
	d.Since = time.UnixMilli(int64(v.U64()))
	d.Changed = time.UnixMilli(int64(v.U64()))
	d.AccessPort = v.Str()
	d.Device.NQN = v.Str()
}

// Key implements Record: type(1) reflector(4) kind(1) name_len(1) name
// part(2).
func (c *Config) Key() []byte { return c.appendKey(nil) }

func (c *Config) appendKey(k []byte) []byte {
	k = binary.BigEndian.AppendUint32(append(k, byte(TypeConfig)), uint32(c.Reflector))
	k = append(append(append(k, c.Kind), byte(len(c.Name))), c.Name...)
	return binary.BigEndian.AppendUint16(k, c.Part)
}

// Validate applies the rules every receiver applies to a configuration
// record (MarshalValue and Decode both use it).
func (c *Config) Validate() error {
	switch {
	case len(c.Name) > 255:
		return fmt.Errorf("%w: name of %d bytes", ErrTooLarge, len(c.Name))
	case len(c.Payload) > MaxSize:
		return fmt.Errorf("%w: payload of %d bytes", ErrTooLarge, len(c.Payload))
	}
	return nil
}

// MarshalValue implements Record: version(1)=1 type(1)=2 flags(1: bit0
// deleted) gen(8) writer(4) payload_len(2) payload.
func (c *Config) MarshalValue() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var flags byte
	if c.Deleted {
		flags = 1
	}
	v := []byte{valueVersion, byte(TypeConfig), flags}
	v = binary.BigEndian.AppendUint64(v, c.Gen)
	v = binary.BigEndian.AppendUint32(v, uint32(c.Writer))
	v = binary.BigEndian.AppendUint16(v, uint16(len(c.Payload)))
	return append(v, c.Payload...), nil
}

// Encode returns key and value and checks the size limit with rts
// route targets attached.
func Encode(r Record, rts int) (key, value []byte, err error) {
	key = r.Key()
	if value, err = r.MarshalValue(); err != nil {
		return nil, nil, err
	}
	if n := len(key) + len(value) + 8*rts; n > MaxSize {
		return nil, nil, fmt.Errorf("%w: %d bytes with %d route targets (limit %d)", ErrTooLarge, n, rts, MaxSize)
	}
	return key, value, nil
}

// Decode decodes a record received in an opaque NLRI. Every error
// wraps ErrMalformed.
func Decode(key, value []byte) (Record, error) {
	if len(key) == 0 || len(value) < 2 {
		return nil, fmt.Errorf("%w: key %d bytes, value %d bytes", ErrMalformed, len(key), len(value))
	}
	if value[0] != valueVersion {
		return nil, fmt.Errorf("%w: value version %d", ErrMalformed, value[0])
	}
	if Type(key[0]) != Type(value[1]) {
		return nil, fmt.Errorf("%w: key type %d, value type %d", ErrMalformed, key[0], value[1])
	}
	// The canonical key is rebuilt on the stack: this runs for every
	// record received.
	var buf [maxKeySize]byte
	var r Record
	var canon []byte
	switch Type(key[0]) {
	case TypeDevice:
		d, err := decodeDevice(key, value)
		if err != nil {
			return nil, err
		}
		r, canon = d, d.appendKey(buf[:0])
	case TypeConfig:
		c, err := decodeConfig(key, value)
		if err != nil {
			return nil, err
		}
		r, canon = c, c.appendKey(buf[:0])
	case TypeDeviceSet:
		d, err := decodeDeviceSet(key, value)
		if err != nil {
			return nil, err
		}
		r, canon = d, d.appendKey(buf[:0])
	case TypeSwitch:
		d, err := decodeSwitch(key, value)
		if err != nil {
			return nil, err
		}
		r, canon = d, d.appendKey(buf[:0])
	case TypeDiscovery:
		d, err := decodeDiscovery(key, value)
		if err != nil {
			return nil, err
		}
		r, canon = d, d.appendKey(buf[:0])
	default:
		return nil, fmt.Errorf("%w: type %d", ErrMalformed, key[0])
	}
	if !bytes.Equal(canon, key) {
		return nil, fmt.Errorf("%w: key not canonical", ErrMalformed)
	}
	return r, nil
}

// maxKeySize is the longest key: a configuration record's with a name of
// 255 bytes (a device key is at most 30).
const maxKeySize = 1 + 4 + 1 + 1 + 255 + 2

func decodeDevice(key, value []byte) (*Device, error) {
	k, err := ParseDeviceKey(key)
	if err != nil {
		return nil, err
	}
	d := &Device{Report: inof.Report{Switch: k.Switch, Device: inof.Device{Addr: k.Addr}}, Epoch: k.Epoch}
	v := wire.NewReader(value[2:])
	d.readBody(v)
	if err := v.Done(); err != nil {
		return nil, fmt.Errorf("%w: device value: %w", ErrMalformed, err)
	}
	if err := d.Validate(); err != nil {
		return nil, malformed(err)
	}
	return d, nil
}

// ParseConfigKey decodes the key of a configuration record (the Reflector,
// Kind, Name and Part fields). Errors wrap ErrMalformed.
func ParseConfigKey(key []byte) (Config, error) {
	if len(key) == 0 || Type(key[0]) != TypeConfig {
		return Config{}, fmt.Errorf("%w: not a configuration key", ErrMalformed)
	}
	r := wire.NewReader(key[1:])
	c := Config{Reflector: inof.RouterID(r.U32()), Kind: r.U8()}
	c.Name = r.Str()
	c.Part = r.U16()
	if err := r.Done(); err != nil {
		return Config{}, fmt.Errorf("%w: configuration key: %w", ErrMalformed, err)
	}
	return c, nil
}

func decodeConfig(key, value []byte) (*Config, error) {
	c, err := ParseConfigKey(key)
	if err != nil {
		return nil, err
	}
	v := wire.NewReader(value[2:])
	flags := v.U8()
	c.Gen, c.Writer = v.U64(), inof.RouterID(v.U32())
	c.Payload = bytes.Clone(v.Bytes(int(v.U16())))
	if err := v.Done(); err != nil {
		return nil, fmt.Errorf("%w: configuration value: %w", ErrMalformed, err)
	}
	if flags&^1 != 0 {
		return nil, fmt.Errorf("%w: configuration flags %#x", ErrMalformed, flags)
	}
	c.Deleted = flags&1 != 0
	if err := c.Validate(); err != nil {
		return nil, malformed(err)
	}
	return &c, nil
}

// malformed makes a validation error (ErrTooLarge on the sending side) a
// decoding error.
func malformed(err error) error {
	if errors.Is(err, ErrMalformed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}
