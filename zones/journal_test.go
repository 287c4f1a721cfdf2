package zones

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openinof/inof/inof"
)

func commitTx(t *testing.T, s *Store, n Note, edit func(*Tx) error) Entry {
	t.Helper()
	tx := s.Begin()
	tx.Note(n)
	if err := edit(tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, ok := tx.Entry()
	if !ok {
		t.Fatal("commit wrote no journal entry")
	}
	return e
}

func TestJournalHistory(t *testing.T) {
	m := MustParseMember
	path := filepath.Join(t.TempDir(), "zones.db")
	s := openStore(t, path, 7)
	e1 := commitTx(t, s, Note{Identity: "user:alice", Via: "unix", Revision: "r1"}, func(tx *Tx) error {
		return tx.CreateZone("web", m("10.0.0.1"), m("10.0.0.2"))
	})
	c1 := s.Config()
	e2 := commitTx(t, s, Note{Identity: "user:bob"}, func(tx *Tx) error {
		if err := tx.AddZoneMembers("web", m("10.0.0.3")); err != nil {
			return err
		}
		return tx.RemoveZoneMembers("web", m("10.0.0.1"))
	})
	e3 := commitTx(t, s, Note{Identity: "user:carol"}, func(tx *Tx) error {
		if err := tx.DeleteZone("web"); err != nil {
			return err
		}
		return tx.CreateAlias("red", m("10.1.0.0/16"))
	})
	if e1.Summary != "zone web: created (2 members)" || e2.Summary != "zone web: +1 -1" ||
		e3.Summary != "zone web: deleted; alias red: created (1 members)" {
		t.Fatalf("summaries: %q / %q / %q", e1.Summary, e2.Summary, e3.Summary)
	}
	if e1.Action != ActionCommit || e1.Identity != "user:alice" || e1.Revision != "r1" || e1.RouterID != 7 {
		t.Fatalf("entry 1: %+v", e1)
	}
	if w := e2.Writes[0]; w.Base != e1.Writes[0].New || w.Before == nil || len(w.Before.Members) != 2 {
		t.Fatalf("entry 2 write: %+v", w)
	}
	// Reopen: the journal survives and rebuilds every revision.
	s.Close()
	s = openStore(t, path, 7)
	j, err := s.Journal()
	if err != nil || len(j) != 3 {
		t.Fatalf("journal after reopen: %d entries, %v", len(j), err)
	}
	at1, ok, err := s.ConfigAt(e1.Version)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := at1.Zones["web"]; got == nil || len(got.Members) != 2 || len(at1.Aliases) != 0 {
		t.Fatalf("config at 1: %+v", at1)
	}
	if !equalConfig(at1, c1) {
		t.Fatal("config at 1 differs from the committed one")
	}
	at3, _, _ := s.ConfigAt(e3.Version)
	if !equalConfig(at3, s.Config()) {
		t.Fatal("config at the newest entry differs from the current one")
	}
	if _, ok, _ := s.ConfigAt(Version{Gen: 1, RouterID: 7}); ok {
		t.Fatal("an unknown version rebuilt")
	}
}

func equalConfig(a, b *Config) bool {
	return bytes.Equal(mustRecords(a), mustRecords(b))
}

func mustRecords(c *Config) []byte {
	var out []byte
	for _, r := range changedRecords(NewConfig(Settings{}), c) {
		b, _ := r.MarshalBinary()
		out = append(out, b...)
	}
	return out
}

func TestJournalBound(t *testing.T) {
	m := MustParseMember
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "a.db"), StoreOptions{RouterID: 1, HistorySize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var es []Entry
	for i := range 5 {
		es = append(es, commitTx(t, s, Note{}, func(tx *Tx) error {
			return tx.CreateAlias("a"+string(rune('a'+i)), m("10.0.0.1"))
		}))
	}
	vs := s.JournalVersions()
	if len(vs) != 3 || vs[0] != es[2].Version {
		t.Fatalf("kept %v", vs)
	}
	// A peer offering the dropped entries cannot bring them back; newer
	// entries are taken, and the bound holds.
	b, err := Open(filepath.Join(dir, "b.db"), StoreOptions{RouterID: 2, HistorySize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.AddEntries(es)
	if len(got) != 3 || err != nil {
		t.Fatalf("first merge: %d entries, %v", len(got), err)
	}
	if _, err := b.AddEntries(es[:2]); !errors.Is(err, ErrOutsideHistory) {
		t.Fatalf("old entries: %v", err)
	}
	if again, err := b.AddEntries(es[2:]); len(again) != 0 || err != nil {
		t.Fatalf("same entries again: %v %v", again, err)
	}
	if vb := b.JournalVersions(); len(vb) != 3 || vb[0] != es[2].Version {
		t.Fatalf("peer kept %v", vb)
	}
}

func TestJournalConflicts(t *testing.T) {
	m := MustParseMember
	dir := t.TempDir()
	a := openStore(t, filepath.Join(dir, "a.db"), 1)
	b := openStore(t, filepath.Join(dir, "b.db"), 2)
	base := commitTx(t, a, Note{}, func(tx *Tx) error { return tx.CreateZone("x", m("10.0.0.1")) })
	recs := a.Records()
	if _, err := b.Apply(recs); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddEntries([]Entry{base}); err != nil {
		t.Fatal(err)
	}
	// Both edit zone x on the same base, as two reflectors cut apart do.
	ea := commitTx(t, a, Note{Identity: "user:alice"}, func(tx *Tx) error { return tx.AddZoneMembers("x", m("10.0.0.2")) })
	eb := commitTx(t, b, Note{Identity: "user:bob"}, func(tx *Tx) error { return tx.AddZoneMembers("x", m("10.0.0.3")) })
	if cs, _ := a.Conflicts(); len(cs) != 0 {
		t.Fatalf("a sequence is no conflict: %+v", cs)
	}
	// The reflectors meet: each takes the other's records and entries.
	ra, rb := a.Records(), b.Records()
	for _, x := range []struct {
		s    *Store
		recs []Record
	}{{a, rb}, {b, ra}} {
		if _, err := x.s.Apply(x.recs); err != nil {
			t.Fatal(err)
		}
		if _, err := x.s.AddEntries([]Entry{ea, eb}); err != nil {
			t.Fatal(err)
		}
	}
	ca, _ := a.Conflicts()
	cb, _ := b.Conflicts()
	if len(ca) != 1 || len(cb) != 1 || ca[0].Key != (Key{KindZone, "x"}) || len(ca[0].Lost) != 1 {
		t.Fatalf("conflicts: %+v / %+v", ca, cb)
	}
	if ca[0].Winner != eb.Version || cb[0].Winner != eb.Version || ca[0].Lost[0] != ea.Version || cb[0].Lost[0] != ea.Version {
		t.Fatalf("a: %+v, b: %+v; want %v lost to %v (the newer write)", ca[0], cb[0], ea.Version, eb.Version)
	}
	// Alice, told, edits again on top of what is in effect: no new conflict.
	e3 := commitTx(t, a, Note{Identity: "user:alice"}, func(tx *Tx) error { return tx.AddZoneMembers("x", m("10.0.0.2")) })
	if e3.Writes[0].Base != eb.Writes[0].New {
		t.Fatalf("the new edit is not on the write in effect: %+v", e3.Writes[0])
	}
	if cs, _ := a.Conflicts(); len(cs) != 1 || len(cs[0].Lost) != 0 || len(cs[0].Resolved) != 1 || cs[0].Winner != e3.Version {
		t.Fatalf("after the fix: %+v (want the lost edit resolved)", cs)
	}
}

func TestJournalEncoding(t *testing.T) {
	e := Entry{Version: Version{Gen: 42, RouterID: inof.RouterID(9)}, Identity: "token:ci", Action: ActionRollback,
		Writes: []Write{{Key: Key{KindZone, "z"}, Base: Version{Gen: 3, RouterID: 1}, New: Version{Gen: 41, RouterID: 9},
			Before: &Record{Key: Key{KindZone, "z"}, Version: Version{Gen: 3, RouterID: 1}, Members: []Member{MustParseMember("nqn.2014-08.org.example:a")}}}}}
	b, err := e.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got Entry
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := got.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
	for _, bad := range []string{"", "{}", `{"format":2,"gen":1,"action":"commit"}`, `{"format":1,"gen":1,"action":"x","changes":[{"kind":2,"name":"z","before":"AAAA"}]}`} {
		if err := new(Entry).UnmarshalBinary([]byte(bad)); !errors.Is(err, ErrJournal) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if v, err := ParseEntryID(e.ID()); err != nil || v != e.Version {
		t.Fatalf("id %s: %v %v", e.ID(), v, err)
	}
}

func TestStoreBackup(t *testing.T) {
	m := MustParseMember
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "zones.db"), 1)
	commitTx(t, s, Note{}, func(tx *Tx) error { return tx.CreateZone("x", m("10.0.0.1")) })
	var buf bytes.Buffer
	n, err := s.Backup(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatal(n, err)
	}
	// The store stays usable and the copy opens as a store of its own.
	commitTx(t, s, Note{}, func(tx *Tx) error { return tx.CreateZone("y") })
	path := filepath.Join(dir, "copy.db")
	scratch, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	if info, err := VerifyBackup(&buf, scratch, VerifyOptions{}); err != nil || !info.Checksummed || info.Records != 1 {
		t.Fatalf("verify: %+v %v", info, err)
	}
	c := openStore(t, path, 1)
	if cfg := c.Config(); cfg.Zones["x"] == nil || cfg.Zones["y"] != nil || len(c.JournalVersions()) != 1 {
		t.Fatalf("restored copy: %+v, journal %v", cfg, c.JournalVersions())
	}
}

// TestConfigAtIncomplete: a record newer than a revision whose journal
// entry has not arrived makes the revision unbuildable (not silently
// wrong); once the entry is there it rebuilds.
func TestConfigAtIncomplete(t *testing.T) {
	m := MustParseMember
	dir := t.TempDir()
	a := openStore(t, filepath.Join(dir, "a.db"), 1)
	b := openStore(t, filepath.Join(dir, "b.db"), 2)
	e1 := commitTx(t, a, Note{}, func(tx *Tx) error { return tx.CreateZone("x", m("10.0.0.1")) })
	if _, err := b.Apply(a.Records()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddEntries([]Entry{e1}); err != nil {
		t.Fatal(err)
	}
	e2 := commitTx(t, b, Note{}, func(tx *Tx) error { return tx.AddZoneMembers("x", m("10.0.0.2")) })
	if _, err := a.Apply(b.Records()); err != nil { // the record first
		t.Fatal(err)
	}
	if _, _, err := a.ConfigAt(e1.Version); !errors.Is(err, ErrHistoryIncomplete) {
		t.Fatalf("without the entry: %v", err)
	}
	if _, err := a.AddEntries([]Entry{e2}); err != nil {
		t.Fatal(err)
	}
	c, _, err := a.ConfigAt(e1.Version)
	if err != nil || len(c.Zones["x"].Members) != 1 {
		t.Fatalf("with the entry: %+v %v", c, err)
	}
}
