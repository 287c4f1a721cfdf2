package zones

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// checkConfigOfRecords fails unless the store's configuration in force is
// the one its records describe, and the one its file gives when opened.
func checkConfigOfRecords(t *testing.T, what string, s *Store) {
	t.Helper()
	s.mu.Lock()
	got, want := s.config, s.records.Config()
	pins := *s.pins.Load()
	s.mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: configuration in force\n %+v\nthe records give\n %+v", what, got, want)
	}
	if !reflect.DeepEqual(pins, got.Pins) {
		t.Fatalf("%s: Pins %v, configuration's %v", what, pins, got.Pins)
	}
}

// TestStoreConfigFollowsRecords: after random commits (every kind,
// deletions, re-creations) and merges of their records in random batches
// (repeated keys, stale versions) the configuration a store keeps up to
// date is the one its records describe, and the one its file opens to.
func TestStoreConfigFollowsRecords(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 45))
			dir := t.TempDir()
			clock := &manualClock{t: time.Now()}
			a := openStoreAt(t, filepath.Join(dir, "a.db"), 1, clock)
			b := openStoreAt(t, filepath.Join(dir, "b.db"), 2, clock)
			m := func() Member { return MustParseMember(fmt.Sprintf("10.0.%d.%d", r.IntN(4), 1+r.IntN(200))) }
			var sent []Record
			for step := range 60 {
				clock.add(time.Millisecond)
				tx := a.Begin()
				for range 1 + r.IntN(3) {
					zone, alias, nqn := fmt.Sprintf("z%d", r.IntN(5)), fmt.Sprintf("a%d", r.IntN(3)), fmt.Sprintf("nqn.2014-08.org.example:d%d", r.IntN(3))
					switch r.IntN(9) {
					case 0:
						_ = tx.CreateZone(zone, m())
					case 1:
						_ = tx.DeleteZone(zone)
					case 2:
						_ = tx.AddZoneMembers(zone, m())
					case 3:
						if z := tx.Config().Zones[zone]; z != nil && len(z.Members) > 0 {
							_ = tx.RemoveZoneMembers(zone, z.Members[r.IntN(len(z.Members))])
						}
					case 4:
						_ = tx.CreateAlias(alias, m())
					case 5:
						_ = tx.DeleteAlias(alias)
					case 6:
						_ = tx.AddAliasMembers(alias, m())
					case 7:
						_ = tx.SetSettings(Settings{DefaultZoneEnabled: r.IntN(2) == 0, HardZoning: r.IntN(2) == 0})
					default:
						if r.IntN(2) == 0 {
							_ = tx.SetPin(nqn, Location{Switch: 1, Port: fmt.Sprintf("Ethernet%d", r.IntN(4))})
						} else {
							_ = tx.RemovePin(nqn)
						}
					}
				}
				recs, err := tx.Commit()
				if err != nil && !errors.Is(err, ErrUnknown) && !errors.Is(err, ErrAliasNested) {
					t.Fatalf("step %d: %v", step, err)
				}
				checkConfigOfRecords(t, fmt.Sprintf("a after commit %d", step), a)
				sent = append(sent, recs...)
				if r.IntN(3) == 0 && len(sent) > 0 {
					batch := make([]Record, 0, len(sent))
					for _, i := range r.Perm(len(sent)) { // stale versions and repeated keys among them
						if r.IntN(2) == 0 {
							batch = append(batch, sent[i])
						}
					}
					if _, err := b.Apply(batch); err != nil {
						t.Fatalf("step %d: apply: %v", step, err)
					}
					checkConfigOfRecords(t, fmt.Sprintf("b after merge %d", step), b)
				}
			}
			if _, err := b.Apply(sent); err != nil {
				t.Fatal(err)
			}
			checkConfigOfRecords(t, "b after every record", b)
			if !reflect.DeepEqual(a.Config(), b.Config()) {
				t.Fatalf("a and b differ:\n %+v\n %+v", a.Config(), b.Config())
			}
			for _, s := range []*Store{a, b} {
				inForce := s.Config()
				path := s.db.Path()
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				re, err := Open(path, StoreOptions{RouterID: s.opts.RouterID, Now: clock.now})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(re.Config(), inForce) {
					t.Fatalf("%s opens to\n %+v\nwhile it had in force\n %+v", path, re.Config(), inForce)
				}
				re.Close()
			}
		})
	}
}

