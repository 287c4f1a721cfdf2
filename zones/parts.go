package zones

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/wire"
)

// Part is one piece of a record as it replicates. A record whose content
// does not fit one BGP record is split at member boundaries into parts of
// one version. The caller sends each part as one record.Config: Kind and
// Name from Key, Part from Index, Gen, Writer and Deleted from the record,
// Payload as is.
type Part struct {
	Key     Key
	Index   uint16 // 0 … Count-1
	Count   uint16
	Payload []byte
}

// Part payload, big-endian:
//
//	format(1)=1 count(2) limit(2) digest(8) chunk
//
// count is the number of parts of this version, limit the payload limit
// the writer split with (parts split with different limits never mix),
// digest the FNV-1a 64 hash of the whole content, and chunk a run of whole
// members (or the settings byte) of the content (see the store encoding).
const (
	partFormat = 1
	partHeader = 13
	// MinPartPayload is the smallest payload limit Parts accepts: a header
	// and the largest member encoding.
	MinPartPayload = partHeader + 2 + 255
)

// ErrPart wraps the errors of assembling parts.
var ErrPart = errors.New("malformed record part")

// Parts splits r for replication into parts whose payloads are at most
// maxPayload bytes. A tombstone is one part without content. Any record
// that commits splits (MaxMembers members at most).
func (r Record) Parts(maxPayload int) ([]Part, error) {
	if maxPayload < MinPartPayload {
		return nil, fmt.Errorf("zones: payload limit %d below the minimum %d", maxPayload, MinPartPayload)
	}
	maxPayload = min(maxPayload, 0xFFFF)
	var chunks [][]byte
	if err := r.Key.validate(); err != nil {
		return nil, fmt.Errorf("zones: record %s: %w", r.Key, err)
	}
	switch {
	case r.Deleted:
		chunks = [][]byte{nil}
	case r.Kind == KindSettings:
		b, _ := r.appendContent(nil)
		chunks = [][]byte{b}
	case r.Kind == KindPin:
		if err := (&Pin{NQN: r.Name, At: r.At}).Validate(); err != nil {
			return nil, fmt.Errorf("zones: record %s: %w", r.Key, err)
		}
		b, err := r.appendContent(nil)
		if err != nil {
			return nil, fmt.Errorf("zones: record %s: %w", r.Key, err)
		}
		if len(b) > maxPayload-partHeader {
			return nil, fmt.Errorf("zones: record %s: %d bytes of content do not fit one part of %d", r.Key, len(b), maxPayload)
		}
		chunks = [][]byte{b}
	default:
		var cur []byte
		for _, m := range r.Members {
			if err := m.Validate(); err != nil {
				return nil, fmt.Errorf("zones: record %s: %w", r.Key, err)
			}
			enc, err := appendMember(nil, m)
			if err != nil {
				return nil, fmt.Errorf("zones: record %s: %w", r.Key, err)
			}
			if len(cur)+len(enc) > maxPayload-partHeader {
				chunks, cur = append(chunks, cur), nil
			}
			cur = append(cur, enc...)
		}
		chunks = append(chunks, cur)
	}
	if len(chunks) > 0xFFFF {
		return nil, fmt.Errorf("zones: record %s: %d parts (at most %d)", r.Key, len(chunks), 0xFFFF)
	}
	h := fnv.New64a()
	for _, c := range chunks {
		h.Write(c)
	}
	digest := h.Sum64()
	parts := make([]Part, len(chunks))
	for i, c := range chunks {
		p := []byte{partFormat}
		p = binary.BigEndian.AppendUint16(p, uint16(len(chunks)))
		p = binary.BigEndian.AppendUint16(p, uint16(maxPayload))
		p = binary.BigEndian.AppendUint64(p, digest)
		parts[i] = Part{Key: r.Key, Index: uint16(i), Count: uint16(len(chunks)), Payload: append(p, c...)}
	}
	return parts, nil
}

// Assembler rebuilds records from the parts that arrive from BGP, in any
// order, duplicated, and mixed with parts of other versions. It yields a
// record only when every part of one version is present and that version
// is newer than the one it yielded last for the key; until then the older
// complete version stays in effect. Parts of versions older than the one in
// effect are ignored, so the left-over parts of a record that shrank never
// count. Not safe for concurrent use.
type Assembler struct {
	limit   int // bytes of buffered chunks
	held    int
	objs    map[Key]*assembly
	evicted uint64
}

type assembly struct {
	done   Version // the version in effect
	have   bool
	builds map[buildID]*build
}

// buildID tells the parts of one split of one version apart.
type buildID struct {
	v       Version
	deleted bool
	count   uint16
	limit   uint16
	digest  uint64
}

type build struct {
	chunks [][]byte
	got    int
	size   int
}

// DefaultAssemblerLimit bounds the bytes an Assembler buffers for
// incomplete versions by default (an 8,000-member zone of the longest NQNs
// is 1.8 MB).
const DefaultAssemblerLimit = 16 << 20

// NewAssembler returns an assembler buffering at most limit bytes of
// incomplete versions (DefaultAssemblerLimit if limit ≤ 0). When a part
// would exceed it, the incomplete versions with the lowest generations are
// dropped first (Evicted counts them).
func NewAssembler(limit int) *Assembler {
	if limit <= 0 {
		limit = DefaultAssemblerLimit
	}
	return &Assembler{limit: limit, objs: map[Key]*assembly{}}
}

