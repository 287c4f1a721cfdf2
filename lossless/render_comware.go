package lossless

import (
	"fmt"
	"math"
	"strings"
)

// renderComware writes H3C Comware 7 commands: the DSCP → 802.1p → local
// precedence maps, a WRED table per speed with the profile's ECN limits,
// PFC deadlock detection with its interval and auto-recovery, and per
// interface trust, PFC with headroom, WFQ and the WRED table. Comware
// counts WRED limits and PFC headroom in buffer cells; the platform's cell
// (or switch_buffer.cell_bytes) converts bytes.
func renderComware(in renderInput) (Rendering, error) {
	p, c := in.p, in.pl.Comware
	cell := p.SwitchBuffer.CellBytes
	var ns notes
	var t text
	t.line("# iNOF lossless profile %q for H3C Comware 7, platform %s.", p.Name, in.pl.Name)
	t.line("# WRED limits and PFC headroom are in cells of %d B (unit and cell size not confirmed by the command", cell)
	t.line("# reference: check `display qos wred table` and `display priority-flow-control` after applying).")
	t.line("system-view")
	if p.RoCE.Trust == "dscp" {
		t.line("qos map-table dscp-dot1p")
		byPrio := map[uint8][]string{}
		for d, prio := range dscpPriorities(p.DSCPToPriority) {
			byPrio[prio] = append(byPrio[prio], itoa(d))
		}
		for _, prio := range sortedKeys(byPrio) {
			t.line(" import %s export %d", strings.Join(byPrio[prio], " "), prio)
		}
		t.line(" quit")
	}
	t.line("qos map-table dot1p-lp")
	for prio, tc := range p.PriorityToTC {
		t.line(" import %d export %d", prio, tc)
	}
	t.line(" quit")

	tables := map[uint32]string{}
	for _, plan := range in.plans {
		name := fmt.Sprintf("INOF-%dG", plan.Port.SpeedMbps/1000)
		ecn := comwareECN(plan.ECN, cell, c.WREDMaxLimit, &ns)
		if _, done := tables[plan.Port.SpeedMbps]; done {
			continue
		}
		tables[plan.Port.SpeedMbps] = name
		t.line("qos wred queue table %s", name)
		for _, tc := range p.losslessTCs() {
			t.line(" # ECN Kmin %d B, Kmax %d B, Pmax %d %% at %d Mb/s", plan.ECN.KminBytes, plan.ECN.KmaxBytes, plan.ECN.PmaxPercent, plan.Port.SpeedMbps)
			for level := range 3 {
				t.line(" queue %d drop-level %d low-limit %d high-limit %d discard-probability %d", tc, level, ecn.low, ecn.high, plan.ECN.PmaxPercent)
			}
			t.line(" queue %d ecn", tc)
		}
		t.line(" quit")
	}

	precision, interval, delay := comwareWatchdog(p.Watchdog, c, &ns)
	t.line("priority-flow-control deadlock precision %s", precision)
	for _, prio := range p.LosslessPriorities {
		t.line("priority-flow-control deadlock cos %d interval %d", prio, interval)
		t.line("priority-flow-control deadlock auto-recover cos %d delay %d", prio, delay)
	}
	if p.Watchdog.Action != ActionAlert {
		t.line("priority-flow-control deadlock auto-recover action %s", map[string]string{ActionDrop: "discard", ActionForward: "forwarding"}[p.Watchdog.Action])
	}

	weights, _ := comwareWeights(p, c.WFQMaxWeight, &ns)
	for _, plan := range in.plans {
		cells := divCeil(plan.HeadroomBytes, cell)
		for _, dev := range plan.Port.Interfaces {
			comwareInterface(&t, p, plan, dev, cells, weights)
		}
	}
	t.comments("# Note: ", ns)
	t.line("return")
	read, err := readComware(t.bytes(), in)
	if err != nil {
		return Rendering{}, err
	}
	return Rendering{Text: t.bytes(), Notes: ns, Effective: read}, nil
}

// comwareLimits are the WRED limits in cells.
type comwareLimits struct{ low, high uint32 }

// comwareECN converts the thresholds to cells, at most maxLimit.
func comwareECN(e ECNThresholds, cell, maxLimit uint32, ns *notes) comwareLimits {
	low, high := uint32(divCeil64(e.KminBytes, uint64(cell))), uint32(divCeil64(e.KmaxBytes, uint64(cell)))
	if high > maxLimit {
		ns.add("ECN Kmax %d B is %d cells; Comware WRED limits stop at %d cells (%d B)", e.KmaxBytes, high, maxLimit, uint64(maxLimit)*uint64(cell))
		high = maxLimit
	}
	if low >= high {
		ns.add("ECN Kmin %d B does not fit below the WRED high limit; set to %d cells", e.KminBytes, high-1)
		low = high - 1
	}
	return comwareLimits{low: low, high: high}
}

// comwareWeights are the WFQ byte-counts per ets class: the profile's
// weights reduced to the smallest integers with the same ratio, scaled to
// at most maxWeight when they do not fit, and the shares they give.
func comwareWeights(p Profile, maxWeight uint32, ns *notes) (map[uint8]uint32, []TCShare) {
	g := uint32(0)
	var top uint32
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerETS {
			g = gcd(g, uint32(c.Weight))
			top = max(top, uint32(c.Weight))
		}
	}
	out := map[uint8]uint32{}
	for _, c := range p.scheduled() {
		if c.Scheduler != SchedulerETS {
			continue
		}
		w := uint32(c.Weight) / g
		if top/g > maxWeight {
			w = max(1, (uint32(c.Weight)*maxWeight+top/2)/top)
		}
		out[c.TC] = w
	}
	shares := p.sharesOf(func(c TrafficClass) float64 { return float64(out[c.TC]) })
	for _, s := range shares {
		if c, _ := p.trafficClass(s.TC); !s.Strict && math.Abs(s.Percent-float64(c.Weight)) >= 0.05 {
			ns.add("WFQ byte-count %d for TC%d gives %.1f %%, not %d %%: the ratio does not fit byte-counts of 1–%d", out[s.TC], s.TC, s.Percent, c.Weight, maxWeight)
		}
	}
	return out, shares
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func divCeil64(a, b uint64) uint64 { return (a + b - 1) / b }

// comwareInterface writes one interface's trust, PFC, scheduling and WRED.
func comwareInterface(t *text, p Profile, plan PortPlan, dev string, cells uint32, weights map[uint8]uint32) {
	t.line("interface %s", dev)
	t.line(" # %s; %s", portSummary(plan), headroomSummary(plan))
	t.line(" qos trust %s", map[string]string{"dscp": "dscp", "pcp": "dot1p"}[p.RoCE.Trust])
	t.line(" priority-flow-control enable")
	for _, prio := range p.LosslessPriorities {
		t.line(" priority-flow-control no-drop dot1p %d", prio)
		t.line(" priority-flow-control dot1p %d headroom %d", prio, cells)
	}
	t.line(" priority-flow-control deadlock recover-mode auto")
	t.line(" priority-flow-control deadlock enable")
	t.line(" qos wfq byte-count")
	for _, c := range p.scheduled() {
		if w, ok := weights[c.TC]; ok {
			t.line(" qos wfq %d group 1 byte-count %d", c.TC, w)
		} else {
			t.line(" qos wfq %d group sp", c.TC)
		}
	}
	t.line(" qos wred apply INOF-%dG", plan.Port.SpeedMbps/1000)
	t.line(" quit")
}
