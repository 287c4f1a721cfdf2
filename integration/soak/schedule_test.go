package soak

import (
	"slices"
	"testing"

	"github.com/openinof/inof/zones"
)

func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	l := DefaultLayout()
	a, b, c := NewSchedule(42, l), NewSchedule(42, l), NewSchedule(43, l)
	same := 0
	for range 200 {
		sa, sb, sc := a.Next(), b.Next(), c.Next()
		if sa.Describe(l) != sb.Describe(l) {
			t.Fatalf("same seed, different steps:\n%s\n%s", sa.Describe(l), sb.Describe(l))
		}
		if sa.Describe(l) == sc.Describe(l) {
			same++
		}
	}
	if same > 20 {
		t.Fatalf("seeds 42 and 43 share %d of 200 steps", same)
	}
}

func TestScheduleDrawsEveryKindAndKeepsItsRules(t *testing.T) {
	l := DefaultLayout()
	s := NewSchedule(7, l)
	seen := map[Kind]int{}
	for range 500 {
		st := s.Next()
		if len(st.Faults) == 0 {
			t.Fatalf("%s: no fault", st.Describe(l))
		}
		nodes, nics := map[string]bool{}, map[int]bool{}
		restarting, hostNIC := map[string]bool{}, map[string]bool{}
		for _, f := range st.Faults {
			seen[f.Kind]++
			switch f.Kind {
			case KillReflector, TermReflector, UplinkFlap, Impair, ClockStep, DiskFull, KillSwitch, TermSwitch, KillAfterFlap:
				if nodes[f.Node] {
					t.Fatalf("%s: %s twice", st.Describe(l), f.Node)
				}
				nodes[f.Node] = true
				if f.Kind == KillSwitch || f.Kind == TermSwitch || f.Kind == KillAfterFlap {
					restarting[f.Node] = true
				}
			case AccessFlap, Registration, AddressChange, AgeOut:
				if nics[f.NIC] {
					t.Fatalf("%s: NIC %d twice", st.Describe(l), f.NIC)
				}
				nics[f.NIC] = true
				if n := l.NICs[f.NIC]; n.Role.IsHost() && f.Kind != AgeOut {
					hostNIC[n.Switch] = true
				}
			}
		}
		for sw := range restarting {
			if hostNIC[sw] {
				t.Fatalf("%s: a host NIC of %s changes while it restarts", st.Describe(l), sw)
			}
		}
		for _, i := range st.Heal {
			if !st.Faults[i].Kind.Transient() {
				t.Fatalf("%s: heals a lasting fault", st.Describe(l))
			}
		}
	}
	for _, k := range Kinds() {
		if seen[k] == 0 {
			t.Errorf("%s never drawn in 500 steps", k)
		}
	}
}

func TestEditsApplyAndStayValid(t *testing.T) {
	l := DefaultLayout()
	c := l.Config.Clone()
	kinds := map[string]int{}
	for pick := range uint64(400) {
		var e Edit
		var ok bool
		switch pick % 3 {
		case 0:
			e, ok = ZoneEditFor(pick, l, c)
		case 1:
			e, ok = AliasEditFor(pick, l, c)
		default:
			e, ok = SettingsEditFor(pick, c), true
		}
		if !ok {
			continue
		}
		again, _ := ZoneEditFor(pick, l, c)
		if pick%3 == 0 && again.String() != e.String() {
			t.Fatalf("pick %d: %q then %q", pick, e, again)
		}
		next := c.Clone()
		if err := e.Apply(next); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if err := next.Validate(); err != nil {
			t.Fatalf("%s leaves an invalid configuration: %v", e, err)
		}
		if len(next.Zones) < minZones {
			t.Fatalf("%s leaves %d zones", e, len(next.Zones))
		}
		kinds[e.Args[0]+" "+e.Args[1]]++
		c = next
	}
	for _, k := range []string{"zone create", "zone delete", "zone add", "zone remove", "zone rename",
		"alias create", "alias add", "alias remove", "fabric set"} {
		if kinds[k] == 0 {
			t.Errorf("no %q among 400 edits: %v", k, kinds)
		}
	}
}

func TestCandidatesOfConcurrentEdits(t *testing.T) {
	l := DefaultLayout()
	base := l.Config
	addTo := func(zone string, m zones.Member) Edit {
		return Edit{Args: []string{"zone", "add", zone, m.String()}, Keys: []string{"zone:" + zone},
			Apply: func(c *zones.Config) error {
				c.Zones[zone].Members = append(slices.Clone(c.Zones[zone].Members), m)
				return nil
			}}
	}
	m1 := zones.MustParseMember("10.100.9.3")
	m2 := zones.MustParseMember("10.100.10.3")
	// Two zones: one outcome whatever the order.
	if got := Candidates([]*zones.Config{base}, addTo("zA", m1), addTo("zB", m2), true, true); len(got) != 1 {
		t.Fatalf("edits of two zones: %d candidates", len(got))
	}
	// One zone: both in (one after the other), or either alone (the newer
	// generation wins the zone).
	got := Candidates([]*zones.Config{base}, addTo("zA", m1), addTo("zA", m2), true, true)
	if len(got) != 3 {
		t.Fatalf("edits of one zone: %d candidates, want 3", len(got))
	}
	// One refused: only the other.
	if got := Candidates([]*zones.Config{base}, addTo("zA", m1), addTo("zA", m2), true, false); len(got) != 1 ||
		!slices.Contains(got[0].Zones["zA"].Members, m1) || slices.Contains(got[0].Zones["zA"].Members, m2) {
		t.Fatalf("one edit refused: %d candidates", len(got))
	}
	// On the way: each alone on base (here also the refused one's
	// partner), never the refused one.
	if got := Passing([]*zones.Config{base}, addTo("zA", m1), addTo("zB", m2), true, true); len(got) != 2 ||
		!slices.Contains(got[0].Zones["zA"].Members, m1) || slices.Contains(got[0].Zones["zB"].Members, m2) ||
		!slices.Contains(got[1].Zones["zB"].Members, m2) || slices.Contains(got[1].Zones["zA"].Members, m1) {
		t.Fatalf("passing configurations of two edits: %d", len(got))
	}
	if got := Passing([]*zones.Config{base}, addTo("zA", m1), addTo("zB", m2), false, true); len(got) != 1 ||
		slices.Contains(got[0].Zones["zA"].Members, m1) {
		t.Fatalf("passing configurations with one refused: %d", len(got))
	}
}

