package zones

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/openinof/inof/inof"
)

// The journal is the store's history and audit trail: one immutable entry
// per committed change (a zoning commit, a lossless profile change, a
// restore), kept for the newest HistorySize entries and replicated between
// reflectors like the records (configsync.KindJournal), so every reflector
// answers the same history. A zoning entry keeps, per record it wrote, the
// record as it was before (Change.Before): with those, any retained
// revision's configuration can be rebuilt from the current records alone
// (ConfigAt), and two entries written on the same base of one record are a
// conflict that last-writer-wins resolved silently (Conflicts).

// DefaultHistorySize is how many journal entries a store keeps by default.
const DefaultHistorySize = 100

// Journal entry actions.
const (
	ActionCommit   = "commit"   // a zoning commit (edits, apply, rebase)
	ActionApply    = "apply"    // a declarative zoning file applied
	ActionRollback = "rollback" // a zoning commit restoring an older revision
	ActionLossless = "lossless" // the lossless profile replaced
	ActionRestore  = "restore"  // the store restored from a backup
)

// ErrJournal wraps the errors of decoding a journal entry.
var ErrJournal = errors.New("malformed journal entry")

// Entry is one journal entry. Its Version (a generation of the writing
// reflector's clock and its router-id) identifies it fabric-wide and orders
// the journal.
type Entry struct {
	Version
	Identity string // who: "user:alice", "token:ci", "cert:ops"
	Via      string // from where: "unix", "tls 192.0.2.7:51234"
	Action   string // Action* constants
	// Revision is the zoning configuration's content revision after the
	// change, as the writer computed it (api.Revision); empty for
	// entries that are not zoning commits.
	Revision string
	Summary  string  // what changed, one line
	Writes   []Write // zoning records written (zoning entries)
	// Profile is the lossless profile set (lossless.Encode), for
	// ActionLossless entries.
	Profile []byte
}

// Write is one record a zoning entry wrote.
type Write struct {
	Key     Key
	Base    Version // the version the writer replaced (zero: none)
	New     Version // the version written
	Deleted bool    // the write is a deletion
	// Before is the record replaced (nil: the object did not exist),
	// which rebuilds older revisions (ConfigAt).
	Before *Record
}

// ID is the entry's name in replication and on the command line: the
// generation and router-id in hexadecimal.
func (e Entry) ID() string { return EntryID(e.Version) }

// EntryID names the entry of version v.
func EntryID(v Version) string { return fmt.Sprintf("%016x-%08x", v.Gen, uint32(v.RouterID)) }

// ParseEntryID parses EntryID's form.
func ParseEntryID(s string) (Version, error) {
	var gen uint64
	var rid uint32
	if len(s) != 25 || s[16] != '-' {
		return Version{}, fmt.Errorf("%w: id %q", ErrJournal, s)
	}
	if _, err := fmt.Sscanf(s, "%016x-%08x", &gen, &rid); err != nil {
		return Version{}, fmt.Errorf("%w: id %q: %v", ErrJournal, s, err)
	}
	return Version{Gen: gen, RouterID: inof.RouterID(rid)}, nil
}

// Note describes a change for its journal entry; the caller of Tx.Commit
// sets it with Tx.Note.
type Note struct {
	Identity, Via, Action, Revision string
}

// journal encoding: JSON, versioned, the records in their store encoding.
const journalFormat = 1

type jsonEntry struct {
	Format   int          `json:"format"`
	Gen      uint64       `json:"gen"`
	RouterID uint32       `json:"router_id"`
	Identity string       `json:"identity,omitempty"`
	Via      string       `json:"via,omitempty"`
	Action   string       `json:"action"`
	Revision string       `json:"revision,omitempty"`
	Summary  string       `json:"summary,omitempty"`
	Changes  []jsonChange `json:"changes,omitempty"`
	Profile  []byte       `json:"profile,omitempty"`
}

type jsonChange struct {
	Kind    uint8  `json:"kind"`
	Name    string `json:"name,omitempty"`
	BaseGen uint64 `json:"base_gen,omitempty"`
	BaseRID uint32 `json:"base_rid,omitempty"`
	NewGen  uint64 `json:"new_gen"`
	NewRID  uint32 `json:"new_rid"`
	Deleted bool   `json:"deleted,omitempty"`
	Before  []byte `json:"before,omitempty"` // Record.MarshalBinary
}

