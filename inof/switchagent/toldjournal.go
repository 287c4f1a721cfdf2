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

	"github.com/openinof/inof/inof"
)

// toldJournal records each batch of notifications before it is sent,
// until the next save of the state file has them in its Told. The state
// file is saved at most every minSaveSpacing (up to maxSaveSpacing later):
// without the journal, an agent killed in between restarts believing what
// the last save said and never corrects a host told otherwise since (seed
// 630883987523050148 step 3: leaf1 told three hosts a target inactive and
// was killed 90 ms later; back, it restored "active", found the target
// active, and the hosts were left with inactive). It is written, not
// synced: it survives the process, not the machine (whose ports go down
// with it). One JSON line per notice; a torn last line is ignored. It is
// owned by the agent's loop goroutine.
type toldJournal struct {
	f   *os.File
	buf []byte
}

// toldEntry is one notice in the journal.
type toldEntry struct {
	Host   netip.Addr  `json:"host"`
	Target inof.Device `json:"target"`
	Active bool        `json:"active"`
}

// openToldJournal reads the journal at path (absent: none) and opens it
// for appending. The entries are returned in the order they were written;
// reading stops at a line that does not parse (torn by a crash), reported
// as bad.
func openToldJournal(path string) (j *toldJournal, entries []toldEntry, bad int, err error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, 0, fmt.Errorf("told journal: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e toldEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || !e.Host.IsValid() {
			bad++
			break
		}
		entries = append(entries, e)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, 0, fmt.Errorf("told journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("told journal: %w", err)
	}
	return &toldJournal{f: f}, entries, bad, nil
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
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("told journal: %w", err)
	}
	return nil
}

// reset empties the journal: a save holds everything it recorded.
func (j *toldJournal) reset() error {
	if err := j.f.Truncate(0); err != nil {
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