// TestAfterEditUnderCandidates: an edit drawn from the model's zoning while
// concurrent edits are unresolved is explained by the candidates it does
// (taken) or does not (refused) apply to.
func TestAfterEditUnderCandidates(t *testing.T) {
	l := DefaultLayout()
	m := zones.MustParseMember("10.100.9.3")
	with := l.Config.Clone()
	with.Zones["zA"].Members = append(slices.Clone(with.Zones["zA"].Members), m)
	remove := Edit{Args: []string{"zone", "remove", "zA", m.String()}, Keys: []string{"zone:zA"},
		Apply: func(c *zones.Config) error {
			z := c.Zones["zA"]
			if !slices.Contains(z.Members, m) {
				return zones.ErrNotFound
			}
			z.Members = slices.DeleteFunc(slices.Clone(z.Members), func(x zones.Member) bool { return x == m })
			return nil
		}}
	poss := []*zones.Config{with, l.Config}
	if got := AfterEdit(poss, remove, true); len(got) != 1 || !SameConfig(got[0], l.Config) {
		t.Fatalf("taken: %d configurations", len(got))
	}
	if got := AfterEdit(poss, remove, false); len(got) != 1 || !SameConfig(got[0], l.Config) {
		t.Fatalf("refused: %d configurations, want the one without the member", len(got))
	}
	if got := AfterEdit([]*zones.Config{with}, remove, false); len(got) != 0 {
		t.Fatal("a refusal no configuration explains was explained")
	}
	if got := AfterEdit([]*zones.Config{l.Config}, remove, true); len(got) != 0 {
		t.Fatal("an edit no configuration takes was explained")
	}
	// A delete refused by a reflector that holds a candidate without the
	// zone (seed 16243500294112775592).
	without := l.Config.Clone()
	delete(without.Zones, "zA")
	del := Edit{Args: []string{"zone", "delete", "zA"}, Keys: []string{"zone:zA"},
		Apply: func(c *zones.Config) error { return deleteObject(c.Zones, "zA") }}
	if got := AfterEdit([]*zones.Config{l.Config, without}, del, false); len(got) != 1 || !SameConfig(got[0], without) {
		t.Fatalf("refused delete: %d configurations, want the one without the zone", len(got))
	}
}

func TestParseZoning(t *testing.T) {
	out := []byte(`{"apiVersion":"inofctl/v1","kind":"Zoning","revision":"x","item":{"revision":"x",
"settings":{"default_zone_enabled":true,"hard_zoning":false},
"zones":[{"name":"zA","members":["10.100.1.2","alias:rackA","10.100.2.0/24"]}],
"aliases":[{"name":"rackA","members":["nqn.2014-08.org.example:t1","10.100.3.2-10.100.3.4"]}]}}`)
	c, err := ParseZoning(out)
	if err != nil {
		t.Fatal(err)
	}
	want := zones.NewConfig(zones.Settings{DefaultZoneEnabled: true})
	want.Zones["zA"] = &zones.Zone{Name: "zA", Members: []zones.Member{zones.MustParseMember("10.100.2.0/24"),
		zones.MustParseMember("10.100.1.2"), zones.MustParseMember("alias:rackA")}}
	want.Aliases["rackA"] = &zones.Alias{Name: "rackA", Members: []zones.Member{zones.MustParseMember("10.100.3.2-10.100.3.4"),
		zones.MustParseMember("nqn.2014-08.org.example:t1")}}
	if !SameConfig(c, want) {
		t.Fatalf("got\n%swant\n%s", ConfigString(c), ConfigString(want))
	}
}

func TestKindsWithout(t *testing.T) {
	ks, err := KindsWithout("clock-step, both-reflectors")
	if err != nil || len(ks) != len(Kinds())-2 || slices.Contains(ks, ClockStep) || slices.Contains(ks, BothReflectors) {
		t.Fatalf("KindsWithout = %v, %v", ks, err)
	}
	if ks, err := KindsWithout(""); err != nil || len(ks) != len(Kinds()) {
		t.Fatalf("nothing skipped: %v, %v", ks, err)
	}
	if _, err := KindsWithout("no-such-fault"); err == nil {
		t.Fatal("an unknown kind accepted")
	}
}