// MarshalBinary encodes the entry (the store's and the replicated form).
func (e Entry) MarshalBinary() ([]byte, error) {
	j := jsonEntry{Format: journalFormat, Gen: e.Gen, RouterID: uint32(e.RouterID), Identity: e.Identity, Via: e.Via,
		Action: e.Action, Revision: e.Revision, Summary: e.Summary, Profile: e.Profile}
	for _, c := range e.Writes {
		jc := jsonChange{Kind: uint8(c.Key.Kind), Name: c.Key.Name, BaseGen: c.Base.Gen, BaseRID: uint32(c.Base.RouterID),
			NewGen: c.New.Gen, NewRID: uint32(c.New.RouterID), Deleted: c.Deleted}
		if c.Before != nil {
			b, err := c.Before.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("zones: journal entry %s: %w", e.ID(), err)
			}
			jc.Before = b
		}
		j.Changes = append(j.Changes, jc)
	}
	return json.Marshal(j)
}

// UnmarshalBinary decodes MarshalBinary's form; errors wrap ErrJournal.
func (e *Entry) UnmarshalBinary(b []byte) error {
	var j jsonEntry
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: %v", ErrJournal, err)
	}
	if j.Format != journalFormat {
		return fmt.Errorf("%w: format %d", ErrJournal, j.Format)
	}
	if j.Gen == 0 || j.Action == "" {
		return fmt.Errorf("%w: no generation or action", ErrJournal)
	}
	out := Entry{Version: Version{Gen: j.Gen, RouterID: inof.RouterID(j.RouterID)}, Identity: j.Identity, Via: j.Via,
		Action: j.Action, Revision: j.Revision, Summary: j.Summary, Profile: j.Profile}
	for _, jc := range j.Changes {
		c := Write{Key: Key{Kind: Kind(jc.Kind), Name: jc.Name}, Base: Version{Gen: jc.BaseGen, RouterID: inof.RouterID(jc.BaseRID)},
			New: Version{Gen: jc.NewGen, RouterID: inof.RouterID(jc.NewRID)}, Deleted: jc.Deleted}
		if err := c.Key.validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrJournal, err)
		}
		if jc.Before != nil {
			var r Record
			if err := r.UnmarshalBinary(jc.Before); err != nil {
				return fmt.Errorf("%w: change %s: %v", ErrJournal, c.Key, err)
			}
			if r.Key != c.Key {
				return fmt.Errorf("%w: change %s holds a record of %s", ErrJournal, c.Key, r.Key)
			}
			c.Before = &r
		}
		out.Writes = append(out.Writes, c)
	}
	*e = out
	return nil
}

func entryKey(v Version) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, v.Gen), uint32(v.RouterID))
}

// summarize describes the records a commit writes, relative to what they
// replace: "zone web: created (3 members); alias red: +1 -2; …".
func summarize(before Records, changed []Record) string {
	var parts []string
	for _, r := range changed {
		old, had := before[r.Key]
		had = had && !old.Deleted
		switch {
		case r.Deleted:
			parts = append(parts, r.Key.String()+": deleted")
		case r.Kind == KindSettings:
			parts = append(parts, fmt.Sprintf("settings: default zone %s, hard zoning %s",
				onOff(r.Settings.DefaultZoneEnabled), onOff(r.Settings.HardZoning)))
		case r.Kind == KindPin:
			parts = append(parts, fmt.Sprintf("%s: %d switch ports", r.Key, len(r.At)))
		case !had:
			parts = append(parts, fmt.Sprintf("%s: created (%d members)", r.Key, len(r.Members)))
		default:
			add, rm := memberDelta(old.Members, r.Members)
			parts = append(parts, fmt.Sprintf("%s: +%d -%d", r.Key, add, rm))
		}
	}
	return strings.Join(parts, "; ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// memberDelta counts the members added and removed between two lists.
func memberDelta(old, new []Member) (added, removed int) {
	in := make(map[Member]bool, len(old))
	for _, m := range old {
		in[m] = true
	}
	for _, m := range new {
		if !in[m] {
			added++
		}
		delete(in, m)
	}
	return added, len(in)
}

// ErrHistoryIncomplete reports a record written after a revision by a
// change whose journal entry this reflector does not hold (yet: records
// and entries replicate separately), so that revision cannot be rebuilt.
var ErrHistoryIncomplete = errors.New("the journal does not hold every change since that revision yet")

// ConfigAt rebuilds the configuration as it was right after the journal
// entry at (retained) version v: the current records, with each record a
// later entry wrote replaced by that entry's Before. Entries that are not
// zoning changes change nothing. A record newer than v that no later entry
// wrote fails with ErrHistoryIncomplete.
func ConfigAt(current Records, journal []Entry, v Version) (*Config, error) {
	recs := Records{}
	for k, r := range current {
		recs[k] = r
	}
	later := slices.Clone(journal)
	sortEntries(later)
	seen := map[Key]bool{}
	for _, e := range later {
		if !v.Less(e.Version) {
			continue
		}
		for _, c := range e.Writes {
			if seen[c.Key] {
				continue
			}
			seen[c.Key] = true
			if c.Before == nil {
				delete(recs, c.Key)
			} else {
				recs[c.Key] = *c.Before
			}
		}
	}
	for k, r := range current {
		if !seen[k] && r.Gen > v.Gen {
			return nil, fmt.Errorf("zones: %s written at %s by %s: %w", k, r.Time().UTC().Format(time.RFC3339Nano), r.RouterID, ErrHistoryIncomplete)
		}
	}
	return recs.Config(), nil
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Version.Less(es[j].Version) })
}