// TestCommitNotWrittenChangesNothing: a commit the file refuses leaves the
// records and the configuration as they were.
func TestCommitNotWrittenChangesNothing(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "z.db"), StoreOptions{RouterID: 1})
	if err != nil {
		t.Fatal(err)
	}
	tx := s.Begin()
	if err := tx.CreateZone("z", MustParseMember("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	recs, cfg := s.Records(), s.Config()
	tx = s.Begin()
	if err := tx.AddZoneMembers("z", MustParseMember("10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("y"); err != nil {
		t.Fatal(err)
	}
	s.db.Close() // every write fails from here
	if _, err := tx.Commit(); err == nil {
		t.Fatal("a commit to a closed file succeeded")
	}
	if !reflect.DeepEqual(s.Records(), recs) || !reflect.DeepEqual(s.Config(), cfg) {
		t.Fatalf("a commit not written changed the store: %+v / %+v", s.Records(), s.Config())
	}
	if _, err := s.Apply([]Record{{Key: Key{KindZone, "x"}, Version: Version{Gen: s.Generation() + 1, RouterID: 2}}}); err == nil {
		t.Fatal("a merge into a closed file succeeded")
	}
	if !reflect.DeepEqual(s.Records(), recs) || !reflect.DeepEqual(s.Config(), cfg) {
		t.Fatalf("a merge not written changed the store: %+v / %+v", s.Records(), s.Config())
	}
}

// TestConcurrentTxsOwnTheirEdits: transactions begun on the same
// configuration edit the same zone and alias at once, while readers read
// the configuration in force: each sees only its own edits, the one that
// commits first wins, the other gets ErrConflict, and the configuration a
// transaction began on never changes.
func TestConcurrentTxsOwnTheirEdits(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "z.db"), StoreOptions{RouterID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx := s.Begin()
	if err := tx.CreateAlias("a", MustParseMember("10.9.0.1")); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("z", MustParseMember("10.0.0.1"), MustParseMember("alias:a")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	before := s.Config()
	const n = 4
	txs := make([]*Tx, n)
	for i := range txs {
		txs[i] = s.Begin()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c := s.Config(); c.Zones["z"] == nil || c.Validate() != nil {
				t.Error("configuration in force broken")
				return
			}
			_ = s.Pins()
		}
	})
	var edits sync.WaitGroup
	for i, tx := range txs {
		edits.Go(func() {
			for j := range 50 {
				if err := tx.AddZoneMembers("z", MustParseMember(fmt.Sprintf("10.%d.1.%d", i, j+1))); err != nil {
					t.Error(err)
				}
				if err := tx.AddAliasMembers("a", MustParseMember(fmt.Sprintf("10.%d.2.%d", i, j+1))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	edits.Wait()
	for i, tx := range txs {
		z, a := tx.Config().Zones["z"].Members, tx.Config().Aliases["a"].Members
		if len(z) != 52 || len(a) != 51 || z[2] != MustParseMember(fmt.Sprintf("10.%d.1.1", i)) || a[50] != MustParseMember(fmt.Sprintf("10.%d.2.50", i)) {
			t.Fatalf("tx %d staged zone %v alias %v: not only its own edits", i, z, a)
		}
		if !reflect.DeepEqual(tx.base, before) {
			t.Fatalf("tx %d: the configuration it began on changed", i)
		}
	}
	won, err := txs[1].Commit()
	if err != nil || len(won) != 2 {
		t.Fatalf("first commit: %d records, %v", len(won), err)
	}
	for i, tx := range txs {
		if i != 1 {
			if _, err := tx.Commit(); !errors.Is(err, ErrConflict) {
				t.Fatalf("tx %d: %v, want ErrConflict", i, err)
			}
		}
	}
	close(stop)
	readers.Wait()
	if !reflect.DeepEqual(txs[1].Config(), s.Config()) {
		t.Fatalf("in force\n %+v\nwant the winner's\n %+v", s.Config(), txs[1].Config())
	}
	if !reflect.DeepEqual(txs[0].base, before) {
		t.Fatal("the configuration transactions began on changed with the commit")
	}
	checkConfigOfRecords(t, "after the commit", s)
}
