package zoningfile

import (
	"slices"
	"testing"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// file builds a File with the settings given and zones name → members.
func file(defaultZone bool, zones map[string][]string) File {
	h := true
	return File{Settings: Settings{DefaultZone: &defaultZone, HardZoning: &h}, Aliases: map[string][]string{}, Zones: zones}
}

// TestUndone: the changes since the base that the edited file drops are
// listed; those it keeps (its own applied before, merged ones) are not.
func TestUndone(t *testing.T) {
	base := file(true, map[string][]string{"red": {"10.0.0.1", "10.0.0.2"}, "old": {"10.0.0.7"}})
	cur := file(false, map[string][]string{"red": {"10.0.0.1", "10.0.0.9"}, "new": {"10.0.0.5"}})
	for _, tc := range []struct {
		name string
		want File
		undo []string
	}{
		{"stale edit", file(true, map[string][]string{"red": {"10.0.0.1", "10.0.0.2", "10.0.0.3"}, "old": {"10.0.0.7"}}),
			[]string{"~ settings: default-zone off", "+ zone new: 10.0.0.5", "- zone old (1 members)", "~ zone red: +10.0.0.9 -10.0.0.2"}},
		{"merged", file(false, map[string][]string{"red": {"10.0.0.1", "10.0.0.9", "10.0.0.3"}, "new": {"10.0.0.5"}}), nil},
		{"own change, edited again", file(false, map[string][]string{"red": {"10.0.0.9", "10.0.0.4"}, "new": {"10.0.0.5", "10.0.0.6"}}), nil},
		{"deletes a new zone", file(false, map[string][]string{"red": {"10.0.0.1", "10.0.0.9"}}), []string{"+ zone new: 10.0.0.5"}},
	} {
		if got := Undone(base, cur, tc.want); !slices.Equal(got, tc.undo) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.undo)
		}
	}
}

// TestAfter: the edits of zone and alias commands applied to a file give
// the member diff shown before the commit; the file itself is unchanged.
func TestAfter(t *testing.T) {
	cur := file(true, map[string][]string{"red": {"10.0.0.1", "10.0.0.2"}, "old": {"10.0.0.7"}})
	off := false
	es := []*inofv1.Edit{
		{Edit: &inofv1.Edit_AddZoneMembers{AddZoneMembers: &inofv1.ZoneMembers{Zone: "red", Members: []string{"10.0.0.3"}}}},
		{Edit: &inofv1.Edit_RemoveZoneMembers{RemoveZoneMembers: &inofv1.ZoneMembers{Zone: "red", Members: []string{"10.0.0.1"}}}},
		{Edit: &inofv1.Edit_RenameZone{RenameZone: &inofv1.RenameZone{Name: "old", NewName: "new"}}},
		{Edit: &inofv1.Edit_CreateAlias{CreateAlias: &inofv1.CreateAlias{Name: "rack", Members: []string{"10.0.2.0/24"}}}},
		{Edit: &inofv1.Edit_SetSettings{SetSettings: &inofv1.SetSettings{DefaultZoneEnabled: &off}}},
	}
	got := PlanFor(cur, After(cur, es)).Diff
	want := []string{"~ settings: default-zone off", "+ alias rack: 10.0.2.0/24", "+ zone new: 10.0.0.7", "~ zone red: +10.0.0.3 -10.0.0.1", "- zone old (1 members)"}
	if !slices.Equal(got, want) {
		t.Errorf("diff %q, want %q", got, want)
	}
	if !*cur.Settings.DefaultZone || len(cur.Zones["red"]) != 2 || cur.Zones["old"] == nil {
		t.Errorf("the file changed: %+v", cur)
	}
}
