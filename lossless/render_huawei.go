package lossless

// huaweiPHB names the per-hop behaviour CloudEngine maps to queue 0–7.
func huaweiPHB(queue uint8) string {
	return [...]string{"be", "af1", "af2", "af3", "af4", "ef", "cs6", "cs7"}[queue]
}

// renderHuawei writes Huawei CloudEngine commands. PFC headroom is given in
// cells of switch_buffer.cell_bytes; ECN drop-profile limits on CloudEngine
// are relative to the queue buffer, so the absolute thresholds are comments.
func renderHuawei(p Profile, plans []PortPlan) []byte {
	var t text
	t.line("# iNOF lossless profile %q for Huawei CloudEngine.", p.Name)
	t.line("system-view")
	t.line("diffserv domain default")
	for _, d := range sortedKeys(p.DSCPToPriority) {
		tc := p.PriorityToTC[p.DSCPToPriority[d]]
		t.line(" ip-dscp-inbound %d phb %s green", d, huaweiPHB(tc))
	}
	t.line(" quit")
	t.line("dcb pfc")
	for _, prio := range p.LosslessPriorities {
		t.line(" priority %d", prio)
	}
	t.line(" quit")
	for _, plan := range plans {
		for _, dev := range plan.Port.Interfaces {
			huaweiInterface(&t, p, plan, dev)
		}
	}
	t.line("# PFC watchdog: detection %d ms, restoration %d ms, action %s. CloudEngine's",
		p.Watchdog.DetectionMs, p.Watchdog.RestorationMs, p.Watchdog.Action)
	t.line("# `dcb pfc deadlock-detect`/`deadlock-recovery` intervals use model-specific units; set them to match.")
	t.line("return")
	return t.bytes()
}

// huaweiInterface writes one interface's trust, PFC buffer, scheduling and ECN.
func huaweiInterface(t *text, p Profile, plan PortPlan, dev string) {
	cell := p.SwitchBuffer.CellBytes
	cells := (plan.HeadroomBytes + cell - 1) / cell
	t.line("interface %s", dev)
	t.line(" # %s; %s", portSummary(plan), headroomSummary(plan))
	t.line(" trust %s", map[string]string{"dscp": "dscp", "pcp": "8021p"}[p.RoCE.Trust])
	t.line(" dcb pfc enable mode manual")
	for _, prio := range p.LosslessPriorities {
		t.line(" # headroom in cells of %d B (switch_buffer.cell_bytes): set cell_bytes to this ASIC's cell size", cell)
		t.line(" dcb pfc buffer %d xoff dynamic 5 hdrm %d cells", prio, cells)
	}
	var drr []uint8
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerETS {
			drr = append(drr, c.TC)
		}
	}
	if len(drr) > 0 {
		t.line(" qos drr %s", joinUint8(drr, " "))
	}
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerStrict {
			t.line(" qos pq %d", c.TC)
			continue
		}
		t.line(" qos queue %d drr weight %d", c.TC, c.Weight)
	}
	for _, tc := range p.losslessTCs() {
		t.line(" # ECN Kmin %d B, Kmax %d B, Pmax %d %%: CloudEngine drop-profile limits are relative to the",
			plan.ECN.KminBytes, plan.ECN.KmaxBytes, plan.ECN.PmaxPercent)
		t.line(" # queue buffer; convert them into a drop-profile and apply it with `qos queue %d wred <profile>`.", tc)
		t.line(" qos queue %d ecn", tc)
	}
	t.line(" quit")
}
