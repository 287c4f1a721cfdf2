package lossless

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// nvueForms are the NVUE commands we render, with their arguments, as the
// NVUE reference and the Cumulus QoS guide write them (Cumulus Linux 5.6+).
var nvueForms = []*regexp.Regexp{
	regexp.MustCompile(`^nv set qos traffic-pool (default-lossless|default-lossy) memory-percent (\d+)$`),
	regexp.MustCompile(`^nv (set|unset) qos traffic-pool (default-lossless|default-lossy) switch-priority ([0-7])$`),
	regexp.MustCompile(`^nv set qos mapping default-global trust (l2|l3|both|port)$`),
	regexp.MustCompile(`^nv set qos mapping default-global dscp ([0-9]+(,[0-9]+)*) switch-priority ([0-7])$`),
	regexp.MustCompile(`^nv set qos mapping default-global pcp ([0-7]) switch-priority ([0-7])$`),
	regexp.MustCompile(`^nv set qos egress-queue-mapping default-global switch-priority ([0-7]) traffic-class ([0-7])$`),
	regexp.MustCompile(`^nv set qos egress-scheduler default-global traffic-class ([0-7]) mode (dwrr|strict)$`),
	regexp.MustCompile(`^nv set qos egress-scheduler default-global traffic-class ([0-7]) bw-percent (\d+)$`),
	regexp.MustCompile(`^nv set qos pfc ([\w-]+) switch-priority ([0-7](,[0-7])*)$`),
	regexp.MustCompile(`^nv set qos pfc ([\w-]+) cable-length (\d+)$`),
	regexp.MustCompile(`^nv set qos pfc ([\w-]+) (tx|rx) (enable|disable)$`),
	regexp.MustCompile(`^nv set qos congestion-control ([\w-]+) traffic-class ([0-7]) (ecn enable|min-threshold \d+|max-threshold \d+|probability \d+)$`),
	regexp.MustCompile(`^nv set interface (\S+) qos (pfc|congestion-control) profile ([\w-]+)$`),
	regexp.MustCompile(`^nv set interface (\S+) qos pfc-watchdog( state enable)?$`),
	regexp.MustCompile(`^nv set qos pfc-watchdog polling-interval (\d+)$`),
	regexp.MustCompile(`^nv set qos pfc-watchdog robustness (\d+)$`),
	regexp.MustCompile(`^nv config apply$`),
}

// nvueDefaultBW is Cumulus' default egress scheduler: 12 % for queues
// 0, 2, 4, 6 and 13 % for 1, 3, 5, 7, all DWRR.
var nvueDefaultBW = [8]int{12, 13, 12, 13, 12, 13, 12, 13}