// Conflict is a record whose journal holds writes that the version in
// effect never saw: edits made concurrently (on two reflectors at once, or
// on both sides of a partition) of which last-writer-wins kept another.
type Conflict struct {
	Key Key
	// Lost are the entries whose write of Key was overwritten unseen and
	// that nobody has edited on top of since (open), oldest first.
	Lost []Version
	// Resolved are lost writes since which Key was edited again on a state
	// that already held their loss (someone saw it and acted).
	Resolved []Version
	Winner   Version // the entry of the write in effect (zero if not in the journal)
}

// Conflicts finds the lost writes of the journal: for each record, the
// writes in effect descend from one another (each Write's Base is the
// version before it); a write that is not an ancestor of the version in
// effect was overwritten by one made without seeing it. Writes older than
// the oldest link the journal still holds are not judged. Every reflector
// holding the same records and entries finds the same conflicts.
func Conflicts(current Records, journal []Entry) []Conflict {
	type write struct {
		base  Version
		entry Version
	}
	writes := map[Key]map[Version]write{}
	for _, e := range journal {
		for _, w := range e.Writes {
			if writes[w.Key] == nil {
				writes[w.Key] = map[Version]write{}
			}
			writes[w.Key][w.New] = write{w.Base, e.Version}
		}
	}
	var out []Conflict
	for k, ws := range writes {
		cur, ok := current[k]
		if !ok {
			continue
		}
		chain := map[Version]bool{}
		var bases []Version // the bases of the writes in effect
		v := cur.Version
		floor := Version{} // writes at or below it are not judged
		for {
			chain[v] = true
			w, ok := ws[v]
			if !ok {
				floor = v
				break
			}
			if w.base == (Version{}) {
				break
			}
			bases = append(bases, w.base)
			v = w.base
		}
		c := Conflict{Key: k}
		if w, ok := ws[cur.Version]; ok {
			c.Winner = w.entry
		}
		for nv, w := range ws {
			if chain[nv] || !floor.Less(nv) {
				continue
			}
			if slices.ContainsFunc(bases, func(b Version) bool { return nv.Less(b) }) {
				c.Resolved = append(c.Resolved, w.entry)
			} else {
				c.Lost = append(c.Lost, w.entry)
			}
		}
		if len(c.Lost)+len(c.Resolved) == 0 {
			continue
		}
		sortVersions(c.Lost)
		sortVersions(c.Resolved)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].first(), out[j].first()
		if a != b {
			return a.Less(b)
		}
		return out[i].Key.String() < out[j].Key.String()
	})
	return out
}

// first is the oldest lost write, open or resolved.
func (c Conflict) first() Version {
	all := append(slices.Clone(c.Lost), c.Resolved...)
	sortVersions(all)
	return all[0]
}

func sortVersions(vs []Version) {
	slices.SortFunc(vs, func(a, b Version) int {
		if a.Less(b) {
			return -1
		}
		return 1
	})
}
