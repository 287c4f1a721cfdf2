package hostagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/openinof/inof/app/daemon"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// ownedController is a controller this agent created.
type ownedController struct {
	Path
	Device string `json:"device"` // the name at creation; the kernel may reuse it
	// CQTMillis is the controller's Command Quiesce Time (Identify
	// Controller) in milliseconds, once CQTRead says it was read.
	CQTMillis uint16 `json:"cqt_ms,omitempty"`
	CQTRead   bool   `json:"cqt_read,omitempty"`
}

// holdsForCQT reports whether the controller's target reported a Command
// Quiesce Time that the failover policy respects: its path is not failed
// over at once (docs/host-agent.md, "Writes and failing over at once").
func (o ownedController) holdsForCQT(f FailoverOptions) bool {
	return f.CQT == CQTRespect && o.CQTRead && o.CQTMillis > 0
}

// setCQT reads the controller's Command Quiesce Time through k (device
// must be live) and keeps it. Where the kernel has no NVMe class (a
// stand-in nvme-cli) there is nothing to ask: it reads nothing.
func (o *ownedController) setCQT(k Kernel, device string) error {
	if !k.HasNVMe() {
		return nil
	}
	d, err := k.CQT(device)
	if err != nil {
		return err
	}
	o.CQTMillis, o.CQTRead = uint16(min(d/time.Millisecond, 0xffff)), true
	return nil
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

// saveState writes the state crash-safely (daemon.WriteFileAtomic).
func saveState(path string, cs []ownedController) error {
	cs = slices.Clone(cs)
	if cs == nil {
		cs = []ownedController{}
	}
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Controllers: cs}, "", "  ")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	if err := daemon.WriteFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}
