package lossless

import "strings"

// renderNVUE writes NVIDIA Cumulus Linux NVUE commands. They set what
// `nv set qos roce mode lossless` sets, explicitly, so the profile's values
// apply; a PFC and a congestion-control profile per port class carry the
// cable length and the speed-scaled ECN thresholds.
func renderNVUE(p Profile, plans []PortPlan) []byte {
	var t text
	t.line("# iNOF lossless profile %q for NVIDIA Cumulus Linux (NVUE).", p.Name)
	trust := "l3"
	if p.RoCE.Trust == "pcp" {
		trust = "l2"
	}
	t.line("nv set qos mapping default-global trust %s", trust)
	for _, d := range sortedKeys(p.DSCPToPriority) {
		t.line("nv set qos mapping default-global dscp %d switch-priority %d", d, p.DSCPToPriority[d])
	}
	for prio, tc := range p.PriorityToTC {
		t.line("nv set qos egress-queue-mapping default-global switch-priority %d traffic-class %d", prio, tc)
	}
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerStrict {
			t.line("nv set qos egress-scheduler default-global traffic-class %d mode strict", c.TC)
			continue
		}
		t.line("nv set qos egress-scheduler default-global traffic-class %d mode dwrr", c.TC)
		t.line("nv set qos egress-scheduler default-global traffic-class %d bw-percent %d", c.TC, c.Weight)
	}
	for _, plan := range plans {
		name := "inof-" + plan.Port.Name
		ifaces := strings.Join(plan.Port.Interfaces, ",")
		t.line("# %s", portSummary(plan))
		t.line("nv set qos pfc %s switch-priority %s", name, joinUint8(p.LosslessPriorities, ","))
		t.line("nv set qos pfc %s cable-length %d", name, plan.Port.CableMeters)
		t.line("nv set qos pfc %s tx enable", name)
		t.line("nv set qos pfc %s rx enable", name)
		t.line("# Cumulus sizes the lossless headroom itself from the cable length and cannot be given a size;")
		t.line("# computed here: %s.", headroomSummary(plan))
		for _, tc := range p.losslessTCs() {
			t.line("nv set qos congestion-control %s traffic-class %d ecn enable", name, tc)
			t.line("nv set qos congestion-control %s traffic-class %d min-threshold %d", name, tc, plan.ECN.KminBytes)
			t.line("nv set qos congestion-control %s traffic-class %d max-threshold %d", name, tc, plan.ECN.KmaxBytes)
			t.line("nv set qos congestion-control %s traffic-class %d probability %d", name, tc, plan.ECN.PmaxPercent)
		}
		t.line("nv set interface %s qos pfc profile %s", ifaces, name)
		t.line("nv set interface %s qos congestion-control profile %s", ifaces, name)
		t.line("nv set interface %s qos pfc-watchdog", ifaces)
	}
	t.line("nv set qos pfc-watchdog polling-interval %d", p.Watchdog.PollMs)
	t.line("# NVUE cannot express the PFC watchdog detection time (%d ms), restoration time (%d ms) or action (%s):",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	t.line("# Cumulus detects from the polling interval and always drops on the stalled queue.")
	t.line("nv config apply")
	return t.bytes()
}
