package configsync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// Journal part payload, big-endian:
//
//	format(1)=1 count(2) digest(8) chunk
//
// count is the number of parts of the entry, digest the FNV-1a 64 hash of
// the whole encoding (zones.Entry.MarshalBinary), chunk the bytes of this
// part. An entry never changes once written, so its parts never mix with
// another version's.
const (
	journalPartFormat = 1
	journalPartHeader = 11
)

// ErrJournalPart wraps the errors of assembling journal parts.
var ErrJournalPart = errors.New("malformed journal part")

// JournalRecords returns the config records that carry a journal entry.
func JournalRecords(e zones.Entry) ([]record.Config, error) {
	b, err := e.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("configsync: %w", err)
	}
	chunk := PartPayload - journalPartHeader
	n := max(1, (len(b)+chunk-1)/chunk)
	if n > 0xFFFF {
		return nil, fmt.Errorf("configsync: journal entry %s of %d bytes: too many parts", e.ID(), len(b))
	}
	h := fnv.New64a()
	h.Write(b)
	digest := h.Sum64()
	out := make([]record.Config, n)
	for i := range n {
		p := []byte{journalPartFormat}
		p = binary.BigEndian.AppendUint16(p, uint16(n))
		p = binary.BigEndian.AppendUint64(p, digest)
		p = append(p, b[i*chunk:min(len(b), (i+1)*chunk)]...)
		out[i] = record.Config{Kind: uint8(KindJournal), Name: e.ID(), Part: uint16(i),
			Gen: e.Gen, Writer: e.RouterID, Payload: p}
	}
	return out, nil
}

// JournalAssembler turns received journal parts into entries. It holds at
// most a byte limit of incomplete entries, dropping the oldest beyond it.
// Not safe for concurrent use.
type JournalAssembler struct {
	limit, held int
	building    map[string]*journalBuild
	order       []string // names, oldest first
	evicted     uint64
}

type journalBuild struct {
	v      zones.Version
	count  uint16
	digest uint64
	parts  map[uint16][]byte
	size   int
}

// NewJournalAssembler returns an assembler holding at most limit bytes
// (zones.DefaultAssemblerLimit if limit ≤ 0).
func NewJournalAssembler(limit int) *JournalAssembler {
	if limit <= 0 {
		limit = zones.DefaultAssemblerLimit
	}
	return &JournalAssembler{limit: limit, building: map[string]*journalBuild{}}
}

// Add takes one received journal part and returns the entry it completes.
// A malformed part, or one that disagrees with the parts held for its
// entry, is an error; the parts held for that entry are dropped.
func (a *JournalAssembler) Add(c record.Config) (zones.Entry, bool, error) {
	if KindOf(c) != KindJournal {
		return zones.Entry{}, false, nil
	}
	v := zones.Version{Gen: c.Gen, RouterID: c.Writer}
	if id, err := zones.ParseEntryID(c.Name); err != nil || id != v || c.Deleted {
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: %q does not name version %s", ErrJournalPart, c.Name, zones.EntryID(v))
	}
	p := c.Payload
	if len(p) < journalPartHeader || p[0] != journalPartFormat {
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: entry %s part %d header", ErrJournalPart, c.Name, c.Part)
	}
	count, digest := binary.BigEndian.Uint16(p[1:]), binary.BigEndian.Uint64(p[3:])
	if count == 0 || c.Part >= count {
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: entry %s part %d of %d", ErrJournalPart, c.Name, c.Part, count)
	}
	b := a.building[c.Name]
	if b != nil && (b.count != count || b.digest != digest) {
		a.drop(c.Name)
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: entry %s parts disagree", ErrJournalPart, c.Name)
	}
	if b == nil {
		b = &journalBuild{v: v, count: count, digest: digest, parts: map[uint16][]byte{}}
		a.building[c.Name] = b
		a.order = append(a.order, c.Name)
	}
	if _, dup := b.parts[c.Part]; !dup {
		chunk := append([]byte(nil), p[journalPartHeader:]...)
		b.parts[c.Part] = chunk
		b.size += len(chunk)
		a.held += len(chunk)
	}
	if len(b.parts) < int(count) {
		a.makeRoom(c.Name)
		return zones.Entry{}, false, nil
	}
	var whole []byte
	for i := range count {
		whole = append(whole, b.parts[i]...)
	}
	a.drop(c.Name)
	h := fnv.New64a()
	h.Write(whole)
	if h.Sum64() != digest {
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: entry %s digest", ErrJournalPart, c.Name)
	}
	var e zones.Entry
	if err := e.UnmarshalBinary(whole); err != nil {
		return zones.Entry{}, false, fmt.Errorf("configsync: entry %s: %w", c.Name, err)
	}
	if e.Version != v {
		return zones.Entry{}, false, fmt.Errorf("configsync: %w: entry %s holds version %s", ErrJournalPart, c.Name, e.ID())
	}
	return e, true, nil
}

// Evicted counts incomplete entries dropped to stay within the limit.
func (a *JournalAssembler) Evicted() uint64 { return a.evicted }

func (a *JournalAssembler) drop(name string) {
	b := a.building[name]
	if b == nil {
		return
	}
	a.held -= b.size
	delete(a.building, name)
	for i, n := range a.order {
		if n == name {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
}

// makeRoom drops the oldest incomplete entries (not keep) beyond the limit.
func (a *JournalAssembler) makeRoom(keep string) {
	for a.held > a.limit && len(a.order) > 1 {
		victim := a.order[0]
		if victim == keep {
			victim = a.order[1]
		}
		a.drop(victim)
		a.evicted++
	}
}
