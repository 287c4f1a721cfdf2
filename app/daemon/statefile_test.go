package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStateRoundTripAndVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	var got map[string]int
	if ok, err := LoadState(path, 1, &got); ok || err != nil {
		t.Fatalf("missing file: ok %v err %v", ok, err)
	}
	if err := SaveState(path, 1, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := LoadState(path, 1, &got); !ok || err != nil || got["a"] != 1 {
		t.Fatalf("load: %v %v %v", got, ok, err)
	}
	if _, err := LoadState(path, 2, &got); err == nil || !strings.Contains(err.Error(), "version 1, want 2") {
		t.Fatalf("other version: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, err %v", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(path, 1, &got); err == nil {
		t.Fatal("a torn file loaded")
	}
}
