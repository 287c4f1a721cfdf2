package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// JournalBackend is what a Backend with a journal (a reflector's store)
// serves besides: the history and audit trail, older revisions and
// backups. A backend without it (a switch) answers Unimplemented.
type JournalBackend interface {
	// Journal returns the journal, oldest entry first.
	Journal(ctx context.Context) ([]zones.Entry, error)
	// ConfigAt rebuilds the configuration right after a retained entry.
	ConfigAt(ctx context.Context, v zones.Version) (*zones.Config, bool, error)
	// Conflicts lists the journal's lost writes (zones.Conflicts).
	Conflicts(ctx context.Context) ([]zones.Conflict, error)
	// Backup writes a consistent copy of the store to w.
	Backup(ctx context.Context, w io.Writer) (int64, error)
	// HistorySize is how many entries the journal keeps.
	HistorySize() int
}

// journalAPI takes the calls on a JournalBackend's history: the journal,
// older revisions and backups (an admin's).
type journalAPI struct {
	b      Backend
	admin  adminCheck
	events *Feed // backups are published here
	log    *slog.Logger
}

func (s *journalAPI) journal() (JournalBackend, error) {
	j, ok := s.b.(JournalBackend)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this API keeps no history (inofd --role switch); ask a reflector")
	}
	return j, nil
}

// entries returns the journal backend and its entries.
func (s *journalAPI) entries(ctx context.Context) (JournalBackend, []zones.Entry, error) {
	j, err := s.journal()
	if err != nil {
		return nil, nil, err
	}
	es, err := j.Journal(ctx)
	if err != nil {
		return nil, nil, statusOf(fmt.Errorf("journal: %w", err))
	}
	return j, es, nil
}

// ListJournal lists the journal entries the filters select and the
// conflicts of the whole journal.
func (s *journalAPI) ListJournal(ctx context.Context, req *inofv1.ListJournalRequest) (*inofv1.ListJournalResponse, error) {
	j, es, err := s.entries(ctx)
	if err != nil {
		return nil, err
	}
	out := &inofv1.ListJournalResponse{HistorySize: uint32(j.HistorySize())}
	for _, e := range es {
		if !journalMatch(req, e) {
			continue
		}
		pe, err := entryProto(e)
		if err != nil {
			return nil, statusOf(err)
		}
		out.Entries = append(out.Entries, pe)
	}
	if n := int(req.GetLimit()); n > 0 && len(out.Entries) > n {
		out.Entries = out.Entries[len(out.Entries)-n:]
	}
	cs, err := j.Conflicts(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("journal: %w", err))
	}
	for _, c := range cs {
		pc := &inofv1.Conflict{Object: c.Key.String()}
		if c.Winner != (zones.Version{}) {
			pc.Kept = zones.EntryID(c.Winner)
		}
		for _, v := range c.Lost {
			pc.Entries = append(pc.Entries, zones.EntryID(v))
		}
		for _, v := range c.Resolved {
			pc.Resolved = append(pc.Resolved, zones.EntryID(v))
		}
		out.Conflicts = append(out.Conflicts, pc)
	}
	return out, nil
}

func isZoning(action string) bool {
	return action == zones.ActionCommit || action == zones.ActionApply || action == zones.ActionRollback
}

func journalMatch(req *inofv1.ListJournalRequest, e zones.Entry) bool {
	t := e.Version.Time()
	switch {
	case req.GetZoningOnly() && !isZoning(e.Action),
		req.GetIdentity() != "" && !strings.Contains(e.Identity, req.GetIdentity()),
		req.GetAction() != "" && e.Action != req.GetAction(),
		req.GetSince() != nil && t.Before(req.GetSince().AsTime()),
		req.GetUntil() != nil && t.After(req.GetUntil().AsTime()):
		return false
	case req.GetObject() != "":
		for _, o := range entryObjects(e) {
			if strings.Contains(o, req.GetObject()) {
				return true
			}
		}
		return false
	}
	return true
}

func entryObjects(e zones.Entry) []string {
	var out []string
	for _, w := range e.Writes {
		o := w.Key.String()
		if w.Deleted {
			o += " (deleted)"
		}
		out = append(out, o)
	}
	return out
}

