package record

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/wire"
)

// DeviceSet carries many devices of one switch in one BGP record:
// those that share exactly one set of route targets, or a shard of them
// when they do not fit in one record (docs/records.md, "Device sets"). The
// key is (switch, set, shard); a set's route targets never change (a
// device whose zones change moves to another set), so the rule "never lose
// a route target under one key" holds by construction. Receivers read each
// entry as the device record (switch, address, epoch) it stands for:
// DeviceTable turns a new value into the entries added, changed and gone.
type DeviceSet struct {
	Switch inof.RouterID
	// Set names the route-target set on this switch: the publisher takes
	// it from its clock when the set first has a device.
	Set   uint64
	Shard uint16
	// Devices are the entries, sorted by (address, epoch) with no two
	// alike; each one's Switch is the record's.
	Devices []Device
	// encoded is what a received record carried of Devices (set by
	// Decode): a DeviceTable keeps and compares these bytes instead
	// of encoding Devices again.
	encoded SetEntries
}

// Encoded is what a received record carried of Devices, in its wire
// encoding; empty for a record not decoded from the wire.
func (s *DeviceSet) Encoded() SetEntries { return s.encoded }

// SetEntries is a device set's entries in their wire encoding, back to
// back and sorted by (address, epoch), with where each one starts. A
// DeviceTable keeps and compares these bytes instead of records.
type SetEntries struct {
	raw  []byte
	offs []uint32
}

// Len is the number of entries.
func (e SetEntries) Len() int { return len(e.offs) }

// Append adds one entry's encoding (from At of a sorted SetEntries) at the
// end; the caller keeps the order.
func (e *SetEntries) Append(entry []byte) {
	e.offs = append(e.offs, uint32(len(e.raw)))
	e.raw = append(e.raw, entry...)
}

// At is entry i's encoding.
func (e SetEntries) At(i int) []byte {
	end := len(e.raw)
	if i+1 < len(e.offs) {
		end = int(e.offs[i+1])
	}
	return e.raw[e.offs[i]:end]
}

// Key is entry i's address and epoch.
func (e SetEntries) Key(i int) (netip.Addr, uint64) { return entryKey(e.At(i)) }

// Find returns the index of the entry of a at epoch.
func (e SetEntries) Find(a netip.Addr, epoch uint64) (int, bool) {
	return slices.BinarySearchFunc(e.offs, struct{}{}, func(off uint32, _ struct{}) int {
		ea, ee := entryKey(e.raw[off:])
		if c := ea.Compare(a); c != 0 {
			return c
		}
		return cmp.Compare(ee, epoch)
	})
}

// EncodeEntries encodes devs (sorted) as SetEntries.
func EncodeEntries(devs []Device) SetEntries {
	n := 0
	for i := range devs {
		n += entrySize(&devs[i])
	}
	e := SetEntries{raw: make([]byte, 0, n), offs: make([]uint32, len(devs))}
	for i := range devs {
		e.offs[i] = uint32(len(e.raw))
		e.raw = AppendEntry(e.raw, &devs[i])
	}
	return e
}

// AppendEntry appends d's set entry: epoch(8) address(1+4|16) body.
func AppendEntry(b []byte, d *Device) []byte {
	return d.appendBody(wire.AppendAddr(binary.BigEndian.AppendUint64(b, d.Epoch), d.Device.Addr))
}

// entryKey reads the address and epoch of a valid entry's encoding.
func entryKey(b []byte) (netip.Addr, uint64) {
	epoch := binary.BigEndian.Uint64(b)
	if b[8] == 4 {
		return netip.AddrFrom4([4]byte(b[9:13])), epoch
	}
	return netip.AddrFrom16([16]byte(b[9:25])), epoch
}

// DecodeEntry reads a valid entry's encoding as a record of switch sw.
func DecodeEntry(b []byte, sw inof.RouterID) Device {
	v := wire.NewReader(b)
	d := Device{Epoch: v.U64()}
	d.Switch = sw
	d.Device.Addr = v.Addr()
	d.readBody(v)
	return d
}

// DeviceSetKey is the decoded key of a device set record.
type DeviceSetKey struct {
	Switch inof.RouterID
	Set    uint64
	Shard  uint16
}

