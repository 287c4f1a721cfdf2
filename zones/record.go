package zones

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"sync"
	"time"
)

// Kind is the kind of object a replication record carries.
type Kind uint8

// Record kinds.
const (
	KindSettings Kind = 1
	KindZone     Kind = 2
	KindAlias    Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindSettings:
		return "settings"
	case KindZone:
		return "zone"
	case KindAlias:
		return "alias"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Version orders writes of one object: the generation is a hybrid logical
// clock value (Clock), the router-id of the writing reflector breaks ties.
type Version struct {
	Gen      uint64
	RouterID uint32
}

// Less orders versions by generation, then router-id.
func (v Version) Less(o Version) bool {
	if v.Gen != o.Gen {
		return v.Gen < o.Gen
	}
	return v.RouterID < o.RouterID
}

// Time returns the wall-clock part of the generation.
func (v Version) Time() time.Time { return time.UnixMilli(int64(v.Gen >> hlcLogicalBits)) }

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
type Record struct {
	Key
	Version
	Deleted  bool
	Members  []Member // zone or alias
	Settings Settings // settings
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

// Prune drops tombstones written more than retention before now and returns
// how many it dropped. A replica that was away longer than the retention can
// bring a deleted object back: keep retention above the longest outage.
func (rs Records) Prune(now time.Time, retention time.Duration) int {
	n := 0
	for k, r := range rs {
		if r.Deleted && now.Sub(r.Time()) > retention {
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
		}
	}
	return c
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

const hlcLogicalBits = 16

// Clock is a hybrid logical clock: generations are wall-clock milliseconds
// shifted left by 16 bits plus a counter, never going backwards and always
// above every generation observed from other reflectors.
type Clock struct {
	mu   sync.Mutex
	last uint64
	now  func() time.Time
}

// NewClock returns a clock reading now (time.Now if nil).
func NewClock(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

// Next returns a generation above every one returned or observed before.
func (c *Clock) Next() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	wall := uint64(c.now().UnixMilli()) << hlcLogicalBits
	if wall > c.last {
		c.last = wall
	} else {
		c.last++
	}
	return c.last
}

// Observe moves the clock past a generation seen elsewhere.
func (c *Clock) Observe(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, gen)
}

// Record encoding (version 1), big-endian:
//
//	version(1)=1 kind(1) flags(1: bit0 deleted) gen(8) router-id(4) name_len(1) name
//	settings: flags(1: bit0 default-zone enabled, bit1 hard zoning)
//	zone/alias: count(2), then per member: kind(1) and
//	  addr:   family(1: 4|6) addr(4|16)
//	  range:  family(1) lo(4|16) hi(4|16)
//	  prefix: family(1) addr(4|16) bits(1)
//	  nqn/alias: len(1) bytes
const recordVersion = 1

// ErrRecord wraps every record decoding error.
var ErrRecord = errors.New("malformed zone record")

// MarshalBinary encodes the record.
func (r Record) MarshalBinary() ([]byte, error) {
	if len(r.Name) > 255 {
		return nil, fmt.Errorf("%w: name of %d bytes", ErrName, len(r.Name))
	}
	if len(r.Members) > 0xFFFF {
		return nil, fmt.Errorf("%w: %d members", ErrMember, len(r.Members))
	}
	b := []byte{recordVersion, byte(r.Kind), 0}
	if r.Deleted {
		b[2] = 1
	}
	b = binary.BigEndian.AppendUint64(b, r.Gen)
	b = binary.BigEndian.AppendUint32(b, r.RouterID)
	b = append(append(b, byte(len(r.Name))), r.Name...)
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
		b = binary.BigEndian.AppendUint16(b, uint16(len(r.Members)))
		for _, m := range r.Members {
			var err error
			if b, err = appendMember(b, m); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: kind %d", ErrRecord, r.Kind)
}

func appendAddrBytes(b []byte, a netip.Addr) []byte {
	if a.Is4() {
		a4 := a.As4()
		return append(append(b, 4), a4[:]...)
	}
	a16 := a.As16()
	return append(append(b, 6), a16[:]...)
}

func appendMember(b []byte, m Member) ([]byte, error) {
	b = append(b, byte(m.Kind))
	switch m.Kind {
	case MemberAddr:
		return appendAddrBytes(b, m.Addr), nil
	case MemberRange:
		b = appendAddrBytes(b, m.Addr)
		return append(b, appendAddrBytes(nil, m.Hi)[1:]...), nil
	case MemberPrefix:
		return append(appendAddrBytes(b, m.Prefix.Addr()), byte(m.Prefix.Bits())), nil
	case MemberNQN, MemberAlias:
		if len(m.Name) > 255 {
			return nil, fmt.Errorf("%w: %d-byte name", ErrMember, len(m.Name))
		}
		return append(append(b, byte(len(m.Name))), m.Name...), nil
	}
	return nil, fmt.Errorf("%w: kind %d", ErrMember, m.Kind)
}

// UnmarshalBinary decodes a record and checks each member.
func (r *Record) UnmarshalBinary(b []byte) error {
	*r = Record{}
	d := decoder{b: b}
	if v := d.byte(); v != recordVersion {
		return fmt.Errorf("%w: version %d", ErrRecord, v)
	}
	r.Kind = Kind(d.byte())
	flags := d.byte()
	r.Deleted = flags&1 != 0
	r.Gen = d.uint64()
	r.RouterID = d.uint32()
	r.Name = string(d.bytes(int(d.byte())))
	switch r.Kind {
	case KindSettings:
		if r.Name != "" {
			return fmt.Errorf("%w: settings record with a name", ErrRecord)
		}
		f := d.byte()
		r.Settings = Settings{DefaultZoneEnabled: f&1 != 0, HardZoning: f&2 != 0}
	case KindZone, KindAlias:
		if err := ValidateName(r.Name); err != nil {
			return fmt.Errorf("%w: %v", ErrRecord, err)
		}
		n := int(d.uint16())
		for i := 0; i < n && d.err == nil; i++ {
			m := d.member()
			if d.err == nil {
				if err := m.Validate(); err != nil {
					return fmt.Errorf("%w: %v", ErrRecord, err)
				}
				r.Members = append(r.Members, m)
			}
		}
	default:
		return fmt.Errorf("%w: kind %d", ErrRecord, r.Kind)
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrRecord, len(d.b))
	}
	return nil
}

// decoder reads big-endian fields, remembering the first short read.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: truncated", ErrRecord)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if v := d.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) uint16() uint16 {
	if v := d.bytes(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if v := d.bytes(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) uint64() uint64 {
	if v := d.bytes(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) addr(family byte) netip.Addr {
	switch family {
	case 4:
		if v := d.bytes(4); v != nil {
			return netip.AddrFrom4([4]byte(v))
		}
	case 6:
		if v := d.bytes(16); v != nil {
			return netip.AddrFrom16([16]byte(v))
		}
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: address family %d", ErrRecord, family)
		}
	}
	return netip.Addr{}
}

func (d *decoder) member() Member {
	m := Member{Kind: MemberKind(d.byte())}
	switch m.Kind {
	case MemberAddr:
		m.Addr = d.addr(d.byte())
	case MemberRange:
		f := d.byte()
		m.Addr, m.Hi = d.addr(f), d.addr(f)
	case MemberPrefix:
		a := d.addr(d.byte())
		bits := int(d.byte())
		if d.err == nil {
			var err error
			if m.Prefix, err = a.Prefix(bits); err != nil || m.Prefix.Bits() != bits || m.Prefix.Addr() != a {
				d.err = fmt.Errorf("%w: prefix %s/%d", ErrRecord, a, bits)
			}
		}
	case MemberNQN, MemberAlias:
		m.Name = string(d.bytes(int(d.byte())))
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: member kind %d", ErrRecord, m.Kind)
		}
	}
	return m
}
