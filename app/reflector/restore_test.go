package reflector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// backupOf writes a backup of a reflector store holding zone x and a
// lossless profile entry, taken at now.
func backupOf(t *testing.T, now time.Time) string {
	t.Helper()
	dir := t.TempDir()
	s, err := zones.Open(filepath.Join(dir, "zones.db"), zones.StoreOptions{RouterID: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx := s.Begin()
	if err := tx.CreateZone("x", zones.MustParseMember("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	p := lossless.Default()
	p.Name = "site-a"
	payload, err := lossless.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Note(zones.Entry{Identity: "user:carol", Action: zones.ActionLossless, Profile: payload}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "backup")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Backup(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRestore: a backup comes back into an empty state directory with its
// zones, journal (plus a restore entry) and lossless profile; a second
// restore, a store in use, a backup older than the tombstone lifetime and
// a file that is no store are refused and change nothing.
func TestRestore(t *testing.T) {
	now := time.Now()
	backup := backupOf(t, now)
	o := testOptions(t, r1ID, nil, nil)
	ro := RestoreOptions{Backup: backup, Identity: "user:root", Via: "test"}
	rep, err := Restore(o, ro)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Zones != 1 || rep.Entries != 2 || !rep.Profile || rep.Replaced != "" {
		t.Fatalf("report %+v", rep)
	}
	s, err := zones.Open(o.StorePath(), zones.StoreOptions{RouterID: 1})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := s.Journal()
	if s.Config().Zones["x"] == nil || len(j) != 3 || j[2].Action != zones.ActionRestore || j[2].Identity != "user:root" {
		t.Fatalf("restored store: %+v, journal %+v", s.Config(), j)
	}
	if b, err := os.ReadFile(o.ProfilePath()); err != nil || !strings.Contains(string(b), "generation") {
		t.Fatalf("profile state: %s %v", b, err)
	}

	// The store is in use (open): refused even with --force.
	if _, err := Restore(o, RestoreOptions{Backup: backup, Force: true}); !errors.Is(err, ErrRestoreRefused) {
		t.Fatalf("store in use: %v", err)
	}
	s.Close()
	if _, err := Restore(o, ro); !errors.Is(err, ErrRestoreRefused) || !strings.Contains(err.Error(), "already holds a store") {
		t.Fatalf("second restore: %v", err)
	}
	rep, err = Restore(o, RestoreOptions{Backup: backup, Force: true})
	if err != nil || rep.Replaced == "" {
		t.Fatalf("forced: %+v %v", rep, err)
	}
	if _, err := os.Stat(rep.Replaced); err != nil {
		t.Fatalf("the replaced store is not kept: %v", err)
	}

	// Older than the tombstone lifetime: deletions may have been forgotten.
	o2 := testOptions(t, r1ID, nil, nil)
	late := RestoreOptions{Backup: backup, Now: func() time.Time { return now.Add(8 * 24 * time.Hour) }}
	if _, err := Restore(o2, late); !errors.Is(err, ErrRestoreRefused) || !strings.Contains(err.Error(), "tombstone lifetime") {
		t.Fatalf("old backup: %v", err)
	}
	if _, err := os.Stat(o2.StorePath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore left a store: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("not a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(o2, RestoreOptions{Backup: junk}); !errors.Is(err, ErrRestoreRefused) || !strings.Contains(err.Error(), "not a usable backup") {
		t.Fatalf("junk: %v", err)
	}
	whole, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut")
	if err := os.WriteFile(cut, whole[:10000], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(o2, RestoreOptions{Backup: cut, Force: true}); !errors.Is(err, zones.ErrBadBackup) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated: %v", err)
	}
	// Dated an hour ahead of this host: refused unless accepted.
	early := RestoreOptions{Backup: backup, Now: func() time.Time { return now.Add(-time.Hour) }}
	if _, err := Restore(o2, early); !errors.Is(err, zones.ErrFutureBackup) || !strings.Contains(err.Error(), "--accept-future-clock") {
		t.Fatalf("future backup: %v", err)
	}
	if ents, err := os.ReadDir(o2.StateDir); err != nil || len(ents) != 0 {
		t.Fatalf("refused restores left files behind: %v %v", ents, err)
	}
	early.AcceptFutureClock = true
	if rep, err := Restore(o2, early); err != nil || !rep.Checksummed {
		t.Fatalf("future backup, accepted: %+v %v", rep, err)
	}
}
