package zones

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openinof/inof/inof"
)

// Store errors.
var (
	ErrConflict = errors.New("configuration changed since the transaction began; begin again")
	ErrTxDone   = errors.New("transaction already committed or aborted")
)

var (
	bucketRecords = []byte("records")
	bucketMeta    = []byte("meta")
	bucketJournal = []byte("journal")
	keyClock      = []byte("clock")
)

// StoreOptions configure Open.
type StoreOptions struct {
	// RouterID identifies this reflector in the versions it writes.
	RouterID inof.RouterID
	// LockTimeout bounds the wait for another process holding the file
	// (default 1 s).
	LockTimeout time.Duration
	// Now is the wall clock for generations, skew checks and tombstone
	// expiry (time.Now if nil).
	Now func() time.Time
	// HistorySize is how many journal entries the store keeps, the newest
	// (default DefaultHistorySize).
	HistorySize int
	Logger      *slog.Logger
}

// Store is the crash-safe zone store of a reflector: a bbolt file holding
// one record per zone, alias and the settings, in the store encoding
// (Record.MarshalBinary: version, deletion flag and content). Edits go
// through transactions that validate the whole resulting configuration and
// commit atomically; records from other reflectors are merged with Apply.
type Store struct {
	db    *bolt.DB
	opts  StoreOptions
	clock *inof.Clock
	log   *slog.Logger

	mu       sync.Mutex
	records  Records
	config   *Config
	revision uint64 // bumped by every change, for optimistic transactions
	refused  Refused
	journal  []Version // the journal's entries, oldest first
	// pins is config.Pins, read without the lock (Pins).
	pins atomic.Pointer[map[string]*Pin]
}

// Refused counts the records Apply refused by their generation.
type Refused struct {
	Future  uint64 // more than inof.MaxGenerationSkew ahead of the local clock
	Expired uint64 // tombstones already past inof.TombstoneLifetime
}

// ErrExpired reports a tombstone offered after its lifetime.
var ErrExpired = errors.New("tombstone past its lifetime")

// Open opens or creates the store file.
func Open(path string, opts StoreOptions) (*Store, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistorySize
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return nil, fmt.Errorf("zones: open store %s: %w", path, err)
	}
	s := &Store{db: db, opts: opts, clock: inof.NewClock(opts.Now), log: opts.Logger, records: Records{}}
	err = db.Update(func(tx *bolt.Tx) error {
		rb, err := tx.CreateBucketIfNotExists(bucketRecords)
		if err != nil {
			return err
		}
		mb, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		jb, err := tx.CreateBucketIfNotExists(bucketJournal)
		if err != nil {
			return err
		}
		if err := jb.ForEach(func(k, _ []byte) error {
			v, ok := parseEntryKey(k)
			if !ok {
				return fmt.Errorf("journal key %x", k)
			}
			s.journal = append(s.journal, v)
			s.observe(v.Gen)
			return nil
		}); err != nil {
			return err
		}
		if v := mb.Get(keyClock); len(v) == 8 {
			s.observe(binary.BigEndian.Uint64(v))
		}
		return rb.ForEach(func(k, v []byte) error {
			var r Record
			if err := r.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("record %q: %w", k, err)
			}
			s.records[r.Key] = r
			s.observe(r.Gen)
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("zones: load store %s: %w", path, err)
	}
	s.setConfig(s.records.Config())
	if ahead := s.ClockAhead(); ahead > inof.MaxGenerationSkew {
		s.log.Warn("zones: the store's generation clock is ahead of the wall clock: peer reflectors refuse its changes "+
			"until their clocks catch up (has the clock stepped back, or was a backup from the future restored?)",
			"ahead", ahead.Round(time.Second), "newest", inof.GenerationTime(s.clock.Last()).UTC())
	}
	return s, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// Config returns the committed configuration (a copy the caller may keep).
func (s *Store) Config() *Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.config.Clone()
}

// Pins returns the pins of the committed configuration, keyed by NQN,
// without a copy and without waiting for a commit being written: the
// caller must not change the map or the pins (a change of the store
// replaces the map). For judging every device record a reflector
// receives, where Config's copy would cost too much.
func (s *Store) Pins() map[string]*Pin { return *s.pins.Load() }

// setConfig puts c in force (with s.mu held).
func (s *Store) setConfig(c *Config) {
	s.config = c
	s.pins.Store(&c.Pins)
}

// Records returns every record, tombstones included, sorted.
func (s *Store) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records.Sorted()
}

