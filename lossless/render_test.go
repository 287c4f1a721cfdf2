package lossless

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenProfile is the default profile with interface names for a target.
func goldenProfile(target string) Profile { return withInterfaces(Default(), target) }

// withInterfaces gives the first three port classes of p interface names
// of the target's kind.
func withInterfaces(p Profile, target string) Profile {
	names := map[string][][]string{
		TargetLinux:   {{"ens1f0", "ens1f1"}, {"ens2f0"}, {"ens3f0"}},
		TargetSONiC:   {{"Ethernet0", "Ethernet4"}, {"Ethernet48"}, {"Ethernet52"}},
		TargetNVUE:    {{"swp1", "swp2"}, {"swp49"}, {"swp51"}},
		TargetComware: {{"HundredGigE1/0/1", "HundredGigE1/0/2"}, {"HundredGigE1/0/25"}, {"HundredGigE1/0/27"}},
		TargetHuawei:  {{"100GE1/0/1", "100GE1/0/2"}, {"100GE1/0/25"}, {"100GE1/0/27"}},
	}[target]
	p.Ports = slices.Clone(p.Ports)
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
			compareGolden(t, filepath.Join("testdata", "default."+target+"."+ext[target]), got)
		})
	}
	// The other platforms of the targets whose output depends on the family.
	for _, c := range []struct{ target, platform, file string }{
		{TargetSONiC, "broadcom", "default.sonic-broadcom.json"},
		{TargetHuawei, "ce6866", "default.huawei-ce6866.txt"},
	} {
		r, err := RenderDevice(goldenProfile(c.target), c.target, RenderOptions{Platform: c.platform})
		if err != nil {
			t.Fatal(err)
		}
		compareGolden(t, filepath.Join("testdata", c.file), r.Text)
	}
}

// compareGolden compares got with a golden file (-update rewrites it).
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
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
}