// Evicted returns how many incomplete versions were dropped to stay within
// the limit.
func (a *Assembler) Evicted() uint64 { return a.evicted }

// Add takes part index of the object k with the version and deletion flag
// of its envelope. It returns the record and true when this part completes
// a version newer than the one in effect. A malformed part, or a version
// whose parts do not add up to its digest, is an error wrapping ErrPart or
// ErrRecord, and changes nothing in effect.
func (a *Assembler) Add(k Key, index uint16, v Version, deleted bool, payload []byte) (Record, bool, error) {
	d := wire.NewReader(payload)
	if f := d.U8(); f != partFormat {
		return Record{}, false, fmt.Errorf("zones: %s part %d: %w: format %d", k, index, ErrPart, f)
	}
	id := buildID{v: v, deleted: deleted, count: d.U16(), limit: d.U16(), digest: d.U64()}
	chunk := d.Bytes(d.Len())
	switch {
	case d.Err() != nil:
		return Record{}, false, fmt.Errorf("zones: %s part %d: %w: %w", k, index, ErrPart, d.Err())
	case index >= id.count:
		return Record{}, false, fmt.Errorf("zones: %s: %w: part %d of %d", k, ErrPart, index, id.count)
	case deleted && id.count != 1:
		return Record{}, false, fmt.Errorf("zones: %s: %w: tombstone in %d parts", k, ErrPart, id.count)
	}
	if err := k.validate(); err != nil {
		return Record{}, false, fmt.Errorf("zones: %s part %d: %w", k, index, err)
	}
	o := a.objs[k]
	if o == nil {
		o = &assembly{builds: map[buildID]*build{}}
		a.objs[k] = o
	}
	if o.have && !o.done.Less(v) {
		return Record{}, false, nil // not newer than what is in effect
	}
	b := o.builds[id]
	if b == nil {
		b = &build{chunks: make([][]byte, id.count)}
		o.builds[id] = b
	}
	if b.chunks[index] != nil {
		return Record{}, false, nil // a duplicate
	}
	if !a.makeRoom(len(chunk), b) {
		a.drop(k, o, id)
		a.evicted++
		return Record{}, false, fmt.Errorf("zones: %s: %w: version of more than %d bytes", k, ErrPart, a.limit)
	}
	b.chunks[index] = append(make([]byte, 0, len(chunk)+1), chunk...) // never nil
	b.got++
	b.size += len(chunk)
	a.held += len(chunk)
	if b.got < int(id.count) {
		return Record{}, false, nil
	}
	r, err := decodeParts(k, id, slices.Concat(b.chunks...))
	if err != nil {
		a.drop(k, o, id)
		return Record{}, false, err
	}
	o.done, o.have = v, true
	for bid := range o.builds {
		if !v.Less(bid.v) {
			a.drop(k, o, bid)
		}
	}
	return r, true, nil
}

// decodeParts checks the content of a complete version and decodes it.
func decodeParts(k Key, id buildID, content []byte) (Record, error) {
	h := fnv.New64a()
	h.Write(content)
	if h.Sum64() != id.digest {
		return Record{}, fmt.Errorf("zones: %s version %d/%d: %w: parts do not match their digest", k, id.v.Gen, id.v.RouterID, ErrPart)
	}
	r := Record{Key: k, Version: id.v, Deleted: id.deleted}
	if !id.deleted {
		if err := r.decodeContent(wire.NewReader(content), -1); err != nil {
			return Record{}, fmt.Errorf("zones: %s version %d/%d: %w", k, id.v.Gen, id.v.RouterID, err)
		}
	}
	return r, nil
}

// drop forgets one incomplete version.
func (a *Assembler) drop(k Key, o *assembly, id buildID) {
	if b := o.builds[id]; b != nil {
		a.held -= b.size
		delete(o.builds, id)
	}
	if len(o.builds) == 0 && !o.have {
		delete(a.objs, k)
	}
}

// makeRoom evicts the incomplete versions with the lowest generations, other
// than keep, until n more bytes fit; it reports whether they do.
func (a *Assembler) makeRoom(n int, keep *build) bool {
	for a.held+n > a.limit {
		var (
			victimKey Key
			victimID  buildID
			found     bool
		)
		for k, o := range a.objs {
			for id, b := range o.builds {
				if b != keep && (!found || id.v.Less(victimID.v)) {
					victimKey, victimID, found = k, id, true
				}
			}
		}
		if !found {
			return false
		}
		a.drop(victimKey, a.objs[victimKey], victimID)
		a.evicted++
	}
	return true
}

// validate checks a key as every record encoding requires it.
func (k Key) validate() error {
	switch k.Kind {
	case KindSettings:
		if k.Name != "" {
			return fmt.Errorf("%w: settings record with a name", ErrRecord)
		}
	case KindZone, KindAlias:
		if err := ValidateName(k.Name); err != nil {
			return fmt.Errorf("%w: %w", ErrRecord, err)
		}
	case KindPin:
		if err := inof.ValidateNQN(k.Name); err != nil {
			return fmt.Errorf("%w: %w: %w", ErrRecord, ErrPin, err)
		}
	default:
		return fmt.Errorf("%w: kind %d", ErrRecord, k.Kind)
	}
	return nil
}