// Record returns the stored record of key k (a tombstone included), and
// whether there is one: a look-up, where Records copies and sorts them
// all.
func (s *Store) Record(k Key) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[k]
	return r, ok
}

// observe moves the clock past a generation read from the file. Stored
// generations were checked when they were written or applied, so they are
// trusted even when the wall clock has since stepped back (then new commits
// still win over stored ones); Open warns once if the clock is then ahead.
func (s *Store) observe(gen uint64) { s.clock.Advance(gen) }

// Generation is the store's generation clock: the highest generation it
// wrote or observed (0 before any).
func (s *Store) Generation() uint64 { return s.clock.Last() }

// ClockAhead is how far the store's generation clock (its newest write or
// generation seen) is ahead of the wall clock, 0 if it is not. Beyond
// inof.MaxGenerationSkew the peer reflectors refuse this store's writes
// until their clocks catch up: the wall clock stepped back, or the store
// came from a backup from the future.
func (s *Store) ClockAhead() time.Duration {
	return max(0, inof.GenerationTime(s.clock.Last()).Sub(s.clock.Now()))
}

// Apply merges records received from other reflectors, persists the ones
// that win in one transaction and returns them. Invalid records are skipped
// with an error for each; the rest still apply. Records whose generation is
// more than inof.MaxGenerationSkew ahead (inof.ErrFutureGeneration) and
// tombstones already past inof.TombstoneLifetime (ErrExpired, so a peer that
// re-originates a pruned tombstone does not undo Prune) are refused and
// counted (RefusedCounts). A merged configuration may reference an alias
// deleted elsewhere: such a member matches nothing, and Problems reports it.
func (s *Store) Apply(in []Record) ([]Record, error) {
	var errs []error
	s.mu.Lock()
	defer s.mu.Unlock()
	// next holds the versions in force of the keys in seen so far (the
	// store's, then the winners'); s.records changes once they are written.
	next := Records{}
	var won []Record
	now := s.clock.Now()
	for _, r := range in {
		if _, err := r.MarshalBinary(); err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", r.Key, err))
			continue
		}
		if err := inof.CheckGeneration(r.Gen, now); err != nil {
			s.refused.Future++
			errs = append(errs, fmt.Errorf("record %s from %d: %w", r.Key, r.RouterID, err))
			continue
		}
		if r.Deleted && inof.TombstoneExpired(r.Gen, now) {
			s.refused.Expired++
			errs = append(errs, fmt.Errorf("record %s from %d: %w (written %s)", r.Key, r.RouterID, ErrExpired, r.Time().UTC().Format(time.RFC3339)))
			continue
		}
		if _, ok := next[r.Key]; !ok {
			if cur, ok := s.records[r.Key]; ok {
				next[r.Key] = cur
			}
		}
		if next.Apply(r) {
			won = append(won, r)
		}
	}
	if len(won) == 0 {
		return nil, errors.Join(errs...)
	}
	if err := s.persist(won, nil); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	for _, r := range won {
		_ = s.clock.Observe(r.Gen) // checked above, cannot fail
		s.records[r.Key] = r       // in order: a key's last winner is its newest
	}
	s.setConfig(s.config.with(won))
	s.revision++
	return won, errors.Join(errs...)
}

// Problems validates the current configuration; after merges from other
// reflectors it may hold references a single commit would have refused.
func (s *Store) Problems() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.config.Validate()
}

