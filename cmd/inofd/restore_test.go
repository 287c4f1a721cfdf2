package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/zones"
)

// TestRestoreCommand: `inofd restore --config FILE BACKUP` installs a store
// backup in the configured state directory and says what came back; run
// again, it refuses to overwrite it.
func TestRestoreCommand(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	backup := writeBackup(t, dir, time.Now)
	state := filepath.Join(dir, "state")
	cfg := writeRestoreConfig(t, dir, state)
	d := startDaemon(t, bin, nil, "restore", "--config", cfg, backup)
	if code := d.wait(t); code != 0 || !strings.Contains(d.out.String(), "1 zones") {
		t.Fatalf("restore: exit %d:\n%s", code, d.out.String())
	}
	s, err := zones.Open(filepath.Join(state, "zones.db"), zones.StoreOptions{RouterID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Config().Zones["web"] == nil {
		t.Fatal("zone web not restored")
	}
	s.Close()
	d = startDaemon(t, bin, nil, "restore", "--config", cfg, backup)
	if code := d.wait(t); code != 1 || !strings.Contains(d.out.String(), "already holds a store") {
		t.Fatalf("second restore: exit %d:\n%s", code, d.out.String())
	}
}

// TestRestoreRefusals: a truncated, flipped, missing or foreign backup, a
// store in use and a backup from the future are refused with exit 1 and
// one line (no usage, no panic), with --force too, and leave nothing in
// the state directory; a usage mistake exits 64; --accept-future-clock
// takes the future backup.
func TestRestoreRefusals(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	backup := writeBackup(t, dir, time.Now)
	whole, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte(nil), whole...)
	flipped[len(flipped)/2] ^= 1
	future := writeBackup(t, t.TempDir(), func() time.Time { return time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) })
	state := filepath.Join(dir, "state")
	cfg := writeRestoreConfig(t, dir, state)
	for _, tc := range []struct {
		name, backup, want string
	}{
		{"truncated", file("t.backup", whole[:10000]), "truncated"},
		{"flipped", file("f.backup", flipped), "checksum mismatch"},
		{"garbage", file("g.backup", []byte("hello\n")), "neither an inofctl backup nor a store file"},
		{"missing", filepath.Join(dir, "nope.backup"), "no such file"},
		{"future", future, "ahead of this host's clock"},
	} {
		for _, force := range []bool{false, true} {
			args := []string{"restore", "--config", cfg, tc.backup}
			if force {
				args = append(args, "--force")
			}
			d := startDaemon(t, bin, nil, args...)
			code := d.wait(t)
			out := d.out.String()
			if code != 1 || !strings.Contains(out, tc.want) || strings.Count(out, "\n") != 1 ||
				strings.Contains(out, "Usage") || strings.Contains(out, "goroutine") {
				t.Errorf("%s (force %v): exit %d:\n%s", tc.name, force, code, out)
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Fatalf("%s: left %v behind", tc.name, ents)
			}
		}
	}
	d := startDaemon(t, bin, nil, "restore", "--config", cfg)
	if code := d.wait(t); code != 64 || !strings.Contains(d.out.String(), "Usage") {
		t.Errorf("no backup argument: exit %d:\n%s", code, d.out.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("router_id: 10.0.0.1\nstate_dirr: /x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, bin, nil, "restore", "--config", bad, backup)
	if code := d.wait(t); code != 78 || !strings.Contains(d.out.String(), "unknown key state_dirr (did you mean state_dir?)") ||
		strings.Count(d.out.String(), "invalid configuration") != 1 {
		t.Errorf("invalid configuration: exit %d:\n%s", code, d.out.String())
	}
	// A running reflector holds the store: refused, the store untouched.
	d = startDaemon(t, bin, nil, "restore", "--config", cfg, backup)
	if code := d.wait(t); code != 0 {
		t.Fatalf("restore: exit %d:\n%s", code, d.out.String())
	}
	held, err := zones.Open(filepath.Join(state, "zones.db"), zones.StoreOptions{RouterID: 1})
	if err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, bin, nil, "restore", "--config", cfg, "--force", backup)
	if code := d.wait(t); code != 1 || !strings.Contains(d.out.String(), "stop the reflector first") || strings.Count(d.out.String(), "\n") != 1 {
		t.Errorf("store in use: exit %d:\n%s", code, d.out.String())
	}
	held.Close()
	if ents, _ := os.ReadDir(state); len(ents) != 1 {
		t.Errorf("store in use: state holds %v", ents)
	}
	d = startDaemon(t, bin, nil, "restore", "--config", cfg, "--force", "--accept-future-clock", future)
	if code := d.wait(t); code != 0 {
		t.Errorf("future, accepted: exit %d:\n%s", code, d.out.String())
	}
}

// writeBackup writes a backup (inofctl backup's format) of a store holding
// zone web, written at now, into dir.
func writeBackup(t *testing.T, dir string, now func() time.Time) string {
	t.Helper()
	src, err := zones.Open(filepath.Join(dir, "src.db"), zones.StoreOptions{RouterID: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tx := src.Begin()
	if err := tx.CreateZone("web", zones.MustParseMember("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Backup(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	return backup
}

// writeRestoreConfig writes a reflector configuration with state directory
// state into dir.
func writeRestoreConfig(t *testing.T, dir, state string) string {
	t.Helper()
	cfg := filepath.Join(dir, "reflector.yaml")
	if err := os.WriteFile(cfg, []byte("asn: 65000\nrouter_id: 10.0.0.1\nstate_dir: "+state+"\nmetrics_listen: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}
