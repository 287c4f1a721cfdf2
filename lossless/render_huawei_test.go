package lossless

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// huaweiForm is one CloudEngine command form from the command reference
// (CloudEngine 6800/8800 V300 command reference), for the families that
// accept it, with the ranges of its numbers.
type huaweiForm struct {
	re       *regexp.Regexp
	families []string // nil: every family
	check    func(m []string, pl Platform) error
}

func inRange(s string, lo, hi uint64) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return fmt.Errorf("%s outside %d–%d", s, lo, hi)
	}
	return nil
}

var huaweiForms = []huaweiForm{
	{re: regexp.MustCompile(`^system-view$`)},
	{re: regexp.MustCompile(`^(commit|return| quit)$`)},
	{re: regexp.MustCompile(`^qos buffer headroom-pool size (\d+) kbytes slot (\d+)$`), families: []string{"ce6855"}},
	{re: regexp.MustCompile(`^dcb pfc deadlock-detect interval (\d+)$`), families: []string{"ce6855"},
		check: func(m []string, _ Platform) error {
			for _, v := range []string{"10", "100", "500", "1000"} {
				if m[1] == v {
					return nil
				}
			}
			return fmt.Errorf("precision %s is not 10, 100, 500 or 1000", m[1])
		}},
	{re: regexp.MustCompile(`^dcb pfc deadlock-(detect|recovery) timer (\d+)$`), families: []string{"ce6866"},
		check: func(m []string, _ Platform) error { return inRange(m[2], 10, 1500) }},
	{re: regexp.MustCompile(`^dcb pfc deadlock recovery-behavior (discard|forwarding) slot \d+$`)},
	{re: regexp.MustCompile(`^dcb pfc dscp-mapping enable slot \d+$`), families: []string{"ce6855"}},
	{re: regexp.MustCompile(`^diffserv domain default$`)},
	{re: regexp.MustCompile(`^ ip-dscp-inbound (\d+) phb (be|af[1-4]|ef|cs6|cs7) (green|yellow|red)$`),
		check: func(m []string, _ Platform) error { return inRange(m[1], 0, 63) }},
	{re: regexp.MustCompile(`^ 8021p-inbound ([0-7]) phb (be|af[1-4]|ef|cs6|cs7) (green|yellow|red)$`)},
	{re: regexp.MustCompile(`^drop-profile ([\w-]+)$`)},
	{re: regexp.MustCompile(`^ color (green|yellow|red) buffer-size low-limit (\d+) high-limit (\d+) discard-percentage (\d+)$`),
		check: func(m []string, pl Platform) error {
			lo, hi := pl.Huawei.WREDBytes[0], pl.Huawei.WREDBytes[1]
			if err := inRange(m[2], lo, hi); err != nil {
				return err
			}
			low, _ := strconv.ParseUint(m[2], 10, 64)
			if err := inRange(m[3], low, hi); err != nil {
				return fmt.Errorf("high-limit %w", err)
			}
			return inRange(m[4], 1, 100)
		}},
	{re: regexp.MustCompile(`^dcb pfc$`)},
	{re: regexp.MustCompile(`^ priority ([0-7])$`)},
	{re: regexp.MustCompile(`^ priority ([0-7]) deadlock-detect time (\d+)$`), families: []string{"ce6855"},
		check: func(m []string, _ Platform) error { return inRange(m[2], 1, 15) }},
	{re: regexp.MustCompile(`^ priority ([0-7]) deadlock-recovery time (\d+)$`), families: []string{"ce6855"},
		check: func(m []string, _ Platform) error { return inRange(m[2], 0, 31) }},
	{re: regexp.MustCompile(`^interface (\S+)$`)},
	{re: regexp.MustCompile(`^ trust (dscp|8021p outer)$`)},
	{re: regexp.MustCompile(`^ dcb pfc enable mode manual$`)},
	{re: regexp.MustCompile(`^ dcb pfc buffer ([0-7]) hdrm (\d+) kbytes$`), families: []string{"ce6855"},
		check: func(m []string, _ Platform) error { return inRange(m[2], 16, 30720) }},
	{re: regexp.MustCompile(`^ dcb pfc buffer ([0-5]) xon dynamic (\d+) xoff dynamic (\d+)$`), families: []string{"ce6866"},
		check: func(m []string, _ Platform) error {
			if err := inRange(m[2], 0, 10); err != nil {
				return err
			}
			return inRange(m[3], 0, 10)
		}},
	{re: regexp.MustCompile(`^ qos (drr|pq)( [0-7])+$`)},
	{re: regexp.MustCompile(`^ qos queue ([0-7]) drr weight (\d+)$`), check: func(m []string, _ Platform) error { return inRange(m[2], 1, 100) }},
	{re: regexp.MustCompile(`^ qos queue ([0-7]) wred ([\w-]+)$`)},
	{re: regexp.MustCompile(`^ qos queue ([0-7]) ecn$`)},
}

