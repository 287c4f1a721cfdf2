package switchagent

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
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

// saver writes the state file beside the loop and journals the notices
// between two saves; the loop owns it.
type saver struct {
	log                 *slog.Logger
	stateFile, toldFile string
	dirty               bool            // state to save
	saving              bool            // a save is being written
	saved               chan saveResult // a written save's outcome, to the loop
	journal             *toldJournal    // notices since the last save (toldjournal.go)
	journalFailing      bool            // the last journal write failed (logged once)
	nextSave            time.Time       // the earliest time the loop saves again (saveSpacing)
	// deadlinesDue is when the saved registration deadlines are a quarter
	// of the shortest TTL old: refreshes move them without changing
	// anything else, and a restart after a crash must not find them all
	// passed (zero: no registrations).
	deadlinesDue time.Time
}

func newSaver(o Options, log *slog.Logger) *saver {
	return &saver{log: log, stateFile: o.stateFile(), toldFile: o.toldJournalFile(), saved: make(chan saveResult, 1)}
}

// openJournal opens the told journal and returns what hosts were told:
// saved's, with the notices journalled since replayed over it.
func (s *saver) openJournal(saved savedState) (map[netip.Addr][]inof.Device, error) {
	journal, told, bad, err := openToldJournal(s.toldFile, saved.ToldGen)
	if err != nil {
		return nil, fmt.Errorf("switchagent: %w", err)
	}
	s.journal = journal
	if len(told) == 0 && bad == 0 {
		return saved.Told, nil
	}
	s.log.Info("notifications since the last save replayed from the journal", "notices", len(told), "torn", bad)
	return replayTold(saved.Told, told), nil
}

// journalNotices journals notices before they are sent; a failure is
// logged when it starts and when it ends.
func (s *saver) journalNotices(ns []PortNotice) {
	err := s.journal.record(ns)
	switch {
	case err != nil && !s.journalFailing:
		s.log.Error("notifications not journalled: a crash before the next save may leave hosts uncorrected", "err", err)
	case err == nil && s.journalFailing && len(ns) > 0:
		s.log.Info("notifications journalled again")
	default:
		return
	}
	s.journalFailing = err != nil
}

// due reports whether a save is due at now: something changed, or the
// registration deadlines saved grow old, none is being written and the
// spacing since the last one passed.
func (s *saver) due(now time.Time) bool {
	stale := !s.deadlinesDue.IsZero() && !now.Before(s.deadlinesDue)
	return (s.dirty || stale) && !s.saving && !now.Before(s.nextSave)
}

// taken notes that st, a snapshot holding entries, was taken: the told
// journal moves to a new generation (st.ToldGen), nothing is left to save.
func (s *saver) taken(st *savedState, entries []l2proto.Entry) error {
	var err error
	if st.ToldGen, err = s.journal.rotate(); err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	s.dirty = false
	s.deadlinesDue = time.Time{}
	for _, e := range entries {
		if due := st.Saved.Add(e.TTL / 4); s.deadlinesDue.IsZero() || due.Before(s.deadlinesDue) {
			s.deadlinesDue = due
		}
	}
	return nil
}

// start writes st beside the loop, which takes the outcome from saved
// (finish); failed is a snapshot that could not be taken.
func (s *saver) start(now time.Time, st savedState, failed error) {
	if failed != nil {
		s.log.Error("saving state", "err", failed)
		s.nextSave = now.Add(saveSpacing(time.Since(now)))
		return
	}
	s.saving = true
	go func() {
		err := writeState(s.stateFile, s.toldFile, st)
		s.saved <- saveResult{err: err, took: time.Since(now)}
	}()
}

// finish takes the outcome of the save written beside the loop: a failed
// one leaves the state to save again.
func (s *saver) finish(r saveResult) {
	s.saving = false
	if r.err != nil {
		s.log.Error("saving state", "err", r.err)
		s.dirty = true
	}
	s.nextSave = time.Now().Add(saveSpacing(r.took))
}

// wait waits for the save being written, if any.
func (s *saver) wait() {
	if s.saving {
		s.finish(<-s.saved)
	}
}

// snapshot copies what the state file holds (clean marks a stop) and ends
// the told journal's generation, which the state file covers (ToldGen). It
// runs in the loop; nothing in the result is shared with the loop's tables.
func (a *Agent) snapshot(clean bool) (savedState, error) {
	z, err := encodeZones(a.zoning.hold.zoning(a.zoning.recs))
	if err != nil {
		return savedState{}, err
	}
	entries := a.ports.entries()
	s := savedState{Saved: time.Now(), Clean: clean, Published: a.fab.published(), Format: a.fab.recordFormat(),
		Local: a.engine.Published(), Told: a.engine.Told(), Zones: z,
		Registrations: registrations(entries, a.engine.RestoredExpiries()), ZoningUnknown: a.zoning.hold.on && a.zoning.hold.unknown}
	if err := a.save.taken(&s, entries); err != nil {
		return savedState{}, err
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

// startSave takes a snapshot in the loop and writes it beside it.
func (a *Agent) startSave(now time.Time) {
	s, err := a.snapshot(false)
	a.save.start(now, s, err)
}

// saveNow writes the state file in the calling goroutine (at a stop, clean
// set), after the save being written, if any.
func (a *Agent) saveNow(clean bool) error {
	a.save.wait()
	s, err := a.snapshot(clean)
	if err != nil {
		return err
	}
	return writeState(a.save.stateFile, a.save.toldFile, s)
}
