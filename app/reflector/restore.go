package reflector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// RestoreOptions say what Restore restores where.
type RestoreOptions struct {
	// Backup is the file `inofctl backup` wrote.
	Backup string
	// Force replaces an existing store (kept beside it as
	// zones.db.replaced-TIME) and takes a backup older than the tombstone
	// lifetime.
	Force bool
	// AcceptFutureClock takes a backup whose newest change is ahead of
	// this host's clock by more than inof.MaxGenerationSkew: restored, the
	// reflector's changes would stay ahead of its peers', which refuse
	// them until their clocks catch up.
	AcceptFutureClock bool
	// Identity and Via name who restored, for the journal.
	Identity, Via string
	Now           func() time.Time // time.Now if nil
}

// RestoreReport says what Restore brought back.
type RestoreReport struct {
	Records, Zones, Aliases, Entries int
	TakenAt                          time.Time // the newest write in the backup
	Replaced                         string    // where an existing store went ("" if none)
	Profile                          bool      // the lossless profile came back from the journal
	Checksummed                      bool      // false for a backup from before backups carried a checksum
}

// ErrRestoreRefused wraps the reasons Restore refuses without Force.
var ErrRestoreRefused = errors.New("restore refused")

// Restore installs a backup as the store of the reflector o describes,
// which must not be running (the store's file lock tells). The backup is
// verified completely first (zones.VerifyBackup: framing, checksum, the
// store file's layout and bbolt's consistency check, every record and
// journal entry, a generation clock not ahead of now) in a scratch file
// of the state directory, created exclusively under a random name and
// removed unless the restore succeeds; nothing is replaced before. A
// backup whose newest write is older than inof.TombstoneLifetime is
// refused without Force, since the peers may have forgotten deletions
// made since and the restored reflector would bring those objects back.
// The lossless profile comes back from the newest lossless entry of the
// journal, if it holds one. A "restore" entry is journaled. Once started,
// the reflector originates what it restored; its peers keep their newer
// versions and tombstones (last writer wins per object), so deletions made
// after the backup stay deleted.
func Restore(o Options, ro RestoreOptions) (RestoreReport, error) {
	var rep RestoreReport
	now := ro.Now
	if now == nil {
		now = time.Now
	}
	rid, err := inof.ParseRouterID(o.RouterID)
	if err != nil {
		return rep, fmt.Errorf("reflector: restore: router_id: %w", err)
	}
	in, err := os.Open(ro.Backup)
	if err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return rep, fmt.Errorf("reflector: restore: state directory: %w", err)
	}
	scratch, err := os.CreateTemp(o.StateDir, ".zones.db.restoring-*")
	if err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	tmp := scratch.Name()
	installed := false
	defer func() {
		if !installed {
			os.Remove(tmp)
		}
	}()
	info, err := zones.VerifyBackup(in, scratch, zones.VerifyOptions{Now: now, AcceptFutureClock: ro.AcceptFutureClock})
	if cerr := scratch.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, zones.ErrFutureBackup) {
			return rep, fmt.Errorf("%w: %s: %w (check this host's clock, or --accept-future-clock)", ErrRestoreRefused, ro.Backup, err)
		}
		return rep, fmt.Errorf("%w: %s: %w", ErrRestoreRefused, ro.Backup, err)
	}
	rep.Checksummed = info.Checksummed
	st, err := zones.Open(tmp, zones.StoreOptions{RouterID: rid, Now: now, HistorySize: o.HistorySize})
	if err != nil {
		return rep, fmt.Errorf("reflector: restore: %s is not a usable store backup: %w", ro.Backup, err)
	}
	closed := false
	defer func() {
		if !closed {
			st.Close()
		}
	}()
	var newest uint64
	for _, r := range st.Records() {
		newest = max(newest, r.Gen)
		rep.Records++
	}
	journal, err := st.Journal()
	if err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	var profile *zones.Entry
	for i, e := range journal {
		newest = max(newest, e.Gen)
		if e.Action == zones.ActionLossless && len(e.Profile) > 0 {
			profile = &journal[i]
		}
	}
	rep.Entries = len(journal)
	cfg := st.Config()
	rep.Zones, rep.Aliases = len(cfg.Zones), len(cfg.Aliases)
	if newest != 0 {
		rep.TakenAt = inof.GenerationTime(newest)
	}
	if newest != 0 && inof.TombstoneExpired(newest, now()) && !ro.Force {
		return rep, fmt.Errorf("%w: the backup's newest change is from %s, more than the tombstone lifetime (%s) ago: "+
			"peers may have forgotten deletions made since, which the restore would bring back (--force if no peer holds a newer configuration)",
			ErrRestoreRefused, rep.TakenAt.UTC().Format(time.RFC3339), inof.TombstoneLifetime)
	}
	if _, err := st.Note(zones.Entry{Identity: ro.Identity, Via: ro.Via, Action: zones.ActionRestore,
		Summary: fmt.Sprintf("restored %d records and %d journal entries from %s (newest change %s)", rep.Records, rep.Entries,
			filepath.Base(ro.Backup), rep.TakenAt.UTC().Format(time.RFC3339))}); err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	closed = true
	if err := st.Close(); err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	if err := lockedOut(o.StorePath()); err != nil {
		return rep, err
	}
	if _, err := os.Stat(o.StorePath()); err == nil {
		if !ro.Force {
			return rep, fmt.Errorf("%w: %s already holds a store (a restore is for a new or emptied reflector; --force keeps the old one beside it)",
				ErrRestoreRefused, o.StorePath())
		}
		rep.Replaced = o.StorePath() + ".replaced-" + now().UTC().Format("20060102T150405Z")
		if err := os.Rename(o.StorePath(), rep.Replaced); err != nil {
			return rep, fmt.Errorf("reflector: restore: %w", err)
		}
	}
	if err := os.Rename(tmp, o.StorePath()); err != nil {
		return rep, fmt.Errorf("reflector: restore: %w", err)
	}
	installed = true
	if profile != nil {
		if err := saveProfileState(o.ProfilePath(), profile.Gen, profile.RouterID, profile.Profile); err != nil {
			return rep, fmt.Errorf("reflector: restore: %w", err)
		}
		rep.Profile = true
	}
	return rep, nil
}

// lockedOut fails if a running reflector holds the store at path.
func lockedOut(path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	st, err := zones.Open(path, zones.StoreOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("%w: %s is in use or unreadable (stop the reflector first): %w", ErrRestoreRefused, path, err)
	}
	return st.Close()
}
