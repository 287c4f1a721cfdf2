package reflector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The restart marker says whether the previous run ended cleanly. It is
// "running" while a reflector runs and "clean" after an orderly stop, so a
// start that finds "running" follows a crash (or a kill) and must start the
// speaker with graceful restart's Restarting flag: peers then keep its
// routes as stale until its End-of-RIB instead of flushing them.
const (
	stateRunning = "running"
	stateClean   = "clean"
)

const markerVersion = 1

type marker struct {
	Version int       `json:"version"`
	State   string    `json:"state"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
}

// readMarker returns the state the previous run left ("" if there was
// none).
func readMarker(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("state file: %w", err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("state file %s: %w", path, err)
	}
	if m.Version != markerVersion || (m.State != stateRunning && m.State != stateClean) {
		return "", fmt.Errorf("state file %s: version %d state %q not understood", path, m.Version, m.State)
	}
	return m.State, nil
}

// writeMarker replaces the marker crash-safely: a temporary file in the same
// directory, fsync, rename, fsync of the directory. A crash leaves the old
// or the new marker, never a torn one.
func writeMarker(path, state string, now time.Time) error {
	b, err := json.Marshal(marker{Version: markerVersion, State: state, PID: os.Getpid(), Since: now.UTC()})
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("state file: write %s: %w", tmp, err)
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
