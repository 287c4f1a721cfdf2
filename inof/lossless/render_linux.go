package lossless

import (
	"fmt"
	"strings"
)

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
			linuxQoS(&t, p, dev)
			linuxPFC(&t, p, plan, dev)
			linuxECN(&t, p, dev)
		}
	}
	t.line("")
	t.line("# Not set on hosts: ECN marking (Kmin/Kmax/Pmax) is done by switches;")
	t.line("# the PFC watchdog (detection %d ms, restoration %d ms, action %s) has no dcb setting.",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	return t.bytes()
}

// linuxQoS writes trust, the DSCP app table and ETS.
func linuxQoS(t *text, p Profile, dev string) {
	t.line("dcb apptrust set dev %s order %s", dev, p.RoCE.Trust)
	m := p.hostDSCPMap()
	pairs := make([]string, 0, len(m))
	for _, d := range sortedKeys(m) {
		pairs = append(pairs, fmt.Sprintf("%d:%d", d, m[d]))
	}
	if len(pairs) > 0 {
		t.line("dcb app replace dev %s dscp-prio %s", dev, strings.Join(pairs, " "))
	}
	tsa := joinMap(func(tc uint8) string {
		if c, ok := p.trafficClass(tc); ok && c.Scheduler == SchedulerStrict {
			return "strict"
		}
		return "ets"
	})
	bw := joinMap(func(tc uint8) string {
		c, _ := p.trafficClass(tc)
		return fmt.Sprint(c.Weight)
	})
	prioTC := joinMap(func(prio uint8) string { return fmt.Sprint(p.PriorityToTC[prio]) })
	t.line("dcb ets set dev %s tc-tsa %s tc-bw %s prio-tc %s", dev, tsa, bw, prioTC)
}

// linuxPFC writes PFC and the priority-to-buffer map.
func linuxPFC(t *text, p Profile, plan PortPlan, dev string) {
	pfc := joinMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "on"
		}
		return "off"
	})
	t.line("# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;")
	t.line("# expect a lossless buffer of at least %d B (NIC xoff %d B); switch side: %s.",
		plan.NIC.MinBuffer, plan.NIC.Xoff, headroomSummary(plan))
	t.line("dcb pfc set dev %s prio-pfc %s delay %d", dev, pfc, plan.Port.CableMeters)
	buf := joinMap(func(prio uint8) string {
		if p.isLossless(prio) {
			return "1"
		}
		return "0"
	})
	t.line("dcb buffer set dev %s prio-buffer %s", dev, buf)
}

// linuxECN writes the DCQCN enables and parameters through mlx5 sysfs.
func linuxECN(t *text, p Profile, dev string) {
	for _, s := range p.ECNSysfs() {
		t.line("echo %d > /sys/class/net/%s/ecn/%s", s.Value, dev, s.Path)
	}
}
