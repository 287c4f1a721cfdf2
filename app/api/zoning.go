package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/zones"
)

// errDryRun makes the backend abort a dry run after the edits were staged.
var errDryRun = errors.New("dry run")

// zoningAPI takes the calls on the zoning configuration: reading it and
// applying edits (an admin's, and refused on a read-only API).
type zoningAPI struct {
	b        Backend
	readOnly bool
	admin    adminCheck
	events   *Feed // commits are published here
	log      *slog.Logger
}

// GetZoning returns the committed configuration.
func (s *zoningAPI) GetZoning(context.Context, *inofv1.GetZoningRequest) (*inofv1.Zoning, error) {
	return zoningProto(s.b.Config()), nil
}

// ApplyZoning stages the edits on a fresh transaction, checks the expected
// revision on the transaction's own base (so nothing can slip in between
// the check and the commit: the store refuses the commit if anything did)
// and commits, or aborts for a dry run.
func (s *zoningAPI) ApplyZoning(ctx context.Context, req *inofv1.ApplyZoningRequest) (*inofv1.ApplyZoningResponse, error) {
	if len(req.GetEdits()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no edits")
	}
	if s.readOnly {
		return nil, status.Error(codes.PermissionDenied, "this API is read-only (inofd --role switch); send zoning edits to a reflector")
	}
	if !req.GetDryRun() {
		if err := s.admin.require(ctx, "zoning change"); err != nil {
			return nil, err
		}
	}
	var before, after *zones.Config
	var editErr error // reported as is, without the backend's wrapping
	records, err := s.b.Commit(ctx, func(tx *zones.Tx) error {
		editErr = s.stage(ctx, tx, req, &before, &after)
		return editErr
	})
	switch {
	case req.GetDryRun() && errors.Is(editErr, errDryRun):
	case editErr != nil:
		return nil, statusOf(editErr)
	case err != nil:
		return nil, statusOf(err)
	case after == nil:
		return nil, status.Error(codes.Internal, "the backend committed without running the edits")
	}
	changes, err := s.changes(ctx, before, after)
	if err != nil {
		return nil, statusOf(err)
	}
	resp := &inofv1.ApplyZoningResponse{Changes: changes, DryRun: req.GetDryRun(), RecordsWritten: uint32(len(records))}
	if req.GetDryRun() {
		resp.Revision = Revision(before)
		return resp, nil
	}
	resp.Revision = Revision(after)
	s.publishCommit(IdentityFrom(ctx), resp.Revision, records, len(changes))
	return resp, nil
}

// stage checks the expected revision against the transaction's base and
// stages the edits; for a dry run it validates the result (as Commit would)
// and returns errDryRun so that the backend aborts.
func (s *zoningAPI) stage(ctx context.Context, tx *zones.Tx, req *inofv1.ApplyZoningRequest, before, after **zones.Config) error {
	*before = tx.Config().Clone()
	if rev := Revision(*before); req.GetExpectedRevision() != "" && rev != req.GetExpectedRevision() {
		return fmt.Errorf("expected revision %s, current is %s: %w", req.GetExpectedRevision(), rev, errStale)
	}
	if err := applyEdits(tx, req.GetEdits()); err != nil {
		return err
	}
	*after = tx.Config().Clone()
	if err := checkAliasesInUse(*after, req.GetEdits()); err != nil {
		return err
	}
	action := req.GetAction()
	switch action {
	case "":
		action = zones.ActionCommit
	case zones.ActionCommit, zones.ActionApply, zones.ActionRollback:
	default:
		return status.Errorf(codes.InvalidArgument, "action %q: want commit, apply or rollback", action)
	}
	id := IdentityFrom(ctx)
	tx.Note(zones.Note{Identity: id.String(), Via: id.Via, Action: action, Revision: Revision(*after)})
	if !req.GetDryRun() {
		return nil
	}
	if err := (*after).Validate(); err != nil {
		return fmt.Errorf("zones: commit refused: %w", err)
	}
	return errDryRun
}

// publishCommit puts a zoning event on the feed.
func (s *zoningAPI) publishCommit(id Identity, rev string, records []zones.Record, changes int) {
	keys := make([]string, len(records))
	for i, r := range records {
		keys[i] = r.Key.String()
		if r.Deleted {
			keys[i] += " (deleted)"
		}
	}
	s.events.Publish(Event{Kind: "zoning", Subject: rev,
		Message:    fmt.Sprintf("%s committed %d record(s), %d visibility change(s)", id, len(records), changes),
		Attributes: map[string]string{"records": strings.Join(keys, ", "), "identity": id.String()}})
	s.log.Info("api: zoning committed", "identity", id.String(), "via", id.Via, "revision", rev,
		"records", len(records), "changes", changes)
}

// changes lists the (host, target) pairs whose visibility differs between
// two configurations, for the devices the backend knows.
func (s *zoningAPI) changes(ctx context.Context, before, after *zones.Config) ([]*inofv1.VisibilityChange, error) {
	devs, err := s.b.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	old := newIndex(s.log, before, devs)
	next := old.WithConfig(after)
	if len(zones.PinsChanged(before, after)) > 0 {
		next = newIndex(s.log, after, devs) // the pins decide which devices count
	}
	delta := zones.Diff(old, next)
	var all []zones.Change
	done := map[netip.Addr]bool{}
	for _, d := range devs {
		if d.Role.IsHost() && !done[d.Addr] {
			done[d.Addr] = true
			all = append(all, delta.For(d.Addr)...)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Host.Addr != all[j].Host.Addr {
			return all[i].Host.Addr.Less(all[j].Host.Addr)
		}
		return all[i].Target.Addr.Less(all[j].Target.Addr)
	})
	out := make([]*inofv1.VisibilityChange, len(all))
	for i, c := range all {
		out[i] = &inofv1.VisibilityChange{Host: c.Host.Addr.String(), Target: c.Target.Addr.String(), Visible: c.Visible}
	}
	return out, nil
}

// newIndex indexes the devices under c, skipping (and logging to log) the
// ones the index refuses, so one bad record does not take the API down. A
// device whose claim to its NQN c's pins refuse is left out too, as the
// switches leave it out: it is in no zone and sees nothing.
func newIndex(log *slog.Logger, c *zones.Config, devs []Device) *zones.Index {
	ix, _ := zones.NewIndex(c, nil) // no devices: cannot fail
	for _, d := range devs {
		if c.Refuses(d) {
			continue
		}
		if err := ix.Put(d.Device); err != nil {
			log.Warn("api: device skipped", "device", d.Device.String(), "err", err)
		}
	}
	return ix
}
