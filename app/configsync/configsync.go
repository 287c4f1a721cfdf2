// Package configsync maps the zone store's records (zones.Record) to the
// configuration records that replicate them in BGP (record.Config) and
// back. A record travels as one or more parts (zones.Part); the envelope of
// each part carries the version and the deletion flag, the payload only
// content (docs/records.md, "Config").
package configsync

import (
	"fmt"
	"slices"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// Kind is a configuration record's kind (record.Config.Kind): what its
// payload is and who keeps the object. kinds is the one table of them
// (docs/records.md lists the numbers).
type Kind uint8

// Configuration kinds. The zone store's keep their zones.Kind numbers.
const (
	KindSettings = Kind(zones.KindSettings) // fabric settings (zone store)
	KindZone     = Kind(zones.KindZone)     // a zone (zone store)
	KindAlias    = Kind(zones.KindAlias)    // an alias (zone store)
	KindPin      = Kind(zones.KindPin)      // an NQN pin (zone store), named by its NQN
	// KindLossless is the fabric's lossless profile: lossless.Encode as
	// payload, one object (empty name, part 0).
	KindLossless Kind = 16
	// KindJournal is one journal entry of the zone store (history and
	// audit): zones.Entry.MarshalBinary split into parts (JournalRecords),
	// named by zones.EntryID, versioned by the entry's own version; never
	// deleted, bounded by the store's history size (docs/records.md).
	KindJournal Kind = 17
	// KindRecordFormat is the fabric's record format (how switches
	// publish devices, docs/records.md): one object (empty name, part 0),
	// payload EncodeRecordFormat.
	KindRecordFormat Kind = 18
)

// Owner is who keeps the objects of a kind.
type Owner uint8

// Owners.
const (
	OwnerNone         Owner = iota // not a kind this version knows: ignored
	OwnerZoneStore                 // zones.Store (reflector) / zones.Records (switch)
	OwnerLossless                  // the lossless profile in effect
	OwnerJournal                   // the zone store's journal (reflectors only)
	OwnerRecordFormat              // the record format in effect
)

var kinds = map[Kind]struct {
	name  string
	owner Owner
}{
	KindSettings:     {"settings", OwnerZoneStore},
	KindZone:         {"zone", OwnerZoneStore},
	KindAlias:        {"alias", OwnerZoneStore},
	KindPin:          {"pin", OwnerZoneStore},
	KindLossless:     {"lossless", OwnerLossless},
	KindJournal:      {"journal", OwnerJournal},
	KindRecordFormat: {"record-format", OwnerRecordFormat},
}

// EncodeRecordFormat is the payload of a KindRecordFormat record:
// format(1).
func EncodeRecordFormat(f record.Format) []byte { return []byte{byte(f)} }

// DecodeRecordFormat reads a KindRecordFormat payload.
func DecodeRecordFormat(payload []byte) (record.Format, error) {
	if len(payload) != 1 || !record.Format(payload[0]).Valid() {
		return 0, fmt.Errorf("configsync: record format payload %x: want one byte, 1 or 2", payload)
	}
	return record.Format(payload[0]), nil
}

// KindOf returns the kind of a configuration record.
func KindOf(c record.Config) Kind { return Kind(c.Kind) }

// Owner returns who keeps the kind's objects.
func (k Kind) Owner() Owner { return kinds[k].owner }

func (k Kind) String() string {
	if i, ok := kinds[k]; ok {
		return i.name
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// PartPayload is the payload limit records are split with. With the
// longest key (a 63-byte zone name), the config value header and one route
// target, a part stays well inside record.MaxSize.
const PartPayload = 3700

// Records returns the config records that carry r, one per part. Their
// Reflector is left zero: the replicator stamps its own router-id.
func Records(r zones.Record) ([]record.Config, error) {
	parts, err := r.Parts(PartPayload)
	if err != nil {
		return nil, fmt.Errorf("configsync: %w", err)
	}
	out := make([]record.Config, len(parts))
	for i, p := range parts {
		out[i] = record.Config{
			Kind: uint8(r.Kind), Name: r.Name, Part: p.Index,
			Gen: r.Gen, Writer: r.RouterID, Deleted: r.Deleted, Payload: p.Payload,
		}
	}
	return out, nil
}

// Stale returns the parts of the same objects that held lists and next does
// not, at the version held: what is left over when a record shrinks to
// fewer parts, to be withdrawn (table.ConfigReplicator.Withdraw) once next
// is originated. A held part of a version newer than next's is no left-over
// but a part of a version still on its way (adopted from a peer before the
// rest of it): it is not stale.
func Stale(held, next []record.Config) []record.Config {
	want := map[record.ConfigObject]bool{}
	names := map[objectName]record.Config{}
	for _, c := range next {
		want[c.Object()] = true
		names[nameKey(c)] = c
	}
	var out []record.Config
	for _, c := range held {
		v, ok := names[nameKey(c)]
		if ok && !want[c.Object()] && !c.Newer(&v) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b record.Config) int { return int(a.Part) - int(b.Part) })
	return out
}

// objectName is an object regardless of part.
type objectName struct {
	kind uint8
	name string
}

func nameKey(c record.Config) objectName { return objectName{c.Kind, c.Name} }

// Assembler turns received config records into complete zone records. It
// ignores config kinds that are not the zone store's. Not safe for
// concurrent use.
type Assembler struct {
	asm *zones.Assembler
}

// NewAssembler returns an assembler buffering at most limit bytes of
// incomplete versions (zones.DefaultAssemblerLimit if limit ≤ 0).
func NewAssembler(limit int) *Assembler { return &Assembler{asm: zones.NewAssembler(limit)} }

// Add takes one received part. It returns the record when the part
// completes a version newer than the one in effect for its object; ok is
// false for parts of other kinds, duplicates, older versions and versions
// still missing parts. A malformed part is an error and changes nothing.
func (a *Assembler) Add(c record.Config) (zones.Record, bool, error) {
	if KindOf(c).Owner() != OwnerZoneStore {
		return zones.Record{}, false, nil
	}
	k := zones.Key{Kind: zones.Kind(c.Kind), Name: c.Name}
	r, ok, err := a.asm.Add(k, c.Part, zones.Version{Gen: c.Gen, RouterID: c.Writer}, c.Deleted, c.Payload)
	if err != nil {
		return zones.Record{}, false, fmt.Errorf("configsync: from reflector %s: %w", c.Reflector, err)
	}
	return r, ok, nil
}

// Evicted counts incomplete versions dropped to stay within the limit.
func (a *Assembler) Evicted() uint64 { return a.asm.Evicted() }
