package lossless

import (
	"slices"
	"strings"
	"testing"
)

// renderText renders the golden profile for a target.
func renderText(t *testing.T, target string) (Profile, Rendering) {
	t.Helper()
	p := goldenProfile(target)
	r, err := RenderDevice(p, target, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// rowStatus is the check status of one aspect of a rendering whose text
// was edited, read back.
func editedRows(t *testing.T, p Profile, r Rendering, e Effective) map[string]Status {
	t.Helper()
	r.Effective = e
	out := map[string]Status{}
	for _, row := range checkRows(p, []Rendering{r}) {
		out[row.Aspect] = row.Cells[0].Status
	}
	return out
}

// TestNVUEReadBack: a mistake in one NVUE command shows in the check,
// since the check reads the text, not the profile.
func TestNVUEReadBack(t *testing.T) {
	p, r := renderText(t, TargetNVUE)
	plans, err := Compute(p.ForPlatform(r.Platform))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, aspect string }{
		{"switch-priority 3 traffic-class 3", "switch-priority 3 traffic-class 0", "DSCP → TC"},
		{"inof-server switch-priority 3", "inof-server switch-priority 4", "lossless priorities"},
		{"inof-server traffic-class 3 min-threshold 400000", "inof-server traffic-class 3 min-threshold 40000", "ECN server (100G)"},
		{"traffic-class 3 bw-percent 50", "traffic-class 3 bw-percent 30", "ETS"},
		{"polling-interval 200", "polling-interval 400", "PFC watchdog"},
	} {
		text := string(r.Text)
		if !strings.Contains(text, c.from) {
			t.Fatalf("the rendering has no %q", c.from)
		}
		e, err := readNVUE([]byte(strings.Replace(text, c.from, c.to, 1)), p.ForPlatform(r.Platform), plans)
		if err != nil {
			// A PFC profile disagreeing with the others is refused whole.
			if c.aspect == "lossless priorities" && strings.Contains(err.Error(), "enables priorities") {
				continue
			}
			t.Fatalf("%s: %v", c.to, err)
		}
		if st := editedRows(t, p, r, e)[c.aspect]; st != Differs {
			t.Errorf("%q instead of %q: %s is %s, want %s", c.to, c.from, c.aspect, st, Differs)
		}
	}
	if _, err := readNVUE([]byte("nv config apply\n"), p, plans); err == nil {
		t.Fatal("a rendering without commands read back")
	}
}

// TestLinuxReadBack: the same for the Linux script's dcb commands.
func TestLinuxReadBack(t *testing.T) {
	p, r := renderText(t, TargetLinux)
	for _, c := range []struct{ from, to, aspect string }{
		{"3:on", "3:off", "lossless priorities"},
		{" 24:3 ", " 24:0 ", "DSCP → TC"},
		{"0:50 ", "0:70 ", "ETS"},
	} {
		text := string(r.Text)
		if !strings.Contains(text, c.from) {
			t.Fatalf("the rendering has no %q", c.from)
		}
		e, err := readLinux([]byte(strings.Replace(text, c.from, c.to, 1)), p)
		if err != nil {
			t.Fatalf("%s: %v", c.to, err)
		}
		if st := editedRows(t, p, r, e)[c.aspect]; st != Differs {
			t.Errorf("%q instead of %q: %s is %s, want %s", c.to, c.from, c.aspect, st, Differs)
		}
	}
	e, err := readLinux(r.Text, p)
	if err != nil || !slices.Equal(e.LosslessPriorities, p.LosslessPriorities) {
		t.Fatalf("unedited: %+v %v", e, err)
	}
}
