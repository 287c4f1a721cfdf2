package lossless

import (
	"fmt"
	"strings"
)

// renderNVUE writes NVIDIA Cumulus Linux NVUE commands, in the order the
// Cumulus QoS guide asks: the buffer pools before PFC, then classification,
// egress queues and scheduling, per port class a PFC and a congestion
// control profile (cable length, speed-scaled ECN thresholds), and the PFC
// watchdog.
func renderNVUE(in renderInput) (Rendering, error) {
	p, pl := in.p, in.pl
	var ns notes
	var t text
	t.line("# iNOF lossless profile %q for NVIDIA Cumulus Linux (NVUE), platform %s.", p.Name, pl.Name)

	lossless := pl.NVUE.LosslessPoolPercent
	t.line("# Buffer pools first: the guide requires a lossless pool before PFC.")
	t.line("nv set qos traffic-pool default-lossless memory-percent %d", lossless)
	t.line("nv set qos traffic-pool default-lossy memory-percent %d", 100-lossless)
	for prio := range uint8(NumPriorities) {
		if p.isLossless(prio) {
			t.line("nv unset qos traffic-pool default-lossy switch-priority %d", prio)
			t.line("nv set qos traffic-pool default-lossless switch-priority %d", prio)
		}
	}

	if p.RoCE.Trust == "pcp" {
		t.line("nv set qos mapping default-global trust l2")
		for prio := range uint8(NumPriorities) {
			t.line("nv set qos mapping default-global pcp %d switch-priority %d", prio, prio)
		}
	} else {
		t.line("nv set qos mapping default-global trust l3")
		byPrio := map[uint8][]uint8{}
		for d, prio := range dscpPriorities(p.DSCPToPriority) {
			byPrio[prio] = append(byPrio[prio], uint8(d))
		}
		for _, prio := range sortedKeys(byPrio) {
			t.line("nv set qos mapping default-global dscp %s switch-priority %d", joinUint8(byPrio[prio], ","), prio)
		}
	}
	for prio, tc := range p.PriorityToTC {
		t.line("nv set qos egress-queue-mapping default-global switch-priority %d traffic-class %d", prio, tc)
	}
	for tc := range uint8(NumPriorities) {
		c, ok := p.trafficClass(tc)
		switch {
		case !ok:
			t.line("nv set qos egress-scheduler default-global traffic-class %d mode strict", tc)
		case c.Scheduler == SchedulerStrict:
			t.line("nv set qos egress-scheduler default-global traffic-class %d mode strict", tc)
		default:
			t.line("nv set qos egress-scheduler default-global traffic-class %d mode dwrr", tc)
			t.line("nv set qos egress-scheduler default-global traffic-class %d bw-percent %d", tc, c.Weight)
		}
	}
	ns.add("traffic classes the profile leaves out carry no traffic and are set strict, so the DWRR shares (%s) total 100 %% instead of adding Cumulus' defaults of 12–13 %% per class",
		dwrrList(p))

	w := p.Watchdog
	for _, plan := range in.plans {
		name := "inof-" + plan.Port.Name
		ifaces := strings.Join(plan.Port.Interfaces, ",")
		t.line("# %s", portSummary(plan))
		t.line("nv set qos pfc %s switch-priority %s", name, joinUint8(p.LosslessPriorities, ","))
		t.line("nv set qos pfc %s cable-length %d", name, plan.Port.CableMeters)
		t.line("nv set qos pfc %s tx enable", name)
		t.line("nv set qos pfc %s rx enable", name)
		t.line("# Cumulus sizes the lossless headroom itself from the cable length; computed here: %s.", headroomSummary(plan))
		for _, tc := range p.losslessTCs() {
			t.line("nv set qos congestion-control %s traffic-class %d ecn enable", name, tc)
			t.line("nv set qos congestion-control %s traffic-class %d min-threshold %d", name, tc, plan.ECN.KminBytes)
			t.line("nv set qos congestion-control %s traffic-class %d max-threshold %d", name, tc, plan.ECN.KmaxBytes)
			t.line("nv set qos congestion-control %s traffic-class %d probability %d", name, tc, plan.ECN.PmaxPercent)
		}
		t.line("nv set interface %s qos pfc profile %s", ifaces, name)
		t.line("nv set interface %s qos congestion-control profile %s", ifaces, name)
		t.line("nv set interface %s qos pfc-watchdog state enable", ifaces)
	}
	ns.add("Cumulus sizes lossless headroom itself from each PFC profile's cable length; the profile's headroom is in the comments")
	poll, robustness, _ := nvueWatchdog(w, &ns)
	t.line("nv set qos pfc-watchdog polling-interval %d", poll)
	t.line("nv set qos pfc-watchdog robustness %d", robustness)
	t.comments("# Note: ", ns)
	t.line("nv config apply")
	read, err := readNVUE(t.bytes(), p, in.plans)
	if err != nil {
		return Rendering{}, err
	}
	return Rendering{Text: t.bytes(), Notes: ns, Effective: read}, nil
}

// dwrrList is the ets classes' shares, e.g. "TC0 50 %, TC3 50 %".
func dwrrList(p Profile) string {
	var parts []string
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerETS {
			parts = append(parts, fmt.Sprintf("TC%d %d %%", c.TC, c.Weight))
		}
	}
	return strings.Join(parts, ", ")
}