// nvueProblems lists the rules an NVUE rendering breaks: unknown forms,
// order (buffer pools before PFC), pool shares, the DWRR total over all 8
// classes counting Cumulus' defaults for those left alone, ranges.
func nvueProblems(text string, lossless []uint8) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	lines := []string{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	mode, bw := map[int]string{}, nvueDefaultBW
	for i := range 8 {
		mode[i] = "dwrr"
	}
	poolPercent := map[string]int{}
	lossyHas := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}
	losslessHas := map[int]bool{}
	firstPFC, lastPool := -1, -1
	mins := map[string]int{}
	for i, l := range lines {
		known := false
		for _, f := range nvueForms {
			if f.MatchString(l) {
				known = true
			}
		}
		if !known {
			bad("not an NVUE form we know: %q", l)
			continue
		}
		f := strings.Fields(l)
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		switch {
		case strings.HasPrefix(l, "nv set qos traffic-pool") && f[5] == "memory-percent":
			poolPercent[f[4]] = n(f[6])
			lastPool = i
		case strings.Contains(l, "qos traffic-pool") && f[5] == "switch-priority":
			prio := n(f[6])
			has := map[string]map[int]bool{"default-lossy": lossyHas, "default-lossless": losslessHas}[f[4]]
			has[prio] = f[1] == "set"
			lastPool = i
		case strings.HasPrefix(l, "nv set qos pfc ") && firstPFC < 0:
			firstPFC = i
		case strings.Contains(l, "egress-scheduler") && f[7] == "mode":
			mode[n(f[6])] = f[8]
		case strings.Contains(l, "egress-scheduler") && f[7] == "bw-percent":
			bw[n(f[6])] = n(f[8])
			if n(f[8]) < 1 || n(f[8]) > 100 {
				bad("bw-percent %s outside 1–100", f[8])
			}
		case strings.Contains(l, "congestion-control") && f[7] == "min-threshold":
			mins[f[4]+f[6]] = n(f[8])
		case strings.Contains(l, "congestion-control") && f[7] == "max-threshold":
			if n(f[8]) <= mins[f[4]+f[6]] {
				bad("%s: max-threshold %s not above min-threshold", f[4], f[8])
			}
		case strings.Contains(l, "congestion-control") && f[7] == "probability":
			if n(f[8]) > 100 {
				bad("probability %s above 100", f[8])
			}
		case strings.Contains(l, "pfc-watchdog polling-interval"):
			if v := n(f[5]); v < 100 || v > 5000 {
				bad("polling-interval %d outside 100–5000", v)
			}
		case strings.Contains(l, "pfc-watchdog robustness"):
			if v := n(f[5]); v < 1 || v > 1000 {
				bad("robustness %d outside 1–1000", v)
			}
		}
	}
	if firstPFC >= 0 && (lastPool < 0 || lastPool > firstPFC) {
		bad("the buffer pools must be set before PFC (traffic-pool after `nv set qos pfc`, or none)")
	}
	if sum := poolPercent["default-lossless"] + poolPercent["default-lossy"]; poolPercent["default-lossless"] == 0 || sum > 100 {
		bad("traffic pools: lossless %d %%, total %d %% (need a lossless pool, at most 100 %%)", poolPercent["default-lossless"], sum)
	}
	for _, prio := range lossless {
		if !losslessHas[int(prio)] || lossyHas[int(prio)] {
			bad("switch priority %d is not (only) in default-lossless", prio)
		}
	}
	total := 0
	for tc := range 8 {
		if mode[tc] == "dwrr" {
			total += bw[tc]
		}
	}
	if total > 100 {
		bad("DWRR bw-percent totals %d %% over the 8 classes (Cumulus defaults counted), more than 100", total)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "nv config apply" {
		bad("does not end with nv config apply")
	}
	return out
}

func TestNVUEMeetsReference(t *testing.T) {
	odd := goldenProfile(TargetNVUE)
	odd.Watchdog = Watchdog{DetectionMs: 5000, RestorationMs: 5000, PollMs: 1000, Action: ActionDrop}
	profiles := ruleProfiles(t, TargetNVUE)
	profiles["long watchdog"] = odd
	for name, p := range profiles {
		for _, pl := range Platforms(TargetNVUE) {
			r, err := RenderDevice(p, TargetNVUE, RenderOptions{Platform: pl.Name})
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range nvueProblems(string(r.Text), p.LosslessPriorities) {
				t.Errorf("%s on %s: %s", name, pl.Name, problem)
			}
			// Detection = polling-interval × robustness, as the profile says.
			poll := regexp.MustCompile(`polling-interval (\d+)`).FindStringSubmatch(string(r.Text))[1]
			rob := regexp.MustCompile(`robustness (\d+)`).FindStringSubmatch(string(r.Text))[1]
			if a, b := atoiOr(poll, 0), atoiOr(rob, 0); uint32(a*b) != p.Watchdog.DetectionMs {
				t.Errorf("%s: watchdog %d × %d ms, profile %d ms", name, a, b, p.Watchdog.DetectionMs)
			}
		}
	}
}

// The checker catches the old renderer's output: no lossless pool, and
// TC0/TC3 at 50 % on top of Cumulus' defaults for the other classes (163 %).
func TestNVUECheckerCatchesOldFindings(t *testing.T) {
	old := `nv set qos mapping default-global trust l3
nv set qos egress-scheduler default-global traffic-class 0 mode dwrr
nv set qos egress-scheduler default-global traffic-class 0 bw-percent 50
nv set qos egress-scheduler default-global traffic-class 3 mode dwrr
nv set qos egress-scheduler default-global traffic-class 3 bw-percent 50
nv set qos egress-scheduler default-global traffic-class 6 mode strict
nv set qos pfc inof-server switch-priority 3
nv set interface swp1,swp2 qos pfc-watchdog
nv set qos pfc-watchdog polling-interval 200
nv config apply`
	got := strings.Join(nvueProblems(old, []uint8{3}), "\n")
	for _, want := range []string{"totals 163 %", "need a lossless pool", "switch priority 3 is not (only) in default-lossless"} {
		if !strings.Contains(got, want) {
			t.Errorf("checker misses %q:\n%s", want, got)
		}
	}
}