func entryProto(e zones.Entry) (*inofv1.JournalEntry, error) {
	out := &inofv1.JournalEntry{Id: e.ID(), Time: timestamppb.New(e.Version.Time()), Identity: e.Identity, Via: e.Via,
		Action: e.Action, Revision: e.Revision, Summary: e.Summary, Objects: entryObjects(e), Writer: e.RouterID.String()}
	if len(e.Profile) > 0 {
		p, err := lossless.Decode(e.Profile)
		if err != nil {
			return nil, fmt.Errorf("journal entry %s: %w", e.ID(), err)
		}
		y, err := p.YAML()
		if err != nil {
			return nil, fmt.Errorf("journal entry %s: %w", e.ID(), err)
		}
		out.ProfileYaml = string(y)
	}
	return out, nil
}

// GetRevision returns the configuration of a retained zoning revision,
// named by its revision (or a unique prefix of it) or by its entry id.
func (s *journalAPI) GetRevision(ctx context.Context, req *inofv1.GetRevisionRequest) (*inofv1.Zoning, error) {
	j, es, err := s.entries(ctx)
	if err != nil {
		return nil, err
	}
	e, err := findRevision(es, req.GetRevision())
	if err != nil {
		return nil, err
	}
	c, ok, err := j.ConfigAt(ctx, e.Version)
	if err != nil {
		return nil, statusOf(err)
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "revision %s: dropped from the history meanwhile", req.GetRevision())
	}
	return zoningProto(c), nil
}

// findRevision picks the newest zoning entry whose revision (or id) is r
// or starts with it; a prefix two revisions share is refused.
func findRevision(es []zones.Entry, r string) (zones.Entry, error) {
	if r == "" {
		return zones.Entry{}, status.Error(codes.InvalidArgument, "no revision")
	}
	var found []zones.Entry
	revs := map[string]bool{}
	for _, e := range es {
		if !isZoning(e.Action) {
			continue
		}
		if e.ID() == r {
			return e, nil
		}
		if strings.HasPrefix(e.Revision, r) {
			found = append(found, e)
			revs[e.Revision] = true
		}
	}
	switch {
	case len(found) == 0:
		return zones.Entry{}, status.Errorf(codes.NotFound, "revision %s is not in the history (zoning history lists the revisions kept)", r)
	case len(revs) > 1:
		return zones.Entry{}, status.Errorf(codes.InvalidArgument, "revision %s is ambiguous: %d revisions start with it", r, len(revs))
	}
	return found[len(found)-1], nil
}

// backupChunk is the size of one streamed backup message.
const backupChunk = 256 << 10

// Backup streams a consistent copy of the store (admin only: it holds the
// whole configuration and its history).
func (s *journalAPI) Backup(_ *inofv1.BackupRequest, stream inofv1.Fabric_BackupServer) error {
	j, err := s.journal()
	if err != nil {
		return err
	}
	ctx := stream.Context()
	if err := s.admin.require(ctx, "backup"); err != nil {
		return err
	}
	w := &chunkWriter{send: func(b []byte) error { return stream.Send(&inofv1.BackupChunk{Data: b}) }}
	n, err := j.Backup(ctx, w)
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return statusOf(fmt.Errorf("backup: %w", err))
	}
	id := IdentityFrom(ctx)
	s.log.Info("api: backup taken", "identity", id.String(), "via", id.Via, "bytes", n)
	s.events.Publish(Event{Kind: "backup", Subject: fmt.Sprint(n), Message: fmt.Sprintf("%s took a backup of %d bytes", id, n),
		Attributes: map[string]string{"identity": id.String(), "bytes": fmt.Sprint(n)}})
	return nil
}

// chunkWriter cuts a stream into messages of backupChunk bytes.
type chunkWriter struct {
	buf  []byte
	send func([]byte) error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), backupChunk-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == backupChunk {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.send(w.buf)
	w.buf = nil // the stream may keep the slice until it is sent
	return err
}

// errAliasInUse refuses deleting an alias that zones still use.
var errAliasInUse = errors.New("alias in use")

// checkAliasesInUse names, for each alias the edits delete, the zones of
// the staged configuration that still use it.
func checkAliasesInUse(c *zones.Config, edits []*inofv1.Edit) error {
	var errs []error
	for _, e := range edits {
		d := e.GetDeleteAlias()
		if d == nil || c.Aliases[d.GetName()] != nil {
			continue
		}
		var users []string
		for _, zn := range c.ZoneNames() {
			if slices.Contains(c.Zones[zn].Members, zones.Member{Kind: zones.MemberAlias, Name: d.GetName()}) {
				users = append(users, zn)
			}
		}
		if len(users) > 0 {
			errs = append(errs, fmt.Errorf("alias %s is used by zone %s: remove alias:%s from it first (or in the same change): %w",
				d.GetName(), strings.Join(users, ", "), d.GetName(), errAliasInUse))
		}
	}
	return errors.Join(errs...)
}
