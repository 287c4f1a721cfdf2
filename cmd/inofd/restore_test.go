package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/zones"
)

// TestRestoreCommand: `inofd restore --config FILE BACKUP` installs a store
// backup in the configured state directory and says what came back; run
// again, it refuses to overwrite it.
func TestRestoreCommand(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	src, err := zones.Open(filepath.Join(dir, "src.db"), zones.StoreOptions{RouterID: 1})
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
	f.Close()
	src.Close()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "reflector.yaml")
	if err := os.WriteFile(cfg, []byte("asn: 65000\nrouter_id: 10.0.0.1\nstate_dir: "+state+"\nmetrics_listen: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
	if code := d.wait(t); code == 0 || !strings.Contains(d.out.String(), "already holds a store") {
		t.Fatalf("second restore: exit %d:\n%s", code, d.out.String())
	}
}
