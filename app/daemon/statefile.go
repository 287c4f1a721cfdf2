package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data crash-safely: a temporary file
// in the same directory (created with mode 0600, the directory with 0700
// if missing), fsync, rename over the old file, fsync of the directory. A
// crash leaves either the old or the new file, never a torn one.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// stateEnvelope versions a JSON state file.
type stateEnvelope struct {
	Version int             `json:"version"`
	State   json.RawMessage `json:"state"`
}

// SaveState writes v as JSON with a format version, crash-safely
// (WriteFileAtomic).
func SaveState(path string, version int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state file %s: %w", path, err)
	}
	// The envelope is written by hand: encoding b again as a
	// json.RawMessage would scan it twice more (compact, indent), which
	// cost two thirds of a save of a few thousand records.
	out := make([]byte, 0, len(b)+40)
	out = fmt.Appendf(out, "{\"version\":%d,\"state\":", version)
	out = append(out, b...)
	return WriteFileAtomic(path, append(out, '}', '\n'))
}

// LoadState reads a file written by SaveState into v. It reports false
// (and no error) when the file does not exist; a file of another format
// version or that does not parse is an error.
func LoadState(path string, version int, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state file: %w", err)
	}
	var env stateEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return false, fmt.Errorf("state file %s: %w", path, err)
	}
	if env.Version != version {
		return false, fmt.Errorf("state file %s: format version %d, want %d", path, env.Version, version)
	}
	if err := json.Unmarshal(env.State, v); err != nil {
		return false, fmt.Errorf("state file %s: %w", path, err)
	}
	return true, nil
}
