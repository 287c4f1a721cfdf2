package zones

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/wire"
)

// Kind is the kind of object a replication record carries.
type Kind uint8

// Record kinds.
const (
	KindSettings Kind = 1
	KindZone     Kind = 2
	KindAlias    Kind = 3
	// KindPin is an NQN pin (Pin), named by its NQN. Releases before pins
	// ignore it in BGP (a configuration kind they do not know).
	KindPin Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindSettings:
		return "settings"
	case KindZone:
		return "zone"
	case KindAlias:
		return "alias"
	case KindPin:
		return "pin"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Version orders writes of one object: the generation is a hybrid logical
// clock value (inof.Clock), the router-id of the writing reflector breaks
// ties. When records replicate, the version travels in the BGP envelope
// (record.Config Gen and Writer), never in the payload.
type Version struct {
	Gen      uint64
	RouterID inof.RouterID
}

// Less orders versions by generation, then router-id.
func (v Version) Less(o Version) bool {
	if v.Gen != o.Gen {
		return v.Gen < o.Gen
	}
	return v.RouterID < o.RouterID
}

// Time returns the wall-clock part of the generation.
func (v Version) Time() time.Time { return inof.GenerationTime(v.Gen) }

// Key identifies a replicated object.
type Key struct {
	Kind Kind
	Name string // zone or alias name; empty for settings
}

func (k Key) String() string {
	if k.Kind == KindSettings {
		return "settings"
	}
	return k.Kind.String() + " " + k.Name
}

// Record is the replicated state of one object: the last write wins per Key
// by Version. A deletion is a tombstone (Deleted) that wins like a write, so
// a reflector that comes back with an old copy cannot resurrect the object.
//
// Key, Version and Deleted are what the BGP envelope carries (kind and name
// in its key, Gen, Writer and Deleted beside the payload); the replicated
// payload (Parts) holds only the content, so the envelope is the one source
// of the version. MarshalBinary is the store's local encoding of all of it.
type Record struct {
	Key
	Version
	Deleted  bool
	Members  []Member   // zone or alias
	Settings Settings   // settings
	At       []Location // pin: the access ports where its NQN may be claimed, sorted
}

// Records is a replicated configuration: one record per key.
type Records map[Key]Record

// Apply merges r into rs and reports whether r won (it was newer than what
// rs held). Equal versions with different content (which only a broken
// writer produces) are ordered by their encoding, so every replica picks the
// same one.
func (rs Records) Apply(r Record) bool {
	cur, ok := rs[r.Key]
	if ok {
		if r.Version.Less(cur.Version) {
			return false
		}
		if r.Version == cur.Version {
			a, _ := r.MarshalBinary()
			b, _ := cur.MarshalBinary()
			if bytes.Compare(a, b) <= 0 {
				return false
			}
		}
	}
	rs[r.Key] = r
	return true
}

// Merge returns the merge of several replicas; it is commutative,
// associative and idempotent.
func Merge(sets ...Records) Records {
	out := Records{}
	for _, s := range sets {
		for _, r := range s {
			out.Apply(r)
		}
	}
	return out
}

// Prune drops the tombstones past inof.TombstoneLifetime at now (measured
// from their generation, so every reflector drops the same ones) and
// returns how many it dropped.
func (rs Records) Prune(now time.Time) int {
	n := 0
	for k, r := range rs {
		if r.Deleted && inof.TombstoneExpired(r.Gen, now) {
			delete(rs, k)
			n++
		}
	}
	return n
}

// Config returns the live configuration the records describe. Without a
// settings record the settings are DefaultSettings.
func (rs Records) Config() *Config {
	s := DefaultSettings()
	if r, ok := rs[Key{Kind: KindSettings}]; ok && !r.Deleted {
		s = r.Settings
	}
	c := NewConfig(s)
	for k, r := range rs {
		if r.Deleted {
			continue
		}
		switch k.Kind {
		case KindZone:
			c.Zones[k.Name] = &Zone{Name: k.Name, Members: append([]Member(nil), r.Members...)}
		case KindAlias:
			c.Aliases[k.Name] = &Alias{Name: k.Name, Members: append([]Member(nil), r.Members...)}
		case KindPin:
			c.Pins[k.Name] = &Pin{NQN: k.Name, At: append([]Location(nil), r.At...)}
		}
	}
	return c
}

// with returns the configuration c turned into by the records rs (newer
// versions of c's objects, tombstones included), as Records.Config would
// build it from the records of c and rs together. c is left as it is, and
// the result shares with it what rs does not change: neither is to be
// changed after (Clone for a copy to change).
func (c *Config) with(rs []Record) *Config {
	out := &Config{Settings: c.Settings, Zones: c.Zones, Aliases: c.Aliases, Pins: c.Pins}
	var zs, as, ps bool // the maps copied so far
	for _, r := range rs {
		switch r.Kind {
		case KindSettings:
			out.Settings = DefaultSettings()
			if !r.Deleted {
				out.Settings = r.Settings
			}
		case KindZone:
			if !zs {
				out.Zones, zs = maps.Clone(c.Zones), true
			}
			if delete(out.Zones, r.Name); !r.Deleted {
				out.Zones[r.Name] = &Zone{Name: r.Name, Members: append([]Member(nil), r.Members...)}
			}
		case KindAlias:
			if !as {
				out.Aliases, as = maps.Clone(c.Aliases), true
			}
			if delete(out.Aliases, r.Name); !r.Deleted {
				out.Aliases[r.Name] = &Alias{Name: r.Name, Members: append([]Member(nil), r.Members...)}
			}
		case KindPin:
			if !ps {
				out.Pins, ps = maps.Clone(c.Pins), true
			}
			if delete(out.Pins, r.Name); !r.Deleted {
				out.Pins[r.Name] = &Pin{NQN: r.Name, At: append([]Location(nil), r.At...)}
			}
		}
	}
	return out
}

// Sorted returns the records ordered by kind and name.
func (rs Records) Sorted() []Record {
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Store encoding, big-endian; local to one reflector's file:
//
//	version(1) kind(1) flags(1: bit0 deleted) gen(8) router-id(4) name_len(1) name
//	settings: content
//	zone/alias/pin: count(2) content
//
// Version 1 holds the kinds settings, zone and alias; version 2 (pins) adds
// the kind pin and is written for pins only, so the records of the other
// kinds keep their bytes and stores written before pins load unchanged.
//
// Content, the same in the store and in replicated parts:
//
//	settings: flags(1: bit0 default-zone enabled, bit1 hard zoning)
//	zone/alias: the members, each kind(1) and
//	  addr:   family(1: 4|6) addr(4|16)
//	  range:  family(1) lo(4|16) hi(4|16)
//	  prefix: family(1) addr(4|16) bits(1)
//	  nqn/alias: len(1) bytes
//	pin: the locations, each router-id(4) port_len(1) port
const (
	recordVersion    = 1
	recordVersionPin = 2
)

// versionOf is the store encoding's version for records of kind k.
func versionOf(k Kind) byte {
	if k == KindPin {
		return recordVersionPin
	}
	return recordVersion
}

// counted reports whether records of kind k carry a count before their
// content in the store encoding.
func counted(k Kind) bool { return k == KindZone || k == KindAlias || k == KindPin }

// ErrRecord wraps every record decoding error.
var ErrRecord = errors.New("malformed zone record")

// MarshalBinary encodes the record for the store.
func (r Record) MarshalBinary() ([]byte, error) {
	if len(r.Name) > 255 {
		return nil, fmt.Errorf("%w: name of %d bytes", ErrName, len(r.Name))
	}
	if len(r.Members) > MaxMembers {
		return nil, fmt.Errorf("%w: %d members (at most %d)", ErrMember, len(r.Members), MaxMembers)
	}
	if len(r.At) > MaxPinPorts {
		return nil, fmt.Errorf("%w: %d switch ports (at most %d)", ErrPin, len(r.At), MaxPinPorts)
	}
	b := []byte{versionOf(r.Kind), byte(r.Kind), 0}
	if r.Deleted {
		b[2] = 1
	}
	b = binary.BigEndian.AppendUint64(b, r.Gen)
	b = binary.BigEndian.AppendUint32(b, uint32(r.RouterID))
	b = append(append(b, byte(len(r.Name))), r.Name...)
	switch r.Kind {
	case KindZone, KindAlias:
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Members)))
	case KindPin:
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.At)))
	}
	return r.appendContent(b)
}