// deviceSetKeySize is the length of every device set key.
const deviceSetKeySize = 1 + 4 + 8 + 2

// deviceSetHeader is the value's bytes before the entries: version, type,
// count(2).
const deviceSetHeader = 4

// Key implements Record: type(1)=3 switch(4) set(8) shard(2).
func (s *DeviceSet) Key() []byte { return s.appendKey(nil) }

func (s *DeviceSet) appendKey(k []byte) []byte {
	return DeviceSetKey{Switch: s.Switch, Set: s.Set, Shard: s.Shard}.append(k)
}

// Bytes returns the key's encoding.
func (k DeviceSetKey) Bytes() []byte { return k.append(nil) }

func (k DeviceSetKey) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(append(b, byte(TypeDeviceSet)), uint32(k.Switch))
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint64(b, k.Set), k.Shard)
}

// ParseDeviceSetKey decodes the key of a device set record. Errors wrap
// ErrMalformed.
func ParseDeviceSetKey(key []byte) (DeviceSetKey, error) {
	if len(key) != deviceSetKeySize || Type(key[0]) != TypeDeviceSet {
		return DeviceSetKey{}, fmt.Errorf("%w: not a device set key", ErrMalformed)
	}
	return DeviceSetKey{Switch: inof.RouterID(binary.BigEndian.Uint32(key[1:])),
		Set: binary.BigEndian.Uint64(key[5:]), Shard: binary.BigEndian.Uint16(key[13:])}, nil
}

// entrySize is the encoded size of one entry: epoch(8) address(5|17) body.
func entrySize(d *Device) int { return 8 + wire.AddrLen(d.Device.Addr) + d.bodySize() }

// DeviceSetEntrySize is the bytes d takes in a device set record.
func DeviceSetEntrySize(d *Device) int { return entrySize(d) }

// DeviceSetCapacity is how many entry bytes one device set record with
// rts route targets holds within MaxSize.
func DeviceSetCapacity(rts int) int {
	return MaxSize - deviceSetKeySize - deviceSetHeader - 8*rts
}

// CompareEntries orders entries by (address, epoch).
func CompareEntries(a, b *Device) int {
	if c := a.Device.Addr.Compare(b.Device.Addr); c != 0 {
		return c
	}
	return cmp.Compare(a.Epoch, b.Epoch)
}

// Validate applies the rules every receiver applies to a device set
// record (MarshalValue and Decode both use it).
func (s *DeviceSet) Validate() error {
	if len(s.Devices) > 0xFFFF {
		return fmt.Errorf("%w: %d devices in one set record", ErrTooLarge, len(s.Devices))
	}
	for i := range s.Devices {
		d := &s.Devices[i]
		if d.Switch != s.Switch {
			return fmt.Errorf("%w: set entry %s of switch %s in a record of switch %s", ErrMalformed, d.Device.Addr, d.Switch, s.Switch)
		}
		if err := d.Validate(); err != nil {
			return err
		}
		if i > 0 && CompareEntries(&s.Devices[i-1], d) >= 0 {
			return fmt.Errorf("%w: set entries out of order at %s epoch %d", ErrMalformed, d.Device.Addr, d.Epoch)
		}
	}
	return nil
}

// MarshalValue implements Record: version(1)=1 type(1)=3 count(2), then
// count entries of epoch(8) address(1+4|16) and the device value's fields
// from role on (role, protocol, port, state, reason, since, changed,
// access port, NQN).
func (s *DeviceSet) MarshalValue() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	n := deviceSetHeader
	for i := range s.Devices {
		n += entrySize(&s.Devices[i])
	}
	v := make([]byte, 0, n)
	v = binary.BigEndian.AppendUint16(append(v, valueVersion, byte(TypeDeviceSet)), uint16(len(s.Devices)))
	for i := range s.Devices {
		v = AppendEntry(v, &s.Devices[i])
	}
	return v, nil
}