// The golden files carry the numbers the worked tests check by hand.
func TestRenderCarriesComputedValues(t *testing.T) {
	out, err := Render(goldenProfile(TargetSONiC), TargetSONiC)
	if err != nil {
		t.Fatal(err)
	}
	// 100G/5m: switch xoff 45056 (TestSONiCHeadroomCurrentModel), NIC xoff 55852 (larger),
	// xon 18432, size 18432 + 55852 = 74284.
	for _, want := range []string{`"xoff": "55852"`, `"xon": "18432"`, `"size": "74284"`,
		`"green_max_threshold": "1600000"`, `"pfc_enable": "3"`, `"24": "3"`, `"48": "6"`, `"POLL_INTERVAL": "200"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sonic output lacks %s", want)
		}
	}
}

// Settings a target cannot take are said in its comment syntax (or, for
// JSON, in the notes); a profile that needs more notes gets them.
func TestRenderSaysWhatItCannotExpress(t *testing.T) {
	odd := func(target string) Profile {
		p := goldenProfile(target)
		p.Watchdog = Watchdog{DetectionMs: 450, RestorationMs: 1000, PollMs: 200, Action: ActionAlert}
		return p
	}
	cases := []struct {
		target string
		p      Profile
		opt    RenderOptions
		wants  []string
	}{
		{TargetLinux, goldenProfile(TargetLinux), RenderOptions{}, []string{"# Not set on hosts: ECN marking", "# Not set on hosts: no PFC watchdog on hosts"}},
		{TargetSONiC, goldenProfile(TargetSONiC), RenderOptions{}, []string{"are the platform's own (buffers.json)"}},
		{TargetSONiC, goldenProfile(TargetSONiC), RenderOptions{Platform: "broadcom"}, []string{"size 4176 B is the guaranteed buffer"}},
		{TargetSONiC, odd(TargetSONiC), RenderOptions{}, []string{"pfcwd polls every 200 ms: detection 450 ms and restoration 1000 ms take effect at 600 and 1000 ms"}},
		{TargetNVUE, goldenProfile(TargetNVUE), RenderOptions{}, []string{"# Note: Cumulus sizes lossless headroom itself", "are set strict, so the DWRR shares"}},
		{TargetNVUE, odd(TargetNVUE), RenderOptions{}, []string{"200 × 3 = 600 ms, not 450 ms", "one polling interval without pause frames (200 ms), not restoration_ms (1000 ms)",
			"Cumulus always drops on a stalled queue"}},
		{TargetComware, goldenProfile(TargetComware), RenderOptions{}, []string{"# WRED limits and PFC headroom are in cells of 144 B"}},
		{TargetComware, odd(TargetComware), RenderOptions{}, []string{"Comware cannot only alert", "deadlock interval 5 and delay 10 at precision normal are 500 and 1000 ms (profile: 450 and 1000 ms)"}},
		{TargetHuawei, goldenProfile(TargetHuawei), RenderOptions{Platform: "ce6866"}, []string{"ce6866 has no hdrm form"}},
		{TargetHuawei, odd(TargetHuawei), RenderOptions{}, []string{"CloudEngine cannot only alert"}},
	}
	for _, c := range cases {
		r, err := RenderDevice(c.p, c.target, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		said := string(r.Text) + strings.Join(r.Notes, "\n")
		if !r.NotesInText() {
			said = strings.Join(r.Notes, "\n")
		}
		for _, w := range c.wants {
			if !strings.Contains(said, w) {
				t.Errorf("%s/%s does not say %q; notes:\n%s", c.target, r.Platform.Name, w, strings.Join(r.Notes, "\n"))
			}
		}
		if r.NotesInText() {
			for _, n := range r.Notes {
				if !strings.Contains(string(r.Text), n) {
					t.Errorf("%s: note %q is not in the text", c.target, n)
				}
			}
		}
	}
}

// One full map on every target: each says where all 64 DSCPs go, so a DSCP
// the profile does not list lands in TC 0 everywhere, not in the DSCP/8
// default of the device (DSCP 25–31 would be the lossless TC 3).
func TestRenderFullDSCPMap(t *testing.T) {
	count := map[string]*regexp.Regexp{
		TargetLinux:   regexp.MustCompile(`\b(\d+):\d\b`),
		TargetHuawei:  regexp.MustCompile(`(?m)^ ip-dscp-inbound (\d+) phb`),
		TargetSONiC:   regexp.MustCompile(`(?s)"DSCP_TO_TC_MAP".*?}\s*}`),
		TargetNVUE:    regexp.MustCompile(`(?m)^nv set qos mapping default-global dscp ([\d,]+) `),
		TargetComware: regexp.MustCompile(`(?m)^ import ([\d ]+) export \d$`),
	}
	for _, target := range DeviceTargets() {
		r, err := RenderDevice(goldenProfile(target), target, RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		text := string(r.Text)
		switch target {
		case TargetLinux:
			line := regexp.MustCompile(`(?m)^dcb app replace dev ens1f0 dscp-prio (.*)$`).FindStringSubmatch(text)[1]
			for _, m := range count[target].FindAllStringSubmatch(line, -1) {
				seen[m[1]] = true
			}
		case TargetSONiC:
			for _, d := range regexp.MustCompile(`"(\d+)": "\d"`).FindAllStringSubmatch(count[target].FindString(text), -1) {
				seen[d[1]] = true
			}
		case TargetHuawei:
			for _, m := range count[target].FindAllStringSubmatch(text, -1) {
				seen[m[1]] = true
			}
		default:
			for _, m := range count[target].FindAllStringSubmatch(text, -1) {
				for _, d := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' }) {
					seen[d] = true
				}
			}
		}
		if len(seen) != 64 {
			t.Errorf("%s maps %d DSCPs, want all 64", target, len(seen))
		}
		if got := r.Effective.ToTC; len(got) != 64 || got[25] != 0 || got[24] != 3 || got[48] != 6 {
			t.Errorf("%s: effective map %v", target, got)
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
	if _, err := RenderDevice(goldenProfile(TargetHuawei), TargetHuawei, RenderOptions{Platform: "ce12800"}); err == nil ||
		!strings.Contains(err.Error(), "ce6855, ce6866") {
		t.Errorf("unknown platform: err = %v", err)
	}
	// A headroom the command cannot take is refused, not rendered: CE6855's hdrm stops at 30720 kbytes.
	big := goldenProfile(TargetHuawei)
	big.Ports[2].HeadroomBytes = 40 << 20
	if _, err := RenderDevice(big, TargetHuawei, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "hdrm` takes 16–30720 kbytes") {
		t.Errorf("oversized hdrm: err = %v", err)
	}
}
