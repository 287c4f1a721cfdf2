package lossless

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedProfiles reads the OpenCC seed profiles in testdata (seed-*.yaml):
// the DRR weight sweep, the Onyx ECN thresholds, two lossless classes.
func seedProfiles(t *testing.T) map[string]Profile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "seed-*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("seed profiles: %v, %v", files, err)
	}
	out := map[string]Profile{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseYAML(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[p.Name] = p
	}
	return out
}

// ruleProfiles are the profiles each renderer's rule test renders: the
// default, the default with trust pcp, and the seed profiles, with
// interface names of the target's kind.
func ruleProfiles(t *testing.T, target string) map[string]Profile {
	t.Helper()
	pcp := goldenProfile(target)
	pcp.RoCE.Trust = "pcp"
	out := map[string]Profile{"default": goldenProfile(target), "pcp": pcp}
	for name, p := range seedProfiles(t) {
		out[name] = withInterfaces(p, target)
	}
	return out
}

// The cross-target check over the default and the seed profiles: no target
// does something else than the profile in a way it could express, and the
// values that must agree do, read from each rendering.
func TestCheckAgreesAcrossTargets(t *testing.T) {
	profiles := seedProfiles(t)
	profiles["default"] = Default()
	for name, p := range profiles {
		rep, err := Check(p, CheckOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rep.Differs() {
			t.Errorf("%s: a target differs:\n%s", name, rep.Table())
		}
		want := p.classifyMap()
		for _, r := range rep.Targets {
			e, tn := r.Effective, r.Platform.String()
			if joinUint8(e.LosslessPriorities, ",") != joinUint8(p.LosslessPriorities, ",") {
				t.Errorf("%s %s: lossless %v", name, tn, e.LosslessPriorities)
			}
			if strings.Join(strings.Fields(describeMap(e.ToTC)), " ") != strings.Join(strings.Fields(describeMap(want)), " ") || len(e.ToTC) != 64 {
				t.Errorf("%s %s: map %s", name, tn, describeMap(e.ToTC))
			}
			if c := e.CNP; c.DSCP != p.CNP.DSCP || c.TC != 6 || !c.Strict || c.Lossless {
				t.Errorf("%s %s: CNP %+v", name, tn, c)
			}
			for i, s := range e.ETS {
				if w := p.profileETS()[i]; s.TC != w.TC || s.Strict != w.Strict || math.Abs(s.Percent-w.Percent) > 0.05 {
					t.Errorf("%s %s: ETS %v, want %v", name, tn, e.ETS, p.profileETS())
				}
			}
			if r.Target == TargetLinux {
				continue
			}
			if w := e.Watchdog; w == nil || w.DetectionMs != p.Watchdog.DetectionMs || w.RestorationMs != p.Watchdog.RestorationMs || w.Action != p.Watchdog.Action {
				t.Errorf("%s %s: watchdog %+v", name, tn, w)
			}
			for i, ecn := range e.ECN {
				plan, _ := PlanPort(p, p.Ports[i])
				exact := ecn.ECNThresholds == plan.ECN
				if !ecn.Unconfirmed && !exact {
					t.Errorf("%s %s: ECN %+v, want %+v", name, tn, ecn, plan.ECN)
				}
			}
		}
	}
}

// The table of the default profile, byte for byte.
func TestCheckTableGolden(t *testing.T) {
	rep, err := Check(Default(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "default.check.txt"), []byte(rep.Table()))
}

// A profile some target cannot follow fails the check and says where: NVUE
// restores after one polling interval, not restoration_ms; CloudEngine
// cannot only alert.
func TestCheckReportsDifferences(t *testing.T) {
	p := Default()
	p.Watchdog = Watchdog{DetectionMs: 200, RestorationMs: 1000, PollMs: 200, Action: ActionAlert}
	rep, err := Check(p, CheckOptions{Platforms: map[string]string{TargetHuawei: "ce6866"}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Differs() {
		t.Fatalf("no difference reported:\n%s", rep.Table())
	}
	table := rep.Table()
	for _, want := range []string{"≠ 200/200 ms drop", "nvue/spectrum-2: Cumulus restores after one polling interval",
		"huawei/ce6866: CloudEngine cannot only alert", "huawei/ce6866", "~ 74284 B"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestCheckUnknownPlatform(t *testing.T) {
	if _, err := Check(Default(), CheckOptions{Platforms: map[string]string{TargetSONiC: "tofino"}}); err == nil {
		t.Error("an unknown platform was checked")
	}
	if _, err := Check(Default(), CheckOptions{Platforms: map[string]string{"junos": "mx"}}); err == nil {
		t.Error("an unknown target was taken")
	}
}
