package soak

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openinof/inof/zones"
)

// Edits as the pickers make them, for tests.

func zoneDelete(name string) Edit {
	return Edit{Args: []string{"zone", "delete", name}, Keys: []string{"zone:" + name},
		Apply: func(c *zones.Config) error { return deleteObject(c.Zones, name) }}
}

func zoneCreate(name string, ms ...string) Edit {
	members := parseMembers(ms)
	return Edit{Args: append([]string{"zone", "create", name}, ms...), Keys: []string{"zone:" + name},
		Apply: func(c *zones.Config) error {
			if c.Zones[name] != nil {
				return zones.ErrDuplicate
			}
			c.Zones[name] = &zones.Zone{Name: name, Members: slices.Clone(members)}
			return nil
		}}
}

func zoneAdd(name string, ms ...string) Edit {
	members := parseMembers(ms)
	return Edit{Args: append([]string{"zone", "add", name}, ms...), Keys: []string{"zone:" + name},
		Apply: func(c *zones.Config) error {
			z := c.Zones[name]
			if z == nil {
				return zones.ErrNotFound
			}
			z.Members = append(slices.Clone(z.Members), members...)
			return nil
		}}
}

func aliasAdd(name string, ms ...string) Edit {
	members := parseMembers(ms)
	return Edit{Args: append([]string{"alias", "add", name}, ms...), Keys: []string{"alias:" + name},
		Apply: func(c *zones.Config) error {
			a := c.Aliases[name]
			if a == nil {
				return zones.ErrNotFound
			}
			a.Members = append(slices.Clone(a.Members), members...)
			return nil
		}}
}

func parseMembers(ss []string) []zones.Member {
	out := make([]zones.Member, len(ss))
	for i, s := range ss {
		out[i] = zones.MustParseMember(s)
	}
	return out
}

// possible reports whether c is one of the configurations m may hold.
func possible(m *Model, c *zones.Config) bool {
	return slices.ContainsFunc(m.Possible(), func(p *zones.Config) bool { return SameConfig(p, c) })
}

