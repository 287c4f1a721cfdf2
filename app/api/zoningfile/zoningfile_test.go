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

// TestPlanPins: pins plan like zones (set, moved, removed, in that file's
// order) when the file has pins; a file without a pins key leaves them.
func TestPlanPins(t *testing.T) {
	const a, b = "nqn.2014-08.org.example:a", "nqn.2014-08.org.example:b"
	cur := file(true, map[string][]string{})
	cur.Pins = map[string][]string{a: {"10.0.0.11:eth3"}, b: {"10.0.0.11:eth4"}}
	want := file(true, map[string][]string{})
	want.Pins = map[string][]string{a: {"10.0.0.11:eth3", "10.0.0.12:eth3"}}
	p := PlanFor(cur, want)
	if !slices.Equal(p.Diff, []string{"~ pin " + a + ": +10.0.0.12:eth3", "- pin " + b + " (1 members)"}) {
		t.Errorf("diff %q", p.Diff)
	}
	if len(p.Edits) != 3 || p.Edits[0].GetRemovePin().GetNqn() != a || !slices.Equal(p.Edits[1].GetSetPin().GetAt(), want.Pins[a]) ||
		p.Edits[2].GetRemovePin().GetNqn() != b {
		t.Errorf("edits %v", p.Edits)
	}
	if got := After(cur, p.Edits); !slices.Equal(got.Pins[a], want.Pins[a]) || got.Pins[b] != nil {
		t.Errorf("after %v", got.Pins)
	}
	if p := PlanFor(cur, file(true, map[string][]string{})); len(p.Edits) != 0 {
		t.Errorf("a file without pins: %v", p.Edits)
	}
	set := &inofv1.Edit{Edit: &inofv1.Edit_SetPin{SetPin: &inofv1.Pin{Nqn: b, At: []string{"10.0.0.13:eth1"}}}}
	if got := After(file(true, map[string][]string{}), []*inofv1.Edit{set}); !slices.Equal(got.Pins[b], []string{"10.0.0.13:eth1"}) {
		t.Errorf("after a pin set: %v", got.Pins)
	}
}