// RefusedCounts returns how many records Apply refused by generation.
func (s *Store) RefusedCounts() Refused {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Prune forgets the tombstones past inof.TombstoneLifetime (measured from
// their generation, so every reflector forgets the same ones; Apply then
// refuses them) and returns how many. Call it now and then (hourly is
// plenty).
func (s *Store) Prune() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := Records{}
	for k, r := range s.records {
		next[k] = r
	}
	n := next.Prune(s.clock.Now())
	if n == 0 {
		return 0, nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		for k := range s.records {
			if _, kept := next[k]; !kept {
				if err := b.Delete(recordKey(k)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("zones: prune: %w", err)
	}
	s.records = next
	s.revision++
	return n, nil
}

// persist writes records, journal entries (trimmed to HistorySize) and
// the clock in one bbolt transaction.
func (s *Store) persist(rs []Record, es []Entry) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		var top uint64
		journal, err := putEntries(tx.Bucket(bucketJournal), s.journal, es, s.opts.HistorySize)
		if err != nil {
			return err
		}
		s.journal = journal // bbolt rolls back on a later error; the index is only ever a subset then
		for _, e := range es {
			top = max(top, e.Gen)
		}
		for _, r := range rs {
			v, err := r.MarshalBinary()
			if err != nil {
				return fmt.Errorf("record %s: %w", r.Key, err)
			}
			if err := b.Put(recordKey(r.Key), v); err != nil {
				return err
			}
			top = max(top, r.Gen)
		}
		mb := tx.Bucket(bucketMeta)
		if cur := mb.Get(keyClock); len(cur) == 8 && binary.BigEndian.Uint64(cur) >= top {
			return nil
		}
		return mb.Put(keyClock, binary.BigEndian.AppendUint64(nil, top))
	})
	if err != nil {
		return fmt.Errorf("zones: write store: %w", err)
	}
	return nil
}

func recordKey(k Key) []byte { return append([]byte{byte(k.Kind)}, k.Name...) }

// Tx stages edits to the configuration (like FC's zone transaction): nothing
// is visible until Commit, which validates the whole result and writes every
// change atomically with a new generation; Abort drops the edits.
type Tx struct {
	s    *Store
	base *Config // the store's configuration at Begin, shared: never changed
	// work is base with the edits: its maps are the transaction's own,
	// their zones and aliases base's until copied before a first change
	// (own).
	work     *Config
	own      map[Key]bool
	revision uint64
	done     bool
	note     Note
	entry    *Entry // the journal entry Commit wrote
}

// Begin starts a transaction on the current configuration.
func (s *Store) Begin() *Tx {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.config
	work := &Config{Settings: c.Settings, Zones: maps.Clone(c.Zones), Aliases: maps.Clone(c.Aliases), Pins: maps.Clone(c.Pins)}
	return &Tx{s: s, base: c, work: work, own: map[Key]bool{}, revision: s.revision}
}

// Config returns the staged configuration (for display; do not modify).
func (t *Tx) Config() *Config { return t.work }

// CreateZone adds an empty zone.
func (t *Tx) CreateZone(name string, members ...Member) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := ValidateName(name); err != nil {
		return err
	}
	if name == DefaultZone {
		return fmt.Errorf("zone %q: %w", name, ErrReserved)
	}
	if t.work.Zones[name] != nil || t.work.Aliases[name] != nil {
		return fmt.Errorf("zone %q: %w", name, ErrDuplicate)
	}
	t.work.Zones[name] = &Zone{Name: name}
	t.own[Key{KindZone, name}] = true
	return t.AddZoneMembers(name, members...)
}

// DeleteZone removes a zone.
func (t *Tx) DeleteZone(name string) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.work.Zones[name] == nil {
		return fmt.Errorf("zone %q: %w", name, ErrNotFound)
	}
	delete(t.work.Zones, name)
	return nil
}

// AddZoneMembers adds members to a zone.
func (t *Tx) AddZoneMembers(name string, ms ...Member) error {
	z, err := t.zone(name)
	if err != nil {
		return err
	}
	z.Members, err = addMembers("zone "+name, z.Members, ms)
	return err
}

// RemoveZoneMembers removes members from a zone.
func (t *Tx) RemoveZoneMembers(name string, ms ...Member) error {
	z, err := t.zone(name)
	if err != nil {
		return err
	}
	z.Members, err = removeMembers("zone "+name, z.Members, ms)
	return err
}

// CreateAlias adds an alias.
func (t *Tx) CreateAlias(name string, members ...Member) error {
	if err := t.check(); err != nil {
		return err
	}
	if err := ValidateName(name); err != nil {
		return err
	}
	if t.work.Aliases[name] != nil || t.work.Zones[name] != nil {
		return fmt.Errorf("alias %q: %w", name, ErrDuplicate)
	}
	t.work.Aliases[name] = &Alias{Name: name}
	t.own[Key{KindAlias, name}] = true
	return t.AddAliasMembers(name, members...)
}