// TestConcurrentEditsWhileCandidatesAreUnresolved is step 5 of the
// 30-minute soak of seed 17557118548203131219: concurrent edits (rr1
// deletes zC, rr2 adds to it: either may win), a settings change, then
// concurrent edits again (rr1 deletes zB, rr2's zone create refused) and
// an alias change, all before the harness read the zoning back. The second
// concurrent edits were modelled from the zoning in force alone, which the
// first had left at their base: both of their acknowledged edits dropped
// out of the model, and the reflectors (which agreed: rr2's add had won)
// held "a zoning the edits cannot have made" at every later step.
func TestConcurrentEditsWhileCandidatesAreUnresolved(t *testing.T) {
	l := DefaultLayout()
	m := NewModel(l)
	m.SetConfig(l.Config.Clone())
	base := l.Config

	cands, passing := m.ConcurrentlyEdited(zoneDelete("zC"), zoneAdd("zC", "10.101.15.2", "10.101.6.4"), true, true)
	if len(cands) != 2 || len(passing) != 2 {
		t.Fatalf("first concurrent edits: %d candidates, %d passing; want 2, 2", len(cands), len(passing))
	}
	if possible(m, base) {
		t.Error("both edits were taken, yet the base they were made on is still possible")
	}
	settings := Edit{Args: []string{"fabric", "set", "hard-zoning", "off"}, Keys: []string{"settings"},
		Apply: func(c *zones.Config) error { c.Settings.HardZoning = false; return nil }}
	if after := m.Edited("rr2", settings); len(after) != 2 {
		t.Fatalf("settings under two candidates: %d configurations", len(after))
	}
	if cands, _ := m.ConcurrentlyEdited(zoneDelete("zB"), zoneCreate("zG", "10.101.5.4"), true, false); len(cands) != 2 {
		t.Fatalf("second concurrent edits: %d candidates, want one per candidate of the first", len(cands))
	}
	if after := m.Edited("rr1", aliasAdd("arrays", "nqn.2014-08.org.example:td1")); len(after) != 2 {
		t.Fatalf("alias change: %d configurations", len(after))
	}

	// What the reflectors of the 30-minute soak held (rr2's add won), and
	// what those of its rerun held (rr1's delete won).
	held := func(addWon bool) *zones.Config {
		c := base.Clone()
		if addWon {
			if err := zoneAdd("zC", "10.101.15.2", "10.101.6.4").Apply(c); err != nil {
				t.Fatal(err)
			}
		} else {
			delete(c.Zones, "zC")
		}
		delete(c.Zones, "zB")
		c.Settings.HardZoning = false
		if err := aliasAdd("arrays", "nqn.2014-08.org.example:td1").Apply(c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, addWon := range []bool{true, false} {
		if c := held(addWon); !possible(m, c) {
			t.Errorf("add won %v: the reflectors' zoning is not possible:\n%s", addWon, ConfigString(c))
			for _, p := range m.Possible() {
				t.Logf("possible:\n%s", ConfigDiff(p, c))
			}
		}
	}

	// The oracle can still fail: a lost acknowledged edit (zC as it was,
	// or zB back), or the refused create landed, is no possible zoning.
	lost := held(true)
	lost.Zones["zC"] = base.Zones["zC"]
	back := held(false)
	back.Zones["zB"] = base.Zones["zB"]
	landed := held(false)
	if err := zoneCreate("zG", "10.101.5.4").Apply(landed); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]*zones.Config{"both first edits lost": lost, "zB's delete lost": back, "the refused create landed": landed} {
		if possible(m, c) {
			t.Errorf("%s, yet the zoning is possible", what)
		}
	}
}

// TestConcurrentEditsNoBaseExplains: an outcome no possible configuration
// explains (an edit taken that applies to none) leaves the model as it was
// and says so.
func TestConcurrentEditsNoBaseExplains(t *testing.T) {
	l := DefaultLayout()
	m := NewModel(l)
	m.SetConfig(l.Config.Clone())
	if cands, _ := m.ConcurrentlyEdited(zoneDelete("zX"), zoneAdd("zA", "10.101.5.4"), true, true); cands != nil {
		t.Fatalf("a delete of a zone no configuration has was explained: %d candidates", len(cands))
	}
	if len(m.Possible()) != 1 || !SameConfig(m.Config, l.Config) {
		t.Fatal("the model changed")
	}
	if after := m.Edited("rr1", zoneDelete("zX")); after != nil || !SameConfig(m.Config, l.Config) {
		t.Fatal("an edit no configuration takes was explained")
	}
}

func TestConfigDiff(t *testing.T) {
	l := DefaultLayout()
	got := l.Config.Clone()
	delete(got.Zones, "zB")
	got.Settings.HardZoning = !got.Settings.HardZoning
	d := ConfigDiff(l.Config, got)
	for _, want := range []string{"-zone zB ", "-dz=", "+dz="} {
		if !slices.ContainsFunc(splitLines(d), func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if n := len(splitLines(d)); n != 3 {
		t.Errorf("diff has %d lines, want 3:\n%s", n, d)
	}
	if d := ConfigDiff(l.Config, l.Config.Clone()); d != "" {
		t.Errorf("diff of the same zoning: %q", d)
	}
}

func splitLines(s string) []string {
	return slices.DeleteFunc(strings.Split(s, "\n"), func(x string) bool { return x == "" })
}

// TestCommitted: an inofctl error that says the reflector committed the
// edit (app/reflector's originate hand-off) counts as taken; a refusal,
// a conflict or a store that could not write does not.
func TestCommitted(t *testing.T) {
	for msg, want := range map[string]bool{
		"topo: inofctl zone add zA 10.100.9.3 --yes: exit status 1: inofctl: reflector: committed; replication still running: context deadline exceeded (DeadlineExceeded)": true,
		"inofctl: reflector: committed; originating failed: speaker stopped (Unknown)":                                                                                      true,
		"inofctl: reflector: committed but not yet replicated (Unavailable)":                                                                                                true,
		"inofctl: reflector: configuration changed since the transaction began; begin again (Aborted)":                                                                      false,
		"inofctl: edit 1: zone \"zC\": not found (NotFound)":                                                                                                                false,
		"inofctl: reflector: zones: write: no space left on device (Internal)":                                                                                              false,
	} {
		if got := Committed(errors.New(msg)); got != want {
			t.Errorf("Committed(%q) = %v, want %v", msg, got, want)
		}
	}
	if Committed(nil) {
		t.Error("Committed(nil)")
	}
}
