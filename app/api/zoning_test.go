package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/zones"
)

// expectedChanges computes the visibility changes between two
// configurations pair by pair with zones.Visible, the rule's reference
// implementation (the server uses the index and its diff).
func expectedChanges(before, after *zones.Config, devs []api.Device) []string {
	var out []string
	for _, h := range devs {
		for _, tg := range devs {
			if !h.Role.IsHost() || !tg.Role.IsTarget() {
				continue
			}
			was, is := zones.Visible(before, h.Device, tg.Device), zones.Visible(after, h.Device, tg.Device)
			if was != is {
				out = append(out, fmt.Sprintf("%s %s %v", h.Addr, tg.Addr, is))
			}
		}
	}
	slices.Sort(out)
	return out
}

func changeStrings(cs []*inofv1.VisibilityChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s %v", c.GetHost(), c.GetTarget(), c.GetVisible())
	}
	slices.Sort(out)
	return out
}

func TestApplyZoningDryRunThenCommit(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	ctx := context.Background()
	before := b.Store.Config()
	rev0 := zoning(t, c).GetRevision()
	edits := []*inofv1.Edit{createZone("red", "10.0.0.1", "10.0.1.0/24")}

	dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: edits, ExpectedRevision: rev0, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := zoning(t, c); got.GetRevision() != rev0 || len(got.GetZones()) != 0 {
		t.Fatalf("dry run changed the configuration: %v", got)
	}
	if !dry.GetDryRun() || dry.GetRevision() != rev0 || dry.GetRecordsWritten() != 0 {
		t.Fatalf("dry run response %v", dry)
	}

	resp, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: edits, ExpectedRevision: dry.GetRevision()})
	if err != nil {
		t.Fatal(err)
	}
	after := b.Store.Config()
	want := expectedChanges(before, after, testDevices())
	if len(want) == 0 {
		t.Fatal("test setup: the zone changes no visibility")
	}
	if got := changeStrings(dry.GetChanges()); !slices.Equal(got, want) {
		t.Errorf("dry run changes\n got %v\nwant %v", got, want)
	}
	if got := changeStrings(resp.GetChanges()); !slices.Equal(got, want) {
		t.Errorf("commit changes\n got %v\nwant %v", got, want)
	}
	z := zoning(t, c)
	if resp.GetRecordsWritten() != 1 || z.GetRevision() != resp.GetRevision() || z.GetRevision() == rev0 {
		t.Errorf("commit response %v, zoning now %v", resp, z)
	}
	if len(z.GetZones()) != 1 || z.GetZones()[0].GetName() != "red" || !slices.Equal(z.GetZones()[0].GetMembers(), []string{"10.0.0.1", "10.0.1.0/24"}) {
		t.Errorf("zones = %v", z.GetZones())
	}
}

func TestApplyZoningEditsInOrder(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	apply(t, c,
		&inofv1.Edit{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: "rack1", Members: []string{"10.0.1.1"}}}},
		createZone("red", "10.0.0.1", "alias:rack1"),
		&inofv1.Edit{Edit: &inofv1.Edit_RenameZone{RenameZone: &inofv1.RenameZone{Name: "red", NewName: "blue"}}},
		&inofv1.Edit{Edit: &inofv1.Edit_RemoveZoneMembers{RemoveZoneMembers: &inofv1.ZoneMembers{Zone: "blue", Members: []string{"10.0.0.1"}}}},
		setSettings(false, true),
	)
	cfg := b.Store.Config()
	if cfg.Zones["red"] != nil || cfg.Zones["blue"] == nil {
		t.Fatalf("rename: zones %v", cfg.ZoneNames())
	}
	if got := cfg.Zones["blue"].Members; len(got) != 1 || got[0].String() != "alias:rack1" {
		t.Errorf("blue members %v", got)
	}
	if cfg.Settings != (zones.Settings{DefaultZoneEnabled: false, HardZoning: true}) {
		t.Errorf("settings %+v", cfg.Settings)
	}
	// Only the set fields change.
	hard := false
	apply(t, c, &inofv1.Edit{Edit: &inofv1.Edit_SetSettings{SetSettings: &inofv1.SetSettings{HardZoning: &hard}}})
	if got := b.Store.Config().Settings; got != (zones.Settings{}) {
		t.Errorf("settings after hard-zoning off: %+v", got)
	}
}

