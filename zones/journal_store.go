package zones

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/openinof/inof/inof"
)

func parseEntryKey(k []byte) (Version, bool) {
	if len(k) != 12 {
		return Version{}, false
	}
	return Version{Gen: binary.BigEndian.Uint64(k), RouterID: inof.RouterID(binary.BigEndian.Uint32(k[8:]))}, true
}

// putEntries writes es into the journal bucket whose index (sorted) is
// have and drops the oldest entries beyond size; it returns the new index.
func putEntries(b *bolt.Bucket, have []Version, es []Entry, size int) ([]Version, error) {
	if len(es) == 0 {
		return have, nil
	}
	out := slices.Clone(have)
	for _, e := range es {
		v, err := e.MarshalBinary()
		if err != nil {
			return have, err
		}
		if err := b.Put(entryKey(e.Version), v); err != nil {
			return have, err
		}
		if i, found := slices.BinarySearchFunc(out, e.Version, cmpVersion); !found {
			out = slices.Insert(out, i, e.Version)
		}
	}
	for len(out) > size {
		if err := b.Delete(entryKey(out[0])); err != nil {
			return have, err
		}
		out = out[1:]
	}
	return out, nil
}

func cmpVersion(a, b Version) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}

// JournalVersions returns the versions of the journal's entries, oldest
// first.
func (s *Store) JournalVersions() []Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.journal)
}

// Entry returns one journal entry.
func (s *Store) Entry(v Version) (Entry, bool, error) {
	var e Entry
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJournal).Get(entryKey(v))
		if b == nil {
			return nil
		}
		ok = true
		return e.UnmarshalBinary(b)
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("zones: journal entry %s: %w", EntryID(v), err)
	}
	return e, ok, nil
}

// Journal returns every journal entry, oldest first.
func (s *Store) Journal() ([]Entry, error) {
	var out []Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
			var e Entry
			if err := e.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("zones: read journal: %w", err)
	}
	return out, nil
}

// ErrOutsideHistory refuses a journal entry older than every entry a full
// journal keeps: it was dropped here already (or would be at once), and
// taking it back would undo the bound.
var ErrOutsideHistory = errors.New("journal entry older than the history kept")

// AddEntries merges journal entries received from other reflectors and
// returns the ones it added. An entry already held is skipped; one older
// than the oldest of a full journal (ErrOutsideHistory) or with a
// generation too far ahead (inof.ErrFutureGeneration) is refused with an
// error for each; the rest are written in one transaction.
func (s *Store) AddEntries(in []Entry) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	var add []Entry
	now := s.clock.Now()
	for _, e := range in {
		if _, found := slices.BinarySearchFunc(s.journal, e.Version, cmpVersion); found ||
			slices.ContainsFunc(add, func(a Entry) bool { return a.Version == e.Version }) {
			continue
		}
		if err := inof.CheckGeneration(e.Gen, now); err != nil {
			errs = append(errs, fmt.Errorf("journal entry %s: %w", e.ID(), err))
			continue
		}
		if len(s.journal) >= s.opts.HistorySize && e.Version.Less(s.journal[0]) {
			errs = append(errs, fmt.Errorf("journal entry %s: %w", e.ID(), ErrOutsideHistory))
			continue
		}
		add = append(add, e)
	}
	if len(add) == 0 {
		return nil, errors.Join(errs...)
	}
	if err := s.persist(nil, add); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	for _, e := range add {
		_ = s.clock.Observe(e.Gen) // checked above
	}
	kept := add[:0]
	for _, e := range add {
		if _, found := slices.BinarySearchFunc(s.journal, e.Version, cmpVersion); found {
			kept = append(kept, e)
		}
	}
	return kept, errors.Join(errs...)
}

// Note writes a journal entry for a change that is not a zoning commit (a
// lossless profile, a restore): it takes a new version of this store's
// clock and returns the entry as written.
func (s *Store) Note(e Entry) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Version = Version{Gen: s.clock.Next(), RouterID: s.opts.RouterID}
	e.Writes = nil
	if err := s.persist(nil, []Entry{e}); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// ConfigAt rebuilds the configuration right after the journal entry at
// version v (see the package function ConfigAt); false if the journal no
// longer holds that entry.
func (s *Store) ConfigAt(v Version) (*Config, bool, error) {
	journal, err := s.Journal()
	if err != nil {
		return nil, false, err
	}
	if !slices.ContainsFunc(journal, func(e Entry) bool { return e.Version == v }) {
		return nil, false, nil
	}
	s.mu.Lock()
	current := Records{}
	for k, r := range s.records {
		current[k] = r
	}
	s.mu.Unlock()
	c, err := ConfigAt(current, journal, v)
	if err != nil {
		return nil, true, err
	}
	return c, true, nil
}

// Conflicts lists the journal's lost writes against the records in effect
// (see the package function Conflicts).
func (s *Store) Conflicts() ([]Conflict, error) {
	journal, err := s.Journal()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	current := Records{}
	for k, r := range s.records {
		current[k] = r
	}
	s.mu.Unlock()
	return Conflicts(current, journal), nil
}
