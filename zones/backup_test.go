package zones

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// backupOf returns a store's backup (framed, with its checksum) and its
// bare image (what backups were before the checksum), of a store holding
// a few zones, aliases and journal entries written at clock's time.
func backupOf(t testing.TB, clock *manualClock) (framed, bare []byte) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "zones.db"), StoreOptions{RouterID: 1, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := MustParseMember
	for _, edit := range []func(*Tx) error{
		func(tx *Tx) error { return tx.CreateAlias("rack1", m("10.0.1.0/24")) },
		func(tx *Tx) error { return tx.CreateZone("web", m("10.0.0.1"), m("alias:rack1")) },
		func(tx *Tx) error { return tx.AddZoneMembers("web", m("10.0.0.2")) },
		func(tx *Tx) error { return tx.DeleteZone("web") },
	} {
		tx := s.Begin()
		if err := edit(tx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	var img bytes.Buffer
	if err := s.db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&img); return err }); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), img.Bytes()
}

// verify runs VerifyBackup on b into a new scratch file.
func verify(t testing.TB, b []byte, opts VerifyOptions) (BackupInfo, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scratch.db")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := VerifyBackup(bytes.NewReader(b), f, opts)
	return info, path, err
}

// TestVerifyBackup: a whole backup passes (checksummed or, from before
// checksums, bare) and opens as a store; a truncated, flipped, padded,
// foreign or future-dated one is refused with ErrBadBackup (ErrFutureBackup)
// and a one-line reason.
func TestVerifyBackup(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	framed, bare := backupOf(t, &manualClock{t: at})
	now := func() time.Time { return at.Add(time.Hour) }
	for name, b := range map[string][]byte{"checksummed": framed, "bare": bare} {
		info, path, err := verify(t, b, VerifyOptions{Now: now})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info.Checksummed != (name == "checksummed") || info.Records != 2 || info.Entries != 4 || info.Newest == 0 {
			t.Errorf("%s: %+v", name, info)
		}
		s := openStore(t, path, 1)
		if c := s.Config(); c.Aliases["rack1"] == nil || c.Zones["web"] != nil {
			t.Errorf("%s: restored %+v", name, c)
		}
	}
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x40
		return c
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", framed[:10000], "truncated"},
		{"flipped", flip(framed, len(framed)/2), "checksum mismatch"},
		{"padded", append(bytes.Clone(framed), 0), "bytes after its end"},
		{"empty", nil, "neither an inofctl backup nor a store file"},
		{"text", []byte("zones:\n  web: [10.0.0.1]\n"), "neither an inofctl backup nor a store file"},
		{"bare truncated", bare[:len(bare)-4096], "truncated store file"},
		{"bare short page", bare[:len(bare)-100], "not a whole number"},
		{"bare metas", flip(flip(bare, 16+40), 4096+16+40), "no valid meta page"},
		{"bare header only", framed[:12], "truncated in its header"},
	} {
		_, _, err := verify(t, tc.b, VerifyOptions{Now: now})
		if !errors.Is(err, ErrBadBackup) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) ||
			bytes.Contains([]byte(err.Error()), []byte("\n")) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	past := func() time.Time { return at.Add(-time.Hour) }
	if _, _, err := verify(t, framed, VerifyOptions{Now: past}); !errors.Is(err, ErrFutureBackup) {
		t.Errorf("backup an hour ahead: %v, want ErrFutureBackup", err)
	}
	_, path, err := verify(t, framed, VerifyOptions{Now: past, AcceptFutureClock: true})
	if err != nil {
		t.Fatalf("backup an hour ahead, accepted: %v", err)
	}
	// Opened, the store's generation clock is that far ahead.
	s, err := Open(path, StoreOptions{RouterID: 1, Now: past})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ahead := s.ClockAhead(); ahead < time.Hour || ahead > time.Hour+time.Minute {
		t.Errorf("clock ahead %v, want about 1h", ahead)
	}
	if s2 := openStore(t, filepath.Join(t.TempDir(), "new.db"), 1); s2.ClockAhead() != 0 {
		t.Errorf("a new store's clock is %v ahead", s2.ClockAhead())
	}
}

// FuzzVerifyBackup: VerifyBackup on any input returns, without a panic or
// a fault (bbolt maps the file and trusts its page ids); what it accepts
// opens as a store.
func FuzzVerifyBackup(f *testing.F) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	framed, bare := backupOf(f, &manualClock{t: at})
	f.Add(framed)
	f.Add(bare)
	f.Add(bare[:10000])
	f.Add(framed[:10000])
	dir := f.TempDir()
	now := func() time.Time { return at }
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "scratch.db")
		os.Remove(path)
		sf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer sf.Close()
		if _, err := VerifyBackup(bytes.NewReader(b), sf, VerifyOptions{Now: now, AcceptFutureClock: true}); err != nil {
			if !errors.Is(err, ErrBadBackup) {
				t.Fatalf("not ErrBadBackup: %v", err)
			}
			return
		}
		s, err := Open(path, StoreOptions{RouterID: 1, Now: now})
		if err != nil {
			t.Fatalf("verified backup does not open: %v", err)
		}
		s.Close()
	})
}
