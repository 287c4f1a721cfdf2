package lossless

import (
	"fmt"
	"strings"
)

// Rule identifiers, one per validation rule (docs/lossless.md explains each).
const (
	RuleWellFormed      = "well-formed"
	RuleECNThresholds   = "ecn-thresholds"
	RuleECNBeforePFC    = "ecn-before-pfc"
	RuleHeadroom        = "headroom-covers-inflight"
	RulePFCLosslessOnly = "pfc-lossless-only"
	RuleCNPStrict       = "cnp-strict"
	RuleETSSum          = "ets-sum-100"
	RuleDSCPAgree       = "dscp-maps-agree"
	RuleMTUFits         = "mtu-fits"
	RuleWatchdog        = "watchdog-ranges"
	RulePlatform        = "platform-fits"
)

// Problem is one broken rule: which field, its value, the rule, what is
// wrong and how to fix it.
type Problem struct {
	Field  string // YAML path, e.g. "ports[1].cable_m"
	Value  string
	Rule   string // one of the Rule constants
	Detail string
	Fix    string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s = %s: [%s] %s; fix: %s", p.Field, p.Value, p.Rule, p.Detail, p.Fix)
}

// Problems is every problem Validate found; it is the error Validate returns.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, 0, len(ps)+1)
	lines = append(lines, fmt.Sprintf("lossless profile: %d problem(s)", len(ps)))
	for _, p := range ps {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}

// Rules returns the problems that broke the given rule.
func (ps Problems) Rules(rule string) Problems {
	var out Problems
	for _, p := range ps {
		if p.Rule == rule {
			out = append(out, p)
		}
	}
	return out
}

// Validate checks every rule and returns all problems as Problems, or nil.
func (p Profile) Validate() error {
	var ps Problems
	add := func(field string, value any, rule, detail, fix string) {
		v := fmt.Sprint(value)
		if v == "" {
			v = `""`
		}
		ps = append(ps, Problem{Field: field, Value: v, Rule: rule, Detail: detail, Fix: fix})
	}
	p.checkWellFormed(add)
	p.checkPFCLosslessOnly(add)
	p.checkCNPStrict(add)
	p.checkETS(add)
	p.checkDSCP(add)
	p.checkECN(add)
	p.checkHeadroom(add)
	p.checkMTU(add)
	p.checkWatchdog(add)
	p.checkPlatforms(add)
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// addFunc records one problem.
type addFunc func(field string, value any, rule, detail, fix string)

// tcOf returns the traffic class of priority prio, if the map has one.
func (p Profile) tcOf(prio uint8) (uint8, bool) {
	if int(prio) >= len(p.PriorityToTC) {
		return 0, false
	}
	return p.PriorityToTC[prio], true
}

// trafficClass returns the scheduling entry of traffic class tc.
func (p Profile) trafficClass(tc uint8) (TrafficClass, bool) {
	for _, c := range p.TrafficClasses {
		if c.TC == tc {
			return c, true
		}
	}
	return TrafficClass{}, false
}

// isLossless reports whether prio is one of the lossless priorities.
func (p Profile) isLossless(prio uint8) bool {
	for _, l := range p.LosslessPriorities {
		if l == prio {
			return true
		}
	}
	return false
}
