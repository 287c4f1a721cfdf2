package lossless

import "fmt"

// huaweiPHB names the per-hop behaviour CloudEngine maps to queue 0–7.
func huaweiPHB(queue uint8) string {
	return [...]string{"be", "af1", "af2", "af3", "af4", "ef", "cs6", "cs7"}[queue]
}

// huaweiSlot is the slot of a fixed-form switch; a stack needs the
// slot-scoped lines once per member.
const huaweiSlot = 1

// renderHuawei writes Huawei CloudEngine commands for one model family, in
// the order of the CloudEngine PFC configuration guide, ending with the
// commit CloudEngine's two-stage configuration needs.
func renderHuawei(in renderInput) (Rendering, error) {
	p, pl, h := in.p, in.pl, in.pl.Huawei
	var ns notes
	var t text
	t.line("# iNOF lossless profile %q for Huawei CloudEngine, platform %s (%s).", p.Name, pl.Name, pl.Models)
	t.line("system-view")

	nLossless := uint32(len(p.LosslessPriorities))
	hdrmKB := map[string]uint32{}
	if h.HdrmKB[1] != 0 {
		var poolKB uint32
		for _, plan := range in.plans {
			kb := divCeil(plan.HeadroomBytes, 1024)
			hdrmKB[plan.Port.Name] = kb
			poolKB += kb * nLossless * uint32(len(plan.Port.Interfaces))
		}
		if h.HeadroomPool {
			t.line("# chip headroom pool: the hdrm of every lossless queue of the interfaces below")
			t.line("qos buffer headroom-pool size %d kbytes slot %d", poolKB, huaweiSlot)
		}
	} else {
		ns.add("%s has no hdrm form of `dcb pfc buffer` (only xon/xoff thresholds): the switch sizes PFC headroom itself; the profile's headroom is in the comments", pl.Name)
	}

	w := p.Watchdog
	var wd *WatchdogTimes
	var detect, recovery uint32
	if len(h.DeadlockPrecisionMs) > 0 {
		var precision uint32
		precision, detect, recovery, wd = huaweiPrecisionWatchdog(w, h, &ns)
		t.line("dcb pfc deadlock-detect interval %d", precision)
	} else {
		detect, recovery, wd = huaweiTimerWatchdog(w, h, &ns)
		t.line("dcb pfc deadlock-detect timer %d", detect)
		t.line("dcb pfc deadlock-recovery timer %d", recovery)
	}
	if wd.Action != "" {
		t.line("dcb pfc deadlock recovery-behavior %s slot %d", huaweiBehavior(wd.Action), huaweiSlot)
	}
	if h.DSCPMapping && p.RoCE.Trust == "dscp" {
		t.line("# back-pressure by the DSCP-mapped priority, not the 802.1p of the packet")
		t.line("dcb pfc dscp-mapping enable slot %d", huaweiSlot)
	}

	t.line("diffserv domain default")
	if p.RoCE.Trust == "pcp" {
		for prio, tc := range p.PriorityToTC {
			t.line(" 8021p-inbound %d phb %s green", prio, huaweiPHB(tc))
		}
	} else {
		for d, tc := range p.classifyMap() {
			t.line(" ip-dscp-inbound %d phb %s green", d, huaweiPHB(tc))
		}
	}
	t.line(" quit")

	profiles := map[uint32]bool{}
	for _, plan := range in.plans {
		ecn := plan.ECN
		lo, hi := h.WREDBytes[0], h.WREDBytes[1]
		eff := ECNThresholds{KminBytes: min(max(ecn.KminBytes, lo), hi), KmaxBytes: min(max(ecn.KmaxBytes, lo), hi), PmaxPercent: ecn.PmaxPercent}
		if eff != ecn {
			ns.add("%s drop-profile limits take %d–%d B: ECN at %d Mb/s is Kmin %d B, Kmax %d B (profile: %d, %d B)",
				pl.Name, lo, hi, plan.Port.SpeedMbps, eff.KminBytes, eff.KmaxBytes, ecn.KminBytes, ecn.KmaxBytes)
		}
		if profiles[plan.Port.SpeedMbps] {
			continue
		}
		profiles[plan.Port.SpeedMbps] = true
		t.line("drop-profile %s", huaweiDropProfile(plan))
		t.line(" color green buffer-size low-limit %d high-limit %d discard-percentage %d", eff.KminBytes, eff.KmaxBytes, eff.PmaxPercent)
		t.line(" quit")
	}

	t.line("dcb pfc")
	for _, prio := range p.LosslessPriorities {
		t.line(" priority %d", prio)
		if len(h.DeadlockPrecisionMs) > 0 {
			t.line(" priority %d deadlock-detect time %d", prio, detect)
			t.line(" priority %d deadlock-recovery time %d", prio, recovery)
		}
	}
	t.line(" quit")

	var drr []uint8
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerETS {
			drr = append(drr, c.TC)
		}
	}
	for _, plan := range in.plans {
		for _, dev := range plan.Port.Interfaces {
			t.line("interface %s", dev)
			t.line(" # %s; %s", portSummary(plan), headroomSummary(plan))
			t.line(" trust %s", map[string]string{"dscp": "dscp", "pcp": "8021p outer"}[p.RoCE.Trust])
			t.line(" dcb pfc enable mode manual")
			if kb, ok := hdrmKB[plan.Port.Name]; ok {
				for _, tc := range p.losslessTCs() {
					t.line(" dcb pfc buffer %d hdrm %d kbytes", tc, kb)
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
				t.line(" qos queue %d wred %s", tc, huaweiDropProfile(plan))
				t.line(" qos queue %d ecn", tc)
			}
			t.line(" quit")
		}
	}
	t.comments("# Note: ", ns)
	t.line("commit")
	t.line("return")
	read, err := readHuawei(t.bytes(), in)
	if err != nil {
		return Rendering{}, err
	}
	return Rendering{Text: t.bytes(), Notes: ns, Effective: read}, nil
}

// huaweiDropProfile names the ECN drop profile of a port speed.
func huaweiDropProfile(plan PortPlan) string {
	return fmt.Sprintf("INOF-%dG", plan.Port.SpeedMbps/1000)
}
