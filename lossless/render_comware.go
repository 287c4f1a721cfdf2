package lossless

import "fmt"

// renderComware writes H3C Comware 7 commands. Comware's WRED limits are an
// average queue length in a model-specific unit, so the ECN thresholds are
// given as comments to convert rather than as numbers that could be wrong.
func renderComware(p Profile, plans []PortPlan) []byte {
	var t text
	t.line("# iNOF lossless profile %q for H3C Comware 7.", p.Name)
	t.line("system-view")
	if p.RoCE.Trust == "dscp" {
		t.line("qos map-table dscp-dot1p")
		for _, d := range sortedKeys(p.DSCPToPriority) {
			t.line(" import %d export %d", d, p.DSCPToPriority[d])
		}
		t.line(" quit")
	}
	t.line("qos map-table dot1p-lp")
	for prio, tc := range p.PriorityToTC {
		t.line(" import %d export %d", prio, tc)
	}
	t.line(" quit")
	tables := map[uint32]bool{}
	for _, plan := range plans {
		name := fmt.Sprintf("INOF-%dG", plan.Port.SpeedMbps/1000)
		if tables[plan.Port.SpeedMbps] {
			continue
		}
		tables[plan.Port.SpeedMbps] = true
		t.line("qos wred queue table %s", name)
		for _, tc := range p.losslessTCs() {
			t.line(" # ECN Kmin %d B, Kmax %d B, Pmax %d %%: Comware takes low-limit/high-limit as an average queue",
				plan.ECN.KminBytes, plan.ECN.KmaxBytes, plan.ECN.PmaxPercent)
			t.line(" # length in a model-specific unit (0-16000); convert, then configure:")
			t.line(" # queue %d drop-level 0 low-limit <Kmin> high-limit <Kmax> discard-probability %d", tc, plan.ECN.PmaxPercent)
			t.line(" queue %d ecn", tc)
		}
		t.line(" quit")
	}
	for _, plan := range plans {
		for _, dev := range plan.Port.Interfaces {
			comwareInterface(&t, p, plan, dev)
		}
	}
	t.line("# PFC watchdog: detection %d ms, restoration %d ms, action %s. Comware's",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	t.line("# `priority-flow-control deadlock` timers use model-specific units; set them to match.")
	t.line("return")
	return t.bytes()
}

// comwareInterface writes one interface's trust, PFC, scheduling and WRED.
func comwareInterface(t *text, p Profile, plan PortPlan, dev string) {
	t.line("interface %s", dev)
	t.line(" # %s; %s", portSummary(plan), headroomSummary(plan))
	t.line(" # Comware sizes PFC headroom per model (priority-flow-control dot1p headroom, in cells); check it covers the above.")
	t.line(" qos trust %s", map[string]string{"dscp": "dscp", "pcp": "dot1p"}[p.RoCE.Trust])
	t.line(" priority-flow-control enable")
	for _, prio := range p.LosslessPriorities {
		t.line(" priority-flow-control no-drop dot1p %d", prio)
	}
	t.line(" priority-flow-control deadlock enable")
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerStrict {
			t.line(" qos wrr %d group sp", c.TC)
			continue
		}
		t.line(" qos wrr %d group 1 byte-count %d", c.TC, c.Weight)
	}
	t.line(" qos wred apply INOF-%dG", plan.Port.SpeedMbps/1000)
	t.line(" quit")
}