// huaweiProblems lists what a CloudEngine rendering breaks: forms the
// family does not take or numbers outside their ranges, and the rules the
// configuration guide gives: the chip headroom pool (CE6855 family) covers
// every hdrm, DSCP-based PFC on that family needs dscp-mapping, `qos queue N
// ecn` needs a WRED drop profile bound to the queue, the PFC queues fit the
// family, and CloudEngine's two-stage configuration ends with commit.
func huaweiProblems(text string, pl Platform, trust string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines = append(lines, l)
		}
	}
	drops := map[string]bool{}
	wred := map[string]bool{} // interface|queue
	iface := ""
	var pool, hdrmTotal uint64
	priorities := map[string]bool{}
	dscpMapping := false
	for _, l := range lines {
		var form *huaweiForm
		var m []string
		for i := range huaweiForms {
			if mm := huaweiForms[i].re.FindStringSubmatch(l); mm != nil {
				form, m = &huaweiForms[i], mm
				break
			}
		}
		if form == nil {
			bad("no such CloudEngine command: %q", l)
			continue
		}
		if form.families != nil && !strings.Contains(strings.Join(form.families, " "), pl.Name) {
			bad("%q is not a %s command", l, pl.Name)
			continue
		}
		if form.check != nil {
			if err := form.check(m, pl); err != nil {
				bad("%q: %v", l, err)
			}
		}
		switch {
		case strings.HasPrefix(l, "qos buffer headroom-pool"):
			pool, _ = strconv.ParseUint(m[1], 10, 64)
		case strings.HasPrefix(l, "dcb pfc dscp-mapping"):
			dscpMapping = true
		case strings.HasPrefix(l, "drop-profile "):
			drops[m[1]] = true
		case strings.HasPrefix(l, "interface "):
			iface = m[1]
		case strings.HasPrefix(l, " priority ") && len(m) == 2:
			priorities[m[1]] = true
			if q, _ := strconv.Atoi(m[1]); q > int(pl.Huawei.MaxQueue) {
				bad("PFC queue %d above %s's %d", q, pl.Name, pl.Huawei.MaxQueue)
			}
		case strings.Contains(l, " hdrm "):
			v, _ := strconv.ParseUint(m[2], 10, 64)
			hdrmTotal += v
		case strings.HasPrefix(l, " qos queue ") && strings.Contains(l, " wred "):
			if !drops[m[2]] {
				bad("%s: drop profile %s not defined before use", iface, m[2])
			}
			wred[iface+"|"+m[1]] = true
		case strings.HasPrefix(l, " qos queue ") && strings.HasSuffix(l, " ecn"):
			if !wred[iface+"|"+m[1]] {
				bad("%s: qos queue %s ecn without a WRED drop profile on the queue", iface, m[1])
			}
		}
	}
	if len(priorities) > pl.Huawei.MaxPFCQueues {
		bad("%d PFC priorities, %s takes %d", len(priorities), pl.Name, pl.Huawei.MaxPFCQueues)
	}
	if pl.Huawei.HeadroomPool && pool < hdrmTotal {
		bad("chip headroom pool %d kbytes below the %d kbytes of hdrm (mandatory on %s)", pool, hdrmTotal, pl.Name)
	}
	if pl.Huawei.DSCPMapping && trust == "dscp" && !dscpMapping {
		bad("DSCP-based PFC on %s needs dcb pfc dscp-mapping enable", pl.Name)
	}
	if n := len(lines); n < 2 || lines[n-2] != "commit" || lines[n-1] != "return" {
		bad("does not end with commit, return (two-stage configuration: nothing takes effect)")
	}
	return out
}

func TestHuaweiMeetsCommandReference(t *testing.T) {
	profiles := ruleProfiles(t, TargetHuawei)
	for name, p := range profiles {
		for _, pl := range Platforms(TargetHuawei) {
			r, err := RenderDevice(p, TargetHuawei, RenderOptions{Platform: pl.Name})
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range huaweiProblems(string(r.Text), pl, p.RoCE.Trust) {
				t.Errorf("%s on %s: %s", name, pl.Name, problem)
			}
		}
	}
}

// The checker refuses what the old renderer wrote: an undocumented
// `dcb pfc buffer 3 xoff dynamic 5 hdrm 562 cells`, no headroom pool, no
// dscp-mapping, ECN without a drop profile, no commit.
func TestHuaweiCheckerCatchesOldFindings(t *testing.T) {
	ce6855, _ := LookupPlatform(TargetHuawei, "ce6855")
	old := `system-view
dcb pfc
 priority 3
 quit
interface 100GE1/0/1
 trust dscp
 dcb pfc enable mode manual
 dcb pfc buffer 3 xoff dynamic 5 hdrm 562 cells
 qos queue 3 ecn
 quit
return`
	got := strings.Join(huaweiProblems(old, ce6855, "dscp"), "\n")
	for _, want := range []string{`no such CloudEngine command: " dcb pfc buffer 3 xoff dynamic 5 hdrm 562 cells"`,
		"qos queue 3 ecn without a WRED drop profile", "needs dcb pfc dscp-mapping enable", "does not end with commit"} {
		if !strings.Contains(got, want) {
			t.Errorf("checker misses %q:\n%s", want, got)
		}
	}
	ce6866, _ := LookupPlatform(TargetHuawei, "ce6866")
	if got := huaweiProblems("system-view\ninterface x\n dcb pfc buffer 3 hdrm 80 kbytes\n quit\ncommit\nreturn\n", ce6866, "dscp"); len(got) == 0 {
		t.Error("hdrm accepted on the CE6866 family")
	}
}
