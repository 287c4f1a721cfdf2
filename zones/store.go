package zones

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Store errors.
var (
	ErrConflict = errors.New("configuration changed since the transaction began; begin again")
	ErrTxDone   = errors.New("transaction already committed or aborted")
)

var (
	bucketRecords = []byte("records")
	bucketMeta    = []byte("meta")
	keyClock      = []byte("clock")
)

// DefaultTombstoneRetention is how long deletions are remembered.
const DefaultTombstoneRetention = 30 * 24 * time.Hour

// StoreOptions configure Open.
type StoreOptions struct {
	// RouterID identifies this reflector in the versions it writes.
	RouterID uint32
	// LockTimeout bounds the wait for another process holding the file
	// (default 1 s).
	LockTimeout time.Duration
	// Now is the clock for generations (time.Now if nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// Store is the crash-safe zone store of a reflector: a bbolt file holding
// one replication record per zone, alias and the settings. Edits go through
// transactions that validate the whole resulting configuration and commit
// atomically; records from other reflectors are merged with Apply.
type Store struct {
	db    *bolt.DB
	opts  StoreOptions
	clock *Clock
	log   *slog.Logger

	mu       sync.Mutex
	records  Records
	config   *Config
	revision uint64 // bumped by every change, for optimistic transactions
}

// Open opens or creates the store file.
func Open(path string, opts StoreOptions) (*Store, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return nil, fmt.Errorf("zones: open store %s: %w", path, err)
	}
	s := &Store{db: db, opts: opts, clock: NewClock(opts.Now), log: opts.Logger, records: Records{}}
	err = db.Update(func(tx *bolt.Tx) error {
		rb, err := tx.CreateBucketIfNotExists(bucketRecords)
		if err != nil {
			return err
		}
		mb, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := mb.Get(keyClock); len(v) == 8 {
			s.clock.Observe(binary.BigEndian.Uint64(v))
		}
		return rb.ForEach(func(k, v []byte) error {
			var r Record
			if err := r.UnmarshalBinary(v); err != nil {
				return fmt.Errorf("record %q: %w", k, err)
			}
			s.records[r.Key] = r
			s.clock.Observe(r.Gen)
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("zones: load store %s: %w", path, err)
	}
	s.config = s.records.Config()
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

// Records returns every record, tombstones included, sorted.
func (s *Store) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records.Sorted()
}

// Apply merges records received from other reflectors, persists the ones
// that win in one transaction and returns them. Invalid records are skipped
// with an error for each; the rest still apply. A merged configuration may
// reference an alias deleted elsewhere: such a member matches nothing, and
// Problems reports it.
func (s *Store) Apply(in []Record) ([]Record, error) {
	var errs []error
	s.mu.Lock()
	defer s.mu.Unlock()
	next := Records{}
	for k, r := range s.records {
		next[k] = r
	}
	var won []Record
	for _, r := range in {
		if _, err := r.MarshalBinary(); err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", r.Key, err))
			continue
		}
		if next.Apply(r) {
			won = append(won, r)
		}
	}
	if len(won) == 0 {
		return nil, errors.Join(errs...)
	}
	if err := s.persist(won); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	for _, r := range won {
		s.clock.Observe(r.Gen)
	}
	s.records = next
	s.config = next.Config()
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

// Prune forgets tombstones older than retention (DefaultTombstoneRetention
// if zero) and returns how many.
func (s *Store) Prune(now time.Time, retention time.Duration) (int, error) {
	if retention == 0 {
		retention = DefaultTombstoneRetention
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := Records{}
	for k, r := range s.records {
		next[k] = r
	}
	n := next.Prune(now, retention)
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

// persist writes records and the clock in one bbolt transaction.
func (s *Store) persist(rs []Record) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		var top uint64
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
	s        *Store
	base     *Config
	work     *Config
	revision uint64
	done     bool
}

// Begin starts a transaction on the current configuration.
func (s *Store) Begin() *Tx {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Tx{s: s, base: s.config, work: s.config.Clone(), revision: s.revision}
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

// Abort drops the transaction.
func (t *Tx) Abort() { t.done = true }

// Commit validates the staged configuration and writes the changed objects
// atomically, each with a new generation and this reflector's router-id. It
// returns the records written (none if nothing changed). It fails with
// ErrConflict if the store changed since Begin.
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
	next := Records{}
	for k, r := range s.records {
		next[k] = r
	}
	for i := range changed {
		changed[i].Version = Version{Gen: s.clock.Next(), RouterID: s.opts.RouterID}
		next[changed[i].Key] = changed[i]
	}
	if err := s.persist(changed); err != nil {
		return nil, err
	}
	s.records = next
	s.config = next.Config()
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
	return a, nil
}

func addMembers(owner string, cur, add []Member) ([]Member, error) {
	for _, m := range add {
		if err := m.Validate(); err != nil {
			return cur, fmt.Errorf("%s: %w", owner, err)
		}
		if slices.Contains(cur, m) {
			return cur, fmt.Errorf("%s member %s: %w", owner, m, ErrDuplicate)
		}
		cur = append(cur, m)
	}
	return cur, nil
}

func removeMembers(owner string, cur, rm []Member) ([]Member, error) {
	for _, m := range rm {
		i := slices.Index(cur, m)
		if i < 0 {
			return cur, fmt.Errorf("%s member %s: %w", owner, m, ErrNotFound)
		}
		cur = slices.Delete(cur, i, i+1)
	}
	return cur, nil
}

// changedRecords lists the records (without versions) that turn old into
// new: changed or new objects, and tombstones for deleted ones.
func changedRecords(old, new *Config) []Record {
	var out []Record
	if old.Settings != new.Settings {
		out = append(out, Record{Key: Key{Kind: KindSettings}, Settings: new.Settings})
	}
	for _, name := range new.ZoneNames() {
		if oz := old.Zones[name]; oz == nil || !slices.Equal(oz.Members, new.Zones[name].Members) {
			out = append(out, Record{Key: Key{KindZone, name}, Members: append([]Member(nil), new.Zones[name].Members...)})
		}
	}
	for _, name := range old.ZoneNames() {
		if new.Zones[name] == nil {
			out = append(out, Record{Key: Key{KindZone, name}, Deleted: true})
		}
	}
	for name, a := range new.Aliases {
		if oa := old.Aliases[name]; oa == nil || !slices.Equal(oa.Members, a.Members) {
			out = append(out, Record{Key: Key{KindAlias, name}, Members: append([]Member(nil), a.Members...)})
		}
	}
	for name := range old.Aliases {
		if new.Aliases[name] == nil {
			out = append(out, Record{Key: Key{KindAlias, name}, Deleted: true})
		}
	}
	return out
}
