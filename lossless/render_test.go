package lossless

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenProfile is the default profile with interface names for a target.
func goldenProfile(target string) Profile {
	names := map[string][][]string{
		TargetLinux:   {{"ens1f0", "ens1f1"}, {"ens2f0"}, {"ens3f0"}},
		TargetSONiC:   {{"Ethernet0", "Ethernet4"}, {"Ethernet48"}, {"Ethernet52"}},
		TargetNVUE:    {{"swp1", "swp2"}, {"swp49"}, {"swp51"}},
		TargetComware: {{"HundredGigE1/0/1", "HundredGigE1/0/2"}, {"HundredGigE1/0/25"}, {"HundredGigE1/0/27"}},
		TargetHuawei:  {{"100GE1/0/1", "100GE1/0/2"}, {"100GE1/0/25"}, {"100GE1/0/27"}},
	}[target]
	p := Default()
	for i := range p.Ports {
		if i < len(names) {
			p.Ports[i].Interfaces = names[i]
		}
	}
	return p
}

func TestRenderGolden(t *testing.T) {
	ext := map[string]string{TargetLinux: "sh", TargetSONiC: "json", TargetNVUE: "txt", TargetComware: "txt", TargetHuawei: "txt", TargetTable: "txt"}
	for _, target := range Targets() {
		t.Run(target, func(t *testing.T) {
			got, err := Render(goldenProfile(target), target)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "default."+target+"."+ext[target])
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the rendering; run `go test ./lossless -update` after checking the change", path)
			}
		})
	}
}

// The golden files carry the numbers the worked tests check by hand.
func TestRenderCarriesComputedValues(t *testing.T) {
	out, err := Render(goldenProfile(TargetSONiC), TargetSONiC)
	if err != nil {
		t.Fatal(err)
	}
	// 100G/5m, SP2 constants, lossless MTU 4096: xoff ceil1024(4096 + 35751.72·1.625) = 62464.
	for _, want := range []string{`"xoff": "62464"`, `"xon": "18432"`, `"size": "80896"`,
		`"green_max_threshold": "1600000"`, `"pfc_enable": "3"`, `"24": "3"`, `"48": "6"`, `"POLL_INTERVAL": "200"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sonic output lacks %s", want)
		}
	}
}

// Settings a platform cannot take are said in its comment syntax.
func TestRenderSaysWhatItCannotExpress(t *testing.T) {
	cases := map[string][]string{
		TargetNVUE:    {"# NVUE cannot express the PFC watchdog detection time (200 ms)", "# Cumulus sizes the lossless headroom itself"},
		TargetComware: {"# ECN Kmin 400000 B, Kmax 1600000 B", "# PFC watchdog: detection 200 ms"},
		TargetHuawei:  {"# ECN Kmin 400000 B, Kmax 1600000 B", "# PFC watchdog: detection 200 ms"},
		TargetLinux:   {"# Not set on hosts: ECN marking", "the PFC watchdog (detection 200 ms"},
	}
	for target, wants := range cases {
		out, err := Render(goldenProfile(target), target)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s output lacks %q", target, w)
			}
		}
	}
}

func TestRenderErrors(t *testing.T) {
	if _, err := Render(goldenProfile(TargetLinux), "junos"); err == nil {
		t.Error("unknown target accepted")
	}
	if _, err := Render(Default(), TargetLinux); err == nil || !strings.Contains(err.Error(), "ports[0].interfaces") {
		t.Errorf("no interfaces: err = %v", err)
	}
	bad := goldenProfile(TargetLinux)
	bad.Watchdog.Action = "reboot"
	if _, err := Render(bad, TargetLinux); err == nil {
		t.Error("an invalid profile was rendered")
	}
}
