package hostagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStateFileRoundTrip: what is saved loads back; the directory holds
// only the state file (no temporary left behind); an empty state is an
// empty list, a missing file no state, another version an error.
func TestStateFileRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	path := filepath.Join(dir, "state.json")
	if cs, err := loadState(path); err != nil || cs != nil {
		t.Fatalf("missing file: %v %v", cs, err)
	}
	want := []ownedController{
		{Path: Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN}, Device: "nvme3"},
		{Path: Path{Transport: "rdma", TrAddr: "fd00::1", TrSvcID: "4420", HostTrAddr: "fd00::2", SubNQN: "nqn.x:b"}, Device: "nvme4"},
	}
	if err := saveState(path, want); err != nil {
		t.Fatal(err)
	}
	if err := saveState(path, want[:1]); err != nil { // replaces, not appends
		t.Fatal(err)
	}
	got, err := loadState(path)
	if err != nil || !slices.Equal(got, want[:1]) {
		t.Fatalf("loaded %+v %v", got, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "state.json" {
		t.Fatalf("directory holds %v %v", ents, err)
	}
	if err := saveState(path, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := loadState(path); err != nil || len(got) != 0 {
		t.Fatalf("empty state: %+v %v", got, err)
	}
	if err := os.WriteFile(path, []byte(`{"version":2,"controllers":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(path); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2: %v", err)
	}
}
