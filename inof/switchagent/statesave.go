package switchagent

import (
	"fmt"
	"time"

	"github.com/openinof/inof/bgp/table"
)

// Saving the state file while the agent runs: at most every
// minSaveSpacing, and never more than 1/saveShare of the time (a save of n
// records costs O(n): ~11 ms for 2,048 on a quiet machine, 30–60 ms on a
// busy one), but at least every maxSaveSpacing while something changed. A
// crash loses at most that much: after a restart the registrations come
// back over LLDP and Resync corrects what hosts were told, and the told
// journal keeps what hosts were told since the last save.
//
// The loop only takes the save's snapshot (copies of its tables and a new
// journal generation); encoding, writing and syncing run in a goroutine of
// their own, one save at a time. Written in the loop, a save of the churn
// benchmark's leaf held every registration and record behind it for 29 ms
// (median; 66 ms at most) every 0.6 s.
const (
	minSaveSpacing = 200 * time.Millisecond
	maxSaveSpacing = 2 * time.Second
	saveShare      = 20
)

// saveSpacing is the wait before the next save after one that took took.
func saveSpacing(took time.Duration) time.Duration {
	return min(max(saveShare*took, minSaveSpacing), maxSaveSpacing)
}

// saveResult is what a save written beside the loop reports to it.
type saveResult struct {
	err  error
	took time.Duration // from the snapshot until written
}

// snapshot copies what the state file holds (clean marks a stop) and ends
// the told journal's generation, which the state file covers (ToldGen). It
// runs in the loop; nothing in the result is shared with the loop's tables.
func (a *Agent) snapshot(clean bool) (savedState, error) {
	z, err := encodeZones(a.hold.zoning(a.zrecs))
	if err != nil {
		return savedState{}, err
	}
	var published []table.PublishedDevice
	if a.pub != nil {
		published = append(a.pub.Published(), a.sets.Published()...)
	}
	entries := a.reg.Entries()
	s := savedState{Saved: time.Now(), Clean: clean, Published: published, Format: a.format, Local: a.engine.Published(),
		Told: a.engine.Told(), Zones: z, Registrations: registrations(entries, a.engine.RestoredExpiries()),
		ZoningUnknown: a.hold.on && a.hold.unknown}
	if s.ToldGen, err = a.journal.rotate(); err != nil {
		return savedState{}, fmt.Errorf("switchagent: %w", err)
	}
	a.dirty = false
	a.deadlinesDue = time.Time{}
	for _, e := range entries {
		if due := s.Saved.Add(e.TTL / 4); a.deadlinesDue.IsZero() || due.Before(a.deadlinesDue) {
			a.deadlinesDue = due
		}
	}
	return s, nil
}

// writeState writes s to the state file, crash-safely, and then drops the
// told journal's generations it covers (up to s.ToldGen).
func writeState(state, journal string, s savedState) error {
	if err := saveState(state, s); err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	if err := releaseTold(journal, s.ToldGen); err != nil {
		return fmt.Errorf("switchagent: state saved, but: %w", err)
	}
	return nil
}

// startSave takes a snapshot in the loop and writes it beside it; the
// loop takes the outcome from a.saved (finishSave).
func (a *Agent) startSave(now time.Time) {
	s, err := a.snapshot(false)
	if err != nil {
		a.log.Error("saving state", "err", err)
		a.nextSave = now.Add(saveSpacing(time.Since(now)))
		return
	}
	a.saving = true
	state, journal := a.opts.stateFile(), a.opts.toldJournalFile()
	go func() {
		err := writeState(state, journal, s)
		a.saved <- saveResult{err: err, took: time.Since(now)}
	}()
}

// finishSave takes the outcome of the save written beside the loop: a
// failed one leaves the state to save again.
func (a *Agent) finishSave(r saveResult) {
	a.saving = false
	if r.err != nil {
		a.log.Error("saving state", "err", r.err)
		a.dirty = true
	}
	a.nextSave = time.Now().Add(saveSpacing(r.took))
}

// save writes the state file in the calling goroutine (at a stop, clean
// set), after the save being written, if any.
func (a *Agent) save(clean bool) error {
	if a.saving {
		a.finishSave(<-a.saved)
	}
	s, err := a.snapshot(clean)
	if err != nil {
		return err
	}
	return writeState(a.opts.stateFile(), a.opts.toldJournalFile(), s)
}
