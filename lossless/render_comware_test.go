package lossless

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// comwareForms are the Comware 7 commands we render (H3C PFC configuration
// guide and command reference; WRED table view from the ACL and QoS command
// reference), with the numbers' ranges the references state or the
// platform table assumes.
var comwareForms = []struct {
	re    *regexp.Regexp
	check func(m []string, c *ComwareCaps) error
}{
	{re: regexp.MustCompile(`^(system-view|return| quit)$`)},
	{re: regexp.MustCompile(`^qos map-table (dscp-dot1p|dot1p-lp)$`)},
	{re: regexp.MustCompile(`^ import ([\d ]+) export ([0-7])$`)},
	{re: regexp.MustCompile(`^qos wred queue table ([\w-]+)$`)},
	{re: regexp.MustCompile(`^ queue ([0-7]) drop-level ([0-2]) low-limit (\d+) high-limit (\d+) discard-probability (\d+)$`),
		check: func(m []string, c *ComwareCaps) error {
			lo, _ := strconv.Atoi(m[3])
			hi, _ := strconv.Atoi(m[4])
			p, _ := strconv.Atoi(m[5])
			if lo >= hi || hi > int(c.WREDMaxLimit) || p > 100 {
				return fmt.Errorf("low %d high %d (max %d) probability %d", lo, hi, c.WREDMaxLimit, p)
			}
			return nil
		}},
	{re: regexp.MustCompile(`^ queue ([0-7]) ecn$`)},
	{re: regexp.MustCompile(`^priority-flow-control deadlock precision (high|normal|low)$`)},
	{re: regexp.MustCompile(`^priority-flow-control deadlock (cos ([0-7]) interval|auto-recover cos ([0-7]) delay) (\d+)$`),
		check: func(m []string, c *ComwareCaps) error { return inRange(m[4], 1, uint64(c.DeadlockMaxUnits)) }},
	{re: regexp.MustCompile(`^priority-flow-control deadlock auto-recover action (discard|forwarding)$`)},
	{re: regexp.MustCompile(`^interface (\S+)$`)},
	{re: regexp.MustCompile(`^ qos trust (dscp|dot1p)$`)},
	{re: regexp.MustCompile(`^ priority-flow-control (enable|deadlock enable|deadlock recover-mode auto)$`)},
	{re: regexp.MustCompile(`^ priority-flow-control no-drop dot1p ([0-7])$`)},
	{re: regexp.MustCompile(`^ priority-flow-control dot1p ([0-7]) headroom (\d+)$`)},
	{re: regexp.MustCompile(`^ qos wfq byte-count$`)},
	{re: regexp.MustCompile(`^ qos wfq ([0-7]) group 1 byte-count (\d+)$`),
		check: func(m []string, c *ComwareCaps) error { return inRange(m[2], 1, uint64(c.WFQMaxWeight)) }},
	{re: regexp.MustCompile(`^ qos wfq ([0-7]) group sp$`)},
	{re: regexp.MustCompile(`^ qos wred apply ([\w-]+)$`)},
}

