package lossless

import (
	"fmt"
	"strings"
)

// checkWellFormed checks ranges and names every other rule relies on.
func (p Profile) checkWellFormed(add addFunc) {
	if p.Name == "" {
		add("name", `""`, RuleWellFormed, "the profile has no name", "set name")
	}
	if len(p.PriorityToTC) != NumPriorities {
		add("priority_to_tc", p.PriorityToTC, RuleWellFormed,
			fmt.Sprintf("must list a traffic class for each of the %d priorities", NumPriorities),
			"list 8 traffic classes, e.g. [0, 0, 0, 3, 0, 0, 6, 0]")
	}
	for i, tc := range p.PriorityToTC {
		if tc >= NumPriorities {
			add(fmt.Sprintf("priority_to_tc[%d]", i), tc, RuleWellFormed, "traffic classes are 0–7", "use a class from 0 to 7")
		}
	}
	for i, prio := range p.LosslessPriorities {
		if prio >= NumPriorities {
			add(fmt.Sprintf("lossless_priorities[%d]", i), prio, RuleWellFormed, "priorities are 0–7", "use a priority from 0 to 7")
		}
	}
	if p.CNP.Priority >= NumPriorities {
		add("cnp.priority", p.CNP.Priority, RuleWellFormed, "priorities are 0–7", "use 6")
	}
	for _, f := range []struct {
		field string
		m     map[uint8]uint8
	}{{"dscp_to_priority", p.DSCPToPriority}, {"host_dscp_to_priority", p.HostDSCPToPriority}} {
		for _, d := range sortedKeys(f.m) {
			if d > 63 {
				add(fmt.Sprintf("%s[%d]", f.field, d), d, RuleWellFormed, "DSCP values are 0–63", "remove the entry")
			}
			if f.m[d] >= NumPriorities {
				add(fmt.Sprintf("%s[%d]", f.field, d), f.m[d], RuleWellFormed, "priorities are 0–7", "map to a priority from 0 to 7")
			}
		}
	}
	if p.RoCE.DSCP > 63 || p.CNP.DSCP > 63 {
		add("roce.dscp/cnp.dscp", fmt.Sprintf("%d/%d", p.RoCE.DSCP, p.CNP.DSCP), RuleWellFormed, "DSCP values are 0–63", "use 24 and 48")
	}
	if p.RoCE.Trust != "dscp" && p.RoCE.Trust != "pcp" {
		add("roce.trust", p.RoCE.Trust, RuleWellFormed, `trust is "dscp" or "pcp"`, `set trust: dscp`)
	}
	seen := map[uint8]bool{}
	for i, c := range p.TrafficClasses {
		field := fmt.Sprintf("traffic_classes[%d]", i)
		if c.TC >= NumPriorities {
			add(field+".tc", c.TC, RuleWellFormed, "traffic classes are 0–7", "use a class from 0 to 7")
		}
		if seen[c.TC] {
			add(field+".tc", c.TC, RuleWellFormed, "traffic class listed twice", "merge the entries")
		}
		seen[c.TC] = true
		if c.Scheduler != SchedulerStrict && c.Scheduler != SchedulerETS {
			add(field+".scheduler", c.Scheduler, RuleWellFormed, `scheduler is "strict" or "ets"`, "use strict or ets")
		}
	}
	if len(p.Ports) == 0 {
		add("ports", "[]", RuleWellFormed, "the profile has no port class", "add at least one port class")
	}
	for i, port := range p.Ports {
		if port.Name == "" {
			add(fmt.Sprintf("ports[%d].name", i), `""`, RuleWellFormed, "a port class needs a name", "name it (e.g. server, leaf)")
		}
		for j, name := range port.Interfaces {
			if !safeName(name) {
				add(fmt.Sprintf("ports[%d].interfaces[%d]", i, j), name, RuleWellFormed,
					"interface names are letters, digits and _ . / : - (they go into commands)", "use the device's interface name")
			}
		}
	}
}

// safeName reports whether an interface name is non-empty and uses only
// characters that need no quoting in a shell or a switch CLI.
func safeName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:-", r)
		if !ok {
			return false
		}
	}
	return true
}
