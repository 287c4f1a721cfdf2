package hostagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// ownedController is a controller this agent created.
type ownedController struct {
	Path
	Device string `json:"device"` // the name at creation; the kernel may reuse it
}

type stateFile struct {
	Version     int               `json:"version"`
	Controllers []ownedController `json:"controllers"`
}

// loadState reads the state file; a missing file is an empty state.
func loadState(path string) ([]ownedController, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state file: %w", err)
	}
	var s stateFile
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("state file %s: version %d, want %d", path, s.Version, stateVersion)
	}
	return s.Controllers, nil
}

// saveState writes the state crash-safely: a temporary file in the same
// directory, fsync, rename over the old one, fsync of the directory. A
// crash leaves either the old or the new file, never a torn one.
func saveState(path string, cs []ownedController) error {
	cs = slices.Clone(cs)
	if cs == nil {
		cs = []ownedController{}
	}
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Controllers: cs}, "", "  ")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("state file: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("state file: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("state file: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("state file: sync %s: %w", dir, err)
	}
	return nil
}