// comwareProblems lists what a Comware rendering breaks, and the guide's
// rules: PFC deadlock detection does nothing without an interval for each
// no-drop CoS, so every lossless priority needs interval and auto-recover
// delay; every WRED table sets limits for every lossless queue at every
// drop level (else the switch marks at its own defaults) and enables ECN;
// an applied table exists.
func comwareProblems(text string, c *ComwareCaps, lossless []uint8) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	tables := map[string]map[string]bool{}
	table := ""
	interval, delay := map[string]bool{}, map[string]bool{}
	precision := false
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
			continue
		}
		var m []string
		found := false
		for _, f := range comwareForms {
			if m = f.re.FindStringSubmatch(l); m != nil {
				found = true
				if f.check != nil {
					if err := f.check(m, c); err != nil {
						bad("%q: %v", l, err)
					}
				}
				break
			}
		}
		if !found {
			bad("no such Comware command: %q", l)
			continue
		}
		switch {
		case strings.HasPrefix(l, "qos wred queue table "):
			table = m[1]
			tables[table] = map[string]bool{}
		case strings.HasPrefix(l, " queue ") && strings.Contains(l, "drop-level"):
			tables[table][m[1]+"/"+m[2]] = true
		case strings.HasPrefix(l, " queue ") && strings.HasSuffix(l, " ecn"):
			tables[table][m[1]+"/ecn"] = true
		case strings.HasPrefix(l, "priority-flow-control deadlock precision"):
			precision = true
		case strings.Contains(l, " interval "):
			interval[m[2]] = true
		case strings.Contains(l, " delay "):
			delay[m[3]] = true
		case strings.HasPrefix(l, " qos wred apply "):
			if tables[m[1]] == nil {
				bad("qos wred apply %s: no such table", m[1])
			}
		}
	}
	if !precision {
		bad("no priority-flow-control deadlock precision")
	}
	for _, prio := range lossless {
		p := itoa(prio)
		if !interval[p] || !delay[p] {
			bad("CoS %s: deadlock detection enabled without interval and auto-recover delay", p)
		}
		for name, entries := range tables {
			for _, k := range []string{"0", "1", "2", "ecn"} {
				if !entries[p+"/"+k] {
					bad("WRED table %s: queue %s lacks %s (the switch would use its defaults)", name, p, k)
				}
			}
		}
	}
	if strings.Contains(text, "qos wrr") {
		bad("qos wrr: byte-count weights beyond some models' range; RoCE templates use qos wfq")
	}
	return out
}

func TestComwareMeetsCommandReference(t *testing.T) {
	profiles := ruleProfiles(t, TargetComware)
	for name, p := range profiles {
		r, err := RenderDevice(p, TargetComware, RenderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range comwareProblems(string(r.Text), r.Platform.Comware, p.LosslessPriorities) {
			t.Errorf("%s: %s", name, problem)
		}
	}
}

// The WFQ byte-counts keep the profile's ratio in 1–15: 50:50 → 1:1,
// 10:90 → 1:9, 30:70 → 3:7; 37:63 does not reduce and is scaled (9:15,
// 37.5 %:62.5 %, said in a note).
func TestComwareWeights(t *testing.T) {
	for _, c := range []struct {
		a, b       uint8
		wa, wb     uint32
		exactShare bool
	}{{50, 50, 1, 1, true}, {10, 90, 1, 9, true}, {30, 70, 3, 7, true}, {37, 63, 9, 15, false}} {
		p := Default()
		p.TrafficClasses[0].Weight, p.TrafficClasses[1].Weight = c.a, c.b
		var ns notes
		w, shares := comwareWeights(p, 15, &ns)
		if w[0] != c.wa || w[3] != c.wb {
			t.Errorf("%d:%d → %d:%d, want %d:%d", c.a, c.b, w[0], w[3], c.wa, c.wb)
		}
		if c.exactShare != (len(ns) == 0) {
			t.Errorf("%d:%d: shares %v, notes %v", c.a, c.b, shares, ns)
		}
	}
}

// The checker catches the old renderer: deadlock detection enabled with no
// interval, a WRED table without limits, qos wrr byte-count 50.
func TestComwareCheckerCatchesOldFindings(t *testing.T) {
	pl, _ := LookupPlatform(TargetComware, "")
	old := `system-view
qos wred queue table INOF-100G
 queue 3 ecn
 quit
interface HundredGigE1/0/1
 qos trust dscp
 priority-flow-control enable
 priority-flow-control no-drop dot1p 3
 priority-flow-control deadlock enable
 qos wrr 3 group 1 byte-count 50
 qos wred apply INOF-100G
 quit
return`
	got := strings.Join(comwareProblems(old, pl.Comware, []uint8{3}), "\n")
	for _, want := range []string{"CoS 3: deadlock detection enabled without interval", "queue 3 lacks 0", "qos wrr", "no priority-flow-control deadlock precision"} {
		if !strings.Contains(got, want) {
			t.Errorf("checker misses %q:\n%s", want, got)
		}
	}
}
