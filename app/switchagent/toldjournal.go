package switchagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/openinof/inof/inof"
)

// toldJournal records each batch of notifications before it is sent,
// until a save of the state file has them in its Told. The state file is
// saved at most every minSaveSpacing (up to maxSaveSpacing later): without
// the journal, an agent killed in between restarts believing what the last
// save said and never corrects a host told otherwise since (seed
// 630883987523050148 step 3: leaf1 told three hosts a target inactive and
// was killed 90 ms later; back, it restored "active", found the target
// active, and the hosts were left with inactive). It is written, not
// synced: it survives the process, not the machine (whose ports go down
// with it). One JSON line per notice; a torn last line is ignored.
//
// A save is written beside the loop (statesave.go), so the journal comes
// in generations: when the loop takes a save's snapshot it renames the
// journal to path.N (rotate) and goes on in a new one; the state file
// records N (savedState.ToldGen) and, once written, the save removes every
// generation up to N (releaseTold). A start replays only the generations
// newer than the state file's, so one a crash (or a failed removal) left
// behind is never replayed over a state that already holds it: it could
// undo what happened after it without a notice (a host that left and came
// back). It is owned by the agent's loop goroutine; releaseTold touches
// only files the loop no longer writes.
type toldJournal struct {
	path    string
	f       *os.File
	gen     uint64 // the newest generation (path.gen), or the state file's
	written bool   // something was written to f since it was opened
	buf     []byte
}

// toldEntry is one notice in the journal.
type toldEntry struct {
	Host   netip.Addr  `json:"host"`
	Target inof.Device `json:"target"`
	Active bool        `json:"active"`
}

// openToldJournal reads the journal at path: the generations newer than
// saved (the state file's ToldGen), oldest first, then path itself (absent:
// none). Entries are returned in the order they were written; reading a
// file stops at a line that does not parse (torn by a crash), counted in
// bad. Generations the state file holds are removed. What was read becomes
// a generation of its own, and the journal goes on in a new file, so a
// line torn before a restart never hides what is written after it.
func openToldJournal(path string, saved uint64) (j *toldJournal, entries []toldEntry, bad int, err error) {
	gens, err := toldGenerations(path)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := releaseTold(path, saved); err != nil {
		return nil, nil, 0, err
	}
	j = &toldJournal{path: path, gen: saved}
	for _, g := range gens {
		if g <= saved {
			continue
		}
		es, torn, err := readTold(toldGenPath(path, g))
		if err != nil {
			return nil, nil, 0, err
		}
		entries, bad, j.gen = append(entries, es...), bad+torn, g
	}
	es, torn, err := readTold(path)
	if err != nil {
		return nil, nil, 0, err
	}
	entries, bad = append(entries, es...), bad+torn
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, 0, fmt.Errorf("told journal: %w", err)
	}
	if len(es) > 0 || torn > 0 {
		next := j.gen + 1
		if err := os.Rename(path, toldGenPath(path, next)); err != nil {
			return nil, nil, 0, fmt.Errorf("told journal: %w", err)
		}
		j.gen = next
	}
	if j.f, err = openToldFile(path); err != nil {
		return nil, nil, 0, err
	}
	return j, entries, bad, nil
}

// readTold reads the entries of one journal file (absent: none), up to a
// torn line (torn 1).
func readTold(path string) (entries []toldEntry, torn int, err error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("told journal: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e toldEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || !e.Host.IsValid() {
			return entries, 1, nil
		}
		entries = append(entries, e)
	}
	return entries, 0, nil
}

// openToldFile opens a new, empty journal file at path for appending.
func openToldFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("told journal: %w", err)
	}
	return f, nil
}

// toldGenPath names generation gen of the journal at path.
func toldGenPath(path string, gen uint64) string { return path + "." + strconv.FormatUint(gen, 10) }

// toldGenerations lists the generations of the journal at path, oldest
// first.
func toldGenerations(path string) ([]uint64, error) {
	des, err := os.ReadDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("told journal: %w", err)
	}
	var gens []uint64
	prefix := filepath.Base(path) + "."
	for _, de := range des {
		rest, ok := strings.CutPrefix(de.Name(), prefix)
		if !ok {
			continue
		}
		if g, err := strconv.ParseUint(rest, 10, 64); err == nil && g > 0 {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	return gens, nil
}

// rotate ends the current generation: what was journalled since the last
// rotation is renamed to path.N, N returned, and the journal goes on in a
// new file. With nothing journalled since, it returns the current
// generation and renames nothing, so saves that keep failing add no files.
// A journal file that went missing (deleted under the agent) is opened
// anew: what it held is in the caller's snapshot. On an error the journal
// goes on in its file, whatever its name, and a later rotation ends it.
func (j *toldJournal) rotate() (uint64, error) {
	if !j.written {
		return j.gen, nil
	}
	next := j.gen + 1
	gp := toldGenPath(j.path, next)
	renamed := true
	if err := os.Rename(j.path, gp); errors.Is(err, fs.ErrNotExist) {
		renamed = false
	} else if err != nil {
		return 0, fmt.Errorf("told journal: %w", err)
	}
	f, err := openToldFile(j.path)
	if err != nil {
		if renamed {
			if back := os.Rename(gp, j.path); back != nil {
				// The open file keeps its new name; the next
				// rotation finds path missing and ends it there.
				j.gen = next
				return 0, errors.Join(err, fmt.Errorf("told journal: %w", back))
			}
		}
		return 0, err
	}
	old := j.f
	j.f, j.written = f, false
	if renamed {
		j.gen = next
	}
	if err := old.Close(); err != nil {
		return 0, fmt.Errorf("told journal: %w", err)
	}
	return j.gen, nil
}

// releaseTold removes the generations of the journal at path up to gen: a
// state file was written after them. It is safe beside the loop's writes.
func releaseTold(path string, gen uint64) error {
	gens, err := toldGenerations(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range gens {
		if g > gen {
			break
		}
		if err := os.Remove(toldGenPath(path, g)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("told journal: %w", err))
		}
	}
	return errors.Join(errs...)
}

// record appends ns in one write.
func (j *toldJournal) record(ns []PortNotice) error {
	if len(ns) == 0 {
		return nil
	}
	j.buf = j.buf[:0]
	for _, n := range ns {
		b, err := json.Marshal(toldEntry{Host: n.Host, Target: n.Target, Active: n.State == inof.StateActive})
		if err != nil {
			return fmt.Errorf("told journal: %w", err)
		}
		j.buf = append(append(j.buf, b...), '\n')
	}
	j.written = true
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("told journal: %w", err)
	}
	return nil
}

func (j *toldJournal) close() error { return j.f.Close() }

// replayTold applies journal entries, in order, to what each host was told
// is active as saved.
func replayTold(told map[netip.Addr][]inof.Device, entries []toldEntry) map[netip.Addr][]inof.Device {
	if len(entries) == 0 {
		return told
	}
	out := make(map[netip.Addr][]inof.Device, len(told))
	for h, ds := range told {
		out[h] = slices.Clone(ds)
	}
	for _, e := range entries {
		ds := slices.DeleteFunc(out[e.Host], func(d inof.Device) bool { return d.Addr == e.Target.Addr })
		if e.Active {
			ds = append(ds, e.Target)
		}
		out[e.Host] = ds
	}
	return out
}