func TestApplyZoningErrors(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	apply(t, c, createZone("red", "10.0.0.1"),
		&inofv1.Edit{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: "rack1", Members: []string{"10.0.1.1"}}}},
		addMembers("red", "alias:rack1"))
	rev := zoning(t, c).GetRevision()
	long := strings.Repeat("z", zones.MaxNameLen+1)
	for _, tc := range []struct {
		name  string
		edits []*inofv1.Edit
		code  codes.Code
		msg   string
	}{
		{"unknown zone", []*inofv1.Edit{addMembers("blue", "10.0.0.2")}, codes.NotFound, `zone "blue": not found`},
		{"invalid address", []*inofv1.Edit{addMembers("red", "10.0.0.300")}, codes.InvalidArgument, `"10.0.0.300" is no address`},
		{"duplicate member", []*inofv1.Edit{addMembers("red", "10.0.0.1")}, codes.AlreadyExists, "zone red member 10.0.0.1: already exists"},
		{"duplicate zone", []*inofv1.Edit{createZone("red")}, codes.AlreadyExists, `zone "red": already exists`},
		{"name too long", []*inofv1.Edit{createZone(long)}, codes.InvalidArgument, "must be 1 to 63 bytes"},
		{"reserved name", []*inofv1.Edit{createZone("default")}, codes.InvalidArgument, "reserved name"},
		{"alias still used", []*inofv1.Edit{{Edit: &inofv1.Edit_DeleteAlias{DeleteAlias: &inofv1.DeleteAlias{Name: "rack1"}}}},
			codes.FailedPrecondition, `alias rack1 is used by zone red: remove alias:rack1 from it first`},
		{"NQN of no NVMe format", []*inofv1.Edit{addMembers("red", "nqn.bogus")}, codes.InvalidArgument, `want "nqn.yyyy-mm."`},
		{"iSCSI name", []*inofv1.Edit{addMembers("red", "iqn.2001-04.com.example:disk")}, codes.InvalidArgument, "an iSCSI name"},
		{"no edits", nil, codes.InvalidArgument, "no edits"},
		{"empty edit", []*inofv1.Edit{{}}, codes.InvalidArgument, "empty or unknown edit"},
		{"second edit fails", []*inofv1.Edit{createZone("green"), addMembers("nope", "10.0.0.2")}, codes.NotFound, "edit 2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dry := range []bool{true, false} {
				_, err := c.ApplyZoning(context.Background(), &inofv1.ApplyZoningRequest{Edits: tc.edits, DryRun: dry})
				if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
					t.Errorf("dry run %v: got %v %q, want %v containing %q", dry, st.Code(), st.Message(), tc.code, tc.msg)
				}
			}
			if got := zoning(t, c).GetRevision(); got != rev {
				t.Errorf("a refused edit changed the configuration")
			}
		})
	}
	if n := len(b.Store.Config().Zones); n != 1 {
		t.Errorf("%d zones after refused edits", n)
	}
}

func TestApplyZoningStaleRevision(t *testing.T) {
	_, c := fabric(t, api.ServeOptions{})
	rev0 := zoning(t, c).GetRevision()
	ctx := context.Background()
	if _, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{createZone("red")}, ExpectedRevision: rev0}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		_, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{createZone("blue")}, ExpectedRevision: rev0, DryRun: dry})
		if st := status.Convert(err); st.Code() != codes.Aborted || !strings.Contains(st.Message(), "configuration changed") {
			t.Errorf("dry run %v: got %v %q, want Aborted", dry, st.Code(), st.Message())
		}
	}
	if z := zoning(t, c); len(z.GetZones()) != 1 {
		t.Errorf("zones %v", z.GetZones())
	}
}

// A commit that lands between the edits and the store commit (after the
// revision check) makes the store refuse the commit: Aborted.
func TestApplyZoningConflictInStore(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	var once sync.Once
	b.BeforeCommit(func() {
		once.Do(func() {
			tx := b.Store.Begin()
			if err := tx.CreateZone("other"); err != nil {
				t.Error(err)
			}
			if _, err := tx.Commit(); err != nil {
				t.Error(err)
			}
		})
	})
	_, err := c.ApplyZoning(context.Background(), &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{createZone("red")}})
	if st := status.Convert(err); st.Code() != codes.Aborted || !strings.Contains(st.Message(), zones.ErrConflict.Error()) {
		t.Fatalf("got %v %q, want Aborted with %q", st.Code(), st.Message(), zones.ErrConflict)
	}
	if cfg := b.Store.Config(); cfg.Zones["red"] != nil || cfg.Zones["other"] == nil {
		t.Errorf("zones %v", cfg.ZoneNames())
	}
}

// Of several clients committing against the same revision, exactly one
// wins; the others get Aborted.
func TestApplyZoningConcurrentCommits(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	rev0 := zoning(t, c).GetRevision()
	const n = 8
	codesSeen := make([]codes.Code, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.ApplyZoning(context.Background(), &inofv1.ApplyZoningRequest{
				Edits: []*inofv1.Edit{createZone(fmt.Sprintf("z%d", i))}, ExpectedRevision: rev0})
			codesSeen[i] = status.Code(err)
		}()
	}
	wg.Wait()
	ok := 0
	for i, code := range codesSeen {
		switch code {
		case codes.OK:
			ok++
		case codes.Aborted:
		default:
			t.Errorf("client %d: %v", i, code)
		}
	}
	if ok != 1 || len(b.Store.Config().Zones) != 1 {
		t.Errorf("%d commits succeeded, %d zones; want exactly one", ok, len(b.Store.Config().Zones))
	}
}

func TestReadOnly(t *testing.T) {
	_, c := fabric(t, api.ServeOptions{ReadOnly: true})
	ctx := context.Background()
	for _, dry := range []bool{true, false} {
		_, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{createZone("red")}, DryRun: dry})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("apply (dry run %v) on a read-only API: %v", dry, err)
		}
	}
	if z := zoning(t, c); len(z.GetZones()) != 0 {
		t.Errorf("read-only API changed the zones: %v", z.GetZones())
	}
	_, err := c.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: "name: x\n"})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("set profile on a read-only API: %v", err)
	}
}
