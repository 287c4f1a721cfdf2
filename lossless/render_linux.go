package lossless

import (
	"fmt"
	"path"
	"strings"
)

// LinuxStep is one setting of a Linux host: an iproute2 dcb command (Argv)
// or an mlx5 ECN sysfs write (SysfsPath, Value). Comment, when set, explains
// the step; it is printed before it and changes nothing.
type LinuxStep struct {
	Comment []string
	// Argv is the command and its arguments, e.g. dcb pfc set dev IF ...
	Argv []string
	// SysfsPath is the file under /sys/class/net written with Value.
	SysfsPath string
	Value     uint32
}

// String is the step as one shell command line.
func (s LinuxStep) String() string {
	if s.SysfsPath != "" {
		return fmt.Sprintf("echo %d > %s", s.Value, s.SysfsPath)
	}
	return strings.Join(s.Argv, " ")
}

// LinuxSteps lists, in order, what a Linux host runs to put dev in the port
// class of plan: trust and the DSCP app table, ETS, PFC with the mlx5 buffer
// hint, the priority-to-buffer map, then the DCQCN sysfs writes.
func LinuxSteps(p Profile, plan PortPlan, dev string) []LinuxStep {
	var out []LinuxStep
	dcb := func(args ...string) { out = append(out, LinuxStep{Argv: append([]string{"dcb"}, args...)}) }

	dcb("apptrust", "set", "dev", dev, "order", p.RoCE.Trust)
	m := p.hostDSCPMap()
	if len(m) > 0 {
		args := []string{"app", "replace", "dev", dev, "dscp-prio"}
		for _, d := range sortedKeys(m) {
			args = append(args, fmt.Sprintf("%d:%d", d, m[d]))
		}
		dcb(args...)
	}
	tsa := prioMap(func(tc uint8) string {
		if c, ok := p.trafficClass(tc); ok && c.Scheduler == SchedulerStrict {
			return "strict"
		}
		return "ets"
	})
	bw := prioMap(func(tc uint8) string {
		c, _ := p.trafficClass(tc)
		return fmt.Sprint(c.Weight)
	})
	prioTC := prioMap(func(prio uint8) string { return fmt.Sprint(p.PriorityToTC[prio]) })
	dcb(append(append(append(append(append([]string{"ets", "set", "dev", dev, "tc-tsa"}, tsa...), "tc-bw"), bw...), "prio-tc"), prioTC...)...)

	pfc := prioMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "on"
		}
		return "off"
	})
	dcb(append(append([]string{"pfc", "set", "dev", dev, "prio-pfc"}, pfc...), "delay", fmt.Sprint(plan.Port.CableMeters))...)
	out[len(out)-1].Comment = []string{
		"mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;",
		fmt.Sprintf("expect a lossless buffer of at least %d B (NIC xoff %d B); switch side: %s.",
			plan.NIC.MinBuffer, plan.NIC.Xoff, headroomSummary(plan)),
	}
	buf := prioMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "1"
		}
		return "0"
	})
	dcb(append([]string{"buffer", "set", "dev", dev, "prio-buffer"}, buf...)...)

	for _, s := range p.ECNSysfs() {
		out = append(out, LinuxStep{SysfsPath: path.Join("/sys/class/net", dev, "ecn", s.Path), Value: s.Value})
	}
	return out
}

// renderLinux writes iproute2 dcb commands and mlx5 ECN sysfs writes, one
// block per interface, as a shell script.
func renderLinux(p Profile, plans []PortPlan) []byte {
	var t text
	t.line("#!/bin/sh")
	t.line("# iNOF lossless profile %q for Linux hosts: iproute2 dcb and mlx5 ECN sysfs.", p.Name)
	t.line("set -e")
	for _, plan := range plans {
		for _, dev := range plan.Port.Interfaces {
			t.line("")
			t.line("# %s (%s)", dev, portSummary(plan))
			for _, s := range LinuxSteps(p, plan, dev) {
				for _, c := range s.Comment {
					t.line("# %s", c)
				}
				t.line("%s", s)
			}
		}
	}
	t.line("")
	t.line("# Not set on hosts: ECN marking (Kmin/Kmax/Pmax) is done by switches;")
	t.line("# the PFC watchdog (detection %d ms, restoration %d ms, action %s) has no dcb setting.",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	return t.bytes()
}
