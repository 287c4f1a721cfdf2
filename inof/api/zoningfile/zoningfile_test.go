package zoningfile

import (
	"slices"
	"testing"
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