// appendContent appends the record's content.
func (r Record) appendContent(b []byte) ([]byte, error) {
	switch r.Kind {
	case KindSettings:
		var f byte
		if r.Settings.DefaultZoneEnabled {
			f |= 1
		}
		if r.Settings.HardZoning {
			f |= 2
		}
		return append(b, f), nil
	case KindZone, KindAlias:
		for _, m := range r.Members {
			var err error
			if b, err = appendMember(b, m); err != nil {
				return nil, err
			}
		}
		return b, nil
	case KindPin:
		for _, l := range r.At {
			if len(l.Port) > 255 {
				return nil, fmt.Errorf("%w: %d-byte port name", ErrPin, len(l.Port))
			}
			b = binary.BigEndian.AppendUint32(b, uint32(l.Switch))
			b = append(append(b, byte(len(l.Port))), l.Port...)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: kind %d", ErrRecord, r.Kind)
}

func appendMember(b []byte, m Member) ([]byte, error) {
	b = append(b, byte(m.Kind))
	switch m.Kind {
	case MemberAddr:
		return wire.AppendAddr(b, m.Addr), nil
	case MemberRange:
		b = wire.AppendAddr(b, m.Addr)
		return append(b, wire.AppendAddr(nil, m.Hi)[1:]...), nil
	case MemberPrefix:
		return append(wire.AppendAddr(b, m.Prefix.Addr()), byte(m.Prefix.Bits())), nil
	case MemberNQN, MemberAlias:
		if len(m.Name) > 255 {
			return nil, fmt.Errorf("%w: %d-byte name", ErrMember, len(m.Name))
		}
		return append(append(b, byte(len(m.Name))), m.Name...), nil
	}
	return nil, fmt.Errorf("%w: kind %d", ErrMember, m.Kind)
}

// UnmarshalBinary decodes a record of the store encoding and checks each
// member.
func (r *Record) UnmarshalBinary(b []byte) error {
	*r = Record{}
	d := wire.NewReader(b)
	v := d.U8()
	if v != recordVersion && v != recordVersionPin {
		return fmt.Errorf("%w: version %d", ErrRecord, v)
	}
	r.Kind = Kind(d.U8())
	if r.Kind == KindPin && v < recordVersionPin {
		return fmt.Errorf("%w: a pin record of version %d", ErrRecord, v)
	}
	r.Deleted = d.U8()&1 != 0
	r.Gen = d.U64()
	r.RouterID = inof.RouterID(d.U32())
	r.Name = d.Str()
	n := -1 // members or locations to read; -1: until the end
	if counted(r.Kind) {
		n = int(d.U16())
	}
	if d.Err() != nil {
		return fmt.Errorf("%w: %w", ErrRecord, d.Err())
	}
	return r.decodeContent(d, n)
}

// decodeContent reads the content of r's kind from d (n members, or all
// that are left if n < 0), checks it and requires the end of the input.
func (r *Record) decodeContent(d *wire.Reader, n int) error {
	if err := r.Key.validate(); err != nil {
		return err
	}
	switch r.Kind {
	case KindSettings:
		f := d.U8()
		r.Settings = Settings{DefaultZoneEnabled: f&1 != 0, HardZoning: f&2 != 0}
	case KindPin:
		if err := r.decodePin(d, n); err != nil {
			return err
		}
	default:
		for i := 0; (n < 0 && d.Len() > 0 || i < n) && d.Err() == nil; i++ {
			m, err := readMember(d)
			if err != nil {
				return err
			}
			if d.Err() == nil {
				r.Members = append(r.Members, m)
			}
		}
		if len(r.Members) > MaxMembers {
			return fmt.Errorf("%w: %d members (at most %d)", ErrRecord, len(r.Members), MaxMembers)
		}
	}
	if err := d.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return nil
}

// readMember reads and checks one member; a short read is left in d.
func readMember(d *wire.Reader) (Member, error) {
	m := Member{Kind: MemberKind(d.U8())}
	switch m.Kind {
	case MemberAddr:
		m.Addr = d.Addr()
	case MemberRange:
		f := d.U8()
		m.Addr, m.Hi = d.AddrOf(f), d.AddrOf(f)
	case MemberPrefix:
		a := d.Addr()
		bits := int(d.U8())
		if d.Err() != nil {
			return m, nil
		}
		p, err := a.Prefix(bits)
		if err != nil || p.Bits() != bits || p.Addr() != a {
			return m, fmt.Errorf("%w: prefix %s/%d", ErrRecord, a, bits)
		}
		m.Prefix = p
	case MemberNQN, MemberAlias:
		m.Name = d.Str()
	default:
		if d.Err() == nil {
			return m, fmt.Errorf("%w: member kind %d", ErrRecord, m.Kind)
		}
	}
	if d.Err() != nil {
		return m, nil
	}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return m, nil
}

// decodePin reads a pin's locations (n, or all that are left if n < 0) and
// checks the pin as a commit would; a tombstone has none.
func (r *Record) decodePin(d *wire.Reader, n int) error {
	for i := 0; (n < 0 && d.Len() > 0 || i < n) && d.Err() == nil && len(r.At) <= MaxPinPorts; i++ {
		l := Location{Switch: inof.RouterID(d.U32()), Port: d.Str()}
		if d.Err() == nil {
			r.At = append(r.At, l)
		}
	}
	if d.Err() != nil || r.Deleted && len(r.At) == 0 {
		return nil // a short read is reported by the caller
	}
	r.At = sortLocations(r.At)
	if err := (&Pin{NQN: r.Name, At: r.At}).Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return nil
}