// DeleteAlias removes an alias; zones that still use it fail Commit.
func (t *Tx) DeleteAlias(name string) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.work.Aliases[name] == nil {
		return fmt.Errorf("alias %q: %w", name, ErrNotFound)
	}
	delete(t.work.Aliases, name)
	return nil
}

// AddAliasMembers adds members to an alias.
func (t *Tx) AddAliasMembers(name string, ms ...Member) error {
	a, err := t.alias(name)
	if err != nil {
		return err
	}
	a.Members, err = addMembers("alias "+name, a.Members, ms)
	return err
}

// RemoveAliasMembers removes members from an alias.
func (t *Tx) RemoveAliasMembers(name string, ms ...Member) error {
	a, err := t.alias(name)
	if err != nil {
		return err
	}
	a.Members, err = removeMembers("alias "+name, a.Members, ms)
	return err
}

// SetSettings replaces the fabric settings.
func (t *Tx) SetSettings(st Settings) error {
	if err := t.check(); err != nil {
		return err
	}
	t.work.Settings = st
	return nil
}

// SetPin pins nqn to the locations, replacing its pin if it has one.
func (t *Tx) SetPin(nqn string, at ...Location) error {
	if err := t.check(); err != nil {
		return err
	}
	p, err := NewPin(nqn, at...)
	if err != nil {
		return err
	}
	t.work.Pins[nqn] = p
	return nil
}

// RemovePin removes the pin of nqn: any device may claim it again.
func (t *Tx) RemovePin(nqn string) error {
	if err := t.check(); err != nil {
		return err
	}
	if t.work.Pins[nqn] == nil {
		return fmt.Errorf("pin %q: %w", nqn, ErrNotFound)
	}
	delete(t.work.Pins, nqn)
	return nil
}

// Note describes the transaction for the journal entry Commit writes.
func (t *Tx) Note(n Note) { t.note = n }

// Entry returns the journal entry Commit wrote (false if it wrote none).
func (t *Tx) Entry() (Entry, bool) {
	if t.entry == nil {
		return Entry{}, false
	}
	return *t.entry, true
}

// Abort drops the transaction.
func (t *Tx) Abort() { t.done = true }

// Commit validates the staged configuration and writes the changed objects
// atomically, each with a new generation and this reflector's router-id,
// with a journal entry (Entry) that notes them, what they replaced and the
// Note. It returns the records written (none if nothing changed). It fails
// with ErrConflict if the store changed since Begin.
func (t *Tx) Commit() ([]Record, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if err := t.work.Validate(); err != nil {
		return nil, fmt.Errorf("zones: commit refused: %w", err)
	}
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revision != t.revision {
		return nil, ErrConflict
	}
	t.done = true
	changed := changedRecords(t.base, t.work)
	if len(changed) == 0 {
		return nil, nil
	}
	e := Entry{Identity: t.note.Identity, Via: t.note.Via, Action: t.note.Action, Revision: t.note.Revision,
		Summary: summarize(s.records, changed)}
	if e.Action == "" {
		e.Action = ActionCommit
	}
	for i := range changed {
		changed[i].Version = Version{Gen: s.clock.Next(), RouterID: s.opts.RouterID}
		c := Write{Key: changed[i].Key, New: changed[i].Version, Deleted: changed[i].Deleted}
		if old, ok := s.records[changed[i].Key]; ok {
			c.Base = old.Version
			if !old.Deleted {
				c.Before = &old
			}
		}
		e.Writes = append(e.Writes, c)
	}
	e.Version = Version{Gen: s.clock.Next(), RouterID: s.opts.RouterID}
	if err := s.persist(changed, []Entry{e}); err != nil {
		return nil, err // s.records and s.config untouched: the file rolled back
	}
	t.entry = &e
	// The records change in place, once written: every reader of s.records
	// holds s.mu and takes its own copy. The configuration is replaced, not
	// changed: Begin, Pins and Problems read it without a copy.
	for _, r := range changed {
		s.records[r.Key] = r
	}
	s.setConfig(s.config.with(changed))
	s.revision++
	return changed, nil
}

