package reflector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// The journal (history and audit trail) replicates like the records: each
// entry is an immutable object of kind configsync.KindJournal, named and
// versioned by its own version, re-originated by every reflector that holds
// it. Its bound needs no tombstones: every reflector keeps the newest
// history_size entries and refuses (zones.ErrOutsideHistory) an entry older
// than all of a full journal, so an entry dropped here is never taken back
// from a peer that still holds it.

// reconcileJournal (sync loop, or the start steps) makes the journal
// entries this reflector originates match the store's: it originates the
// entries the replicator lacks and withdraws the ones the bound dropped
// (older than all of a full journal). It returns the parts originated.
func (l *syncLoop) reconcileJournal(ctx context.Context) (int, error) {
	kept := l.rn.store.JournalVersions()
	want := map[string]zones.Version{}
	for _, v := range kept {
		want[zones.EntryID(v)] = v
	}
	// Only an entry older than all of a full journal is gone for good; an
	// entry not in the store yet may still be assembling its parts.
	full := len(kept) >= l.opts.HistorySize
	held := map[string]bool{}
	var errs []error
	for _, c := range l.rn.repl.OfKind(uint8(configsync.KindJournal)) {
		if _, ok := want[c.Name]; ok {
			held[c.Name] = true
			continue
		}
		if !full || !(zones.Version{Gen: c.Gen, RouterID: c.Writer}).Less(kept[0]) {
			continue
		}
		if err := l.rn.repl.Withdraw(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	n := 0
	for id, v := range want {
		if held[id] {
			continue
		}
		e, ok, err := l.rn.store.Entry(v)
		if err != nil || !ok {
			errs = append(errs, err)
			continue
		}
		parts, err := configsync.JournalRecords(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range parts {
			took, err := l.rn.repl.Put(ctx, p)
			if err != nil {
				errs = append(errs, err)
			}
			if took {
				n++
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("reflector: journal: %w", err)
	}
	return n, nil
}

// mergeJournal (sync loop) takes journal parts adopted from peers: complete
// entries go to the store, each one added is an event with the identity
// that made the change, and conflicts they reveal are reported.
func (l *syncLoop) mergeJournal(ctx context.Context, parts []record.Config) {
	var complete []zones.Entry
	for _, c := range parts {
		e, ok, err := l.jasm.Add(c)
		if err != nil {
			l.m.malformedParts.Add(1)
			l.log.Warn("journal part refused", "object", c.Object(), "err", err)
			continue
		}
		if ok {
			complete = append(complete, e)
		}
	}
	if len(complete) == 0 {
		return
	}
	added, err := l.rn.store.AddEntries(complete)
	if err != nil {
		l.log.Info("journal entries from peer reflectors partly refused", "err", err)
	}
	l.m.journalAdopted.Add(uint64(len(added)))
	for _, e := range added {
		l.events.Publish(entryEvent(e, "on reflector "+e.RouterID.String()))
	}
	if _, err := l.reconcileJournal(ctx); err != nil {
		l.log.Warn("originating journal entries", "err", err)
	}
}

// entryEvent is the event of a journal entry: who changed what.
func entryEvent(e zones.Entry, where string) api.Event {
	kind, subject := "zoning", e.Revision
	if e.Action == zones.ActionLossless {
		kind, subject = "lossless", e.ID()
	}
	msg := fmt.Sprintf("%s: %s %s", e.Identity, e.Action, where)
	if e.Summary != "" {
		msg += ": " + e.Summary
	}
	return api.Event{Kind: kind, Subject: subject, Time: e.Version.Time(), Message: msg,
		Attributes: map[string]string{"identity": e.Identity, "via": e.Via, "entry": e.ID(), "action": e.Action,
			"writer": e.RouterID.String()}}
}

// reportConflicts (sync loop) logs, counts and publishes the lost writes
// the journal shows that were not reported yet (every reflector finds the
// same ones once it holds the same records and entries).
func (l *syncLoop) reportConflicts() {
	cs, err := l.rn.store.Conflicts()
	if err != nil {
		l.log.Error("reading the journal", "err", err)
		return
	}
	journal, err := l.rn.store.Journal()
	if err != nil {
		l.log.Error("reading the journal", "err", err)
		return
	}
	who := map[zones.Version]string{}
	for _, e := range journal {
		who[e.Version] = e.Identity + "@" + e.RouterID.String()
	}
	still := map[zones.Version]bool{}
	for _, c := range cs {
		var fresh, names []string
		for _, v := range append(slices.Clone(c.Lost), c.Resolved...) {
			still[v] = true
			name := who[v] + " (" + zones.EntryID(v) + ")"
			names = append(names, name)
			if !l.reported[v] {
				fresh = append(fresh, name)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		l.m.conflicts.Add(uint64(len(fresh)))
		kept := "a write older than the history"
		if c.Winner != (zones.Version{}) {
			kept = who[c.Winner] + " (" + zones.EntryID(c.Winner) + ")"
		}
		msg := fmt.Sprintf("conflict: %s was changed concurrently; the edit of %s is lost (the change of %s is in effect): check it and edit again",
			c.Key, strings.Join(fresh, ", "), kept)
		l.log.Warn("zoning conflict", "object", c.Key.String(), "lost", strings.Join(names, ", "), "kept", kept)
		l.events.Publish(api.Event{Kind: "conflict", Subject: c.Key.String(), Message: msg,
			Attributes: map[string]string{"identity": strings.Join(fresh, ", "), "kept": kept}})
	}
	l.reported = still
}

// Journal returns the journal, oldest entry first.
func (r *Reflector) Journal() ([]zones.Entry, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.admin.Journal()
}

// ConfigAt rebuilds the configuration right after a retained journal entry.
func (r *Reflector) ConfigAt(v zones.Version) (*zones.Config, bool, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, false, err
	}
	defer release()
	return rn.admin.ConfigAt(v)
}

// Conflicts lists the journal's lost writes.
func (r *Reflector) Conflicts() ([]zones.Conflict, error) {
	rn, release, err := r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	return rn.admin.Conflicts()
}

// Backup writes a consistent copy of the store (records, journal) to w.
func (r *Reflector) Backup(w io.Writer) (int64, error) {
	rn, release, err := r.started()
	if err != nil {
		return 0, err
	}
	defer release()
	return rn.admin.Backup(w)
}