func decodeDeviceSet(key, value []byte) (*DeviceSet, error) {
	k, err := ParseDeviceSetKey(key)
	if err != nil {
		return nil, err
	}
	s := &DeviceSet{Switch: k.Switch, Set: k.Set, Shard: k.Shard}
	v := wire.NewReader(value[2:])
	n := int(v.U16())
	if n > v.Len()/minEntrySize {
		return nil, fmt.Errorf("%w: device set of %d entries in %d bytes", ErrMalformed, n, v.Len())
	}
	if v.Err() != nil {
		return nil, fmt.Errorf("%w: device set value: %w", ErrMalformed, v.Err())
	}
	s.Devices = make([]Device, n)
	raw := value[deviceSetHeader:]
	s.encoded = SetEntries{raw: raw, offs: make([]uint32, n)}
	for i := range s.Devices {
		s.encoded.offs[i] = uint32(len(raw) - v.Len())
		d := &s.Devices[i]
		d.Switch, d.Epoch = k.Switch, v.U64()
		d.Device.Addr = v.Addr()
		d.readBody(v)
	}
	if err := v.Done(); err != nil {
		return nil, fmt.Errorf("%w: device set value: %w", ErrMalformed, err)
	}
	if err := s.Validate(); err != nil {
		return nil, malformed(err)
	}
	return s, nil
}

// minEntrySize is the smallest entry: an IPv4 device with empty strings.
const minEntrySize = 8 + 5 + 24

// Switch is a switch's announcement of the record formats it reads.
// It carries no route target: reflectors take it from every client, and
// no switch receives it (a record without a route target is never sent to
// an RTC peer). A reflector refuses to switch the fabric to device sets
// while a switch has not announced that it reads them.
type Switch struct {
	Switch inof.RouterID
	// Reads is a bit set of what the switch understands (SwitchReads…);
	// bits unknown here are kept, a newer release's.
	Reads uint32
}

// What a switch reads (Switch.Reads).
const (
	// SwitchReadsDeviceSets: the switch takes device set records (type 3).
	SwitchReadsDeviceSets uint32 = 1 << 0
)

// Key implements Record: type(1)=4 switch(4).
func (w *Switch) Key() []byte { return w.appendKey(nil) }

func (w *Switch) appendKey(k []byte) []byte {
	return binary.BigEndian.AppendUint32(append(k, byte(TypeSwitch)), uint32(w.Switch))
}

// ParseSwitchKey decodes the key of a switch record. Errors wrap
// ErrMalformed.
func ParseSwitchKey(key []byte) (inof.RouterID, error) {
	if len(key) != 5 || Type(key[0]) != TypeSwitch {
		return 0, fmt.Errorf("%w: not a switch key", ErrMalformed)
	}
	return inof.RouterID(binary.BigEndian.Uint32(key[1:])), nil
}

// MarshalValue implements Record: version(1)=1 type(1)=4 reads(4).
func (w *Switch) MarshalValue() ([]byte, error) {
	return binary.BigEndian.AppendUint32([]byte{valueVersion, byte(TypeSwitch)}, w.Reads), nil
}

func decodeSwitch(key, value []byte) (*Switch, error) {
	sw, err := ParseSwitchKey(key)
	if err != nil {
		return nil, err
	}
	v := wire.NewReader(value[2:])
	w := &Switch{Switch: sw, Reads: v.U32()}
	if err := v.Done(); err != nil {
		return nil, fmt.Errorf("%w: switch value: %w", ErrMalformed, err)
	}
	return w, nil
}

// Format is how switches publish their devices: the fabric setting
// of docs/records.md ("Rolling upgrade").
type Format uint8

// Record formats.
const (
	// FormatDevices: one device record per device (type 1), the default.
	FormatDevices Format = 1
	// FormatSets: device set records (type 3).
	FormatSets Format = 2
)

// Formats lists the formats by name, as inofctl spells them.
func Formats() []string { return []string{FormatDevices.String(), FormatSets.String()} }

func (f Format) String() string {
	switch f {
	case FormatDevices:
		return "per-device"
	case FormatSets:
		return "sets"
	}
	return fmt.Sprintf("format-%d", uint8(f))
}

// Valid reports whether f is a known format.
func (f Format) Valid() bool { return f == FormatDevices || f == FormatSets }

// ParseFormat parses a format's name.
func ParseFormat(s string) (Format, error) {
	for _, f := range []Format{FormatDevices, FormatSets} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("record format %q: want per-device or sets", s)
}