func (t *Tx) check() error {
	if t.done {
		return ErrTxDone
	}
	return nil
}

func (t *Tx) zone(name string) (*Zone, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	z := t.work.Zones[name]
	if z == nil {
		return nil, fmt.Errorf("zone %q: %w", name, ErrNotFound)
	}
	if k := (Key{KindZone, name}); !t.own[k] {
		z = &Zone{Name: z.Name, Members: slices.Clone(z.Members)}
		t.work.Zones[name], t.own[k] = z, true
	}
	return z, nil
}

func (t *Tx) alias(name string) (*Alias, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	a := t.work.Aliases[name]
	if a == nil {
		return nil, fmt.Errorf("alias %q: %w", name, ErrNotFound)
	}
	if k := (Key{KindAlias, name}); !t.own[k] {
		a = &Alias{Name: a.Name, Members: slices.Clone(a.Members)}
		t.work.Aliases[name], t.own[k] = a, true
	}
	return a, nil
}

// addMembers appends add to cur, or returns cur and an error if any member
// is invalid or already there; it takes time linear in both (a zone may
// hold thousands).
func addMembers(owner string, cur, add []Member) ([]Member, error) {
	have := make(map[Member]bool, len(cur)+len(add))
	for _, m := range cur {
		have[m] = true
	}
	out := cur
	for _, m := range add {
		if err := m.Validate(); err != nil {
			return cur, fmt.Errorf("%s: %w", owner, err)
		}
		if have[m] {
			return cur, fmt.Errorf("%s member %s: %w", owner, m, ErrDuplicate)
		}
		have[m] = true
		out = append(out, m)
	}
	return out, nil
}

// removeMembers removes rm from cur, keeping the order of the rest.
func removeMembers(owner string, cur, rm []Member) ([]Member, error) {
	drop := make(map[Member]bool, len(rm))
	for _, m := range rm {
		drop[m] = true
	}
	out := slices.DeleteFunc(slices.Clone(cur), func(m Member) bool { return drop[m] })
	if len(out) != len(cur)-len(drop) {
		for _, m := range rm {
			if !slices.Contains(cur, m) {
				return cur, fmt.Errorf("%s member %s: %w", owner, m, ErrNotFound)
			}
		}
	}
	return out, nil
}

// changedRecords lists the records (without versions) that turn old into
// new: changed or new objects, and tombstones for deleted ones.
func changedRecords(old, new *Config) []Record {
	var out []Record
	if old.Settings != new.Settings {
		out = append(out, Record{Key: Key{Kind: KindSettings}, Settings: new.Settings})
	}
	var written, deleted []string // zones, each sorted: only the changed ones
	for name, z := range new.Zones {
		if oz := old.Zones[name]; oz == nil || (oz != z && !slices.Equal(oz.Members, z.Members)) {
			written = append(written, name)
		}
	}
	for name := range old.Zones {
		if new.Zones[name] == nil {
			deleted = append(deleted, name)
		}
	}
	slices.Sort(written)
	slices.Sort(deleted)
	for _, name := range written {
		out = append(out, Record{Key: Key{KindZone, name}, Members: append([]Member(nil), new.Zones[name].Members...)})
	}
	for _, name := range deleted {
		out = append(out, Record{Key: Key{KindZone, name}, Deleted: true})
	}
	for name, a := range new.Aliases {
		if oa := old.Aliases[name]; oa == nil || (oa != a && !slices.Equal(oa.Members, a.Members)) {
			out = append(out, Record{Key: Key{KindAlias, name}, Members: append([]Member(nil), a.Members...)})
		}
	}
	for name := range old.Aliases {
		if new.Aliases[name] == nil {
			out = append(out, Record{Key: Key{KindAlias, name}, Deleted: true})
		}
	}
	for _, nqn := range PinsChanged(old, new) {
		if p := new.Pins[nqn]; p != nil {
			out = append(out, Record{Key: Key{KindPin, nqn}, At: append([]Location(nil), p.At...)})
		} else {
			out = append(out, Record{Key: Key{KindPin, nqn}, Deleted: true})
		}
	}
	return out
}
