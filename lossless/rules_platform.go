package lossless

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// checkPlatforms: every platform the profile names exists for its target,
// and the profile fits it (checkPlatform).
func (p Profile) checkPlatforms(add addFunc) {
	for _, target := range slices.Sorted(maps.Keys(p.Platforms)) {
		field := "platforms." + target
		name := p.Platforms[target]
		if len(platforms[target]) == 0 {
			add(field, name, RulePlatform, fmt.Sprintf("%q is not a target with platforms", target),
				"use one of "+strings.Join(PlatformTargets(), ", "))
			continue
		}
		pl, err := LookupPlatform(target, name)
		if err != nil {
			add(field, name, RulePlatform, "no such platform", "use one of "+strings.Join(platformNames(target), ", "))
			continue
		}
		p.checkPlatform(pl, field, add)
	}
}

// checkPlatform: the headroom of every port class fits what the platform's
// commands accept and, for all ports (the listed interfaces, else one port
// per class), the platform's buffer; the lossless priorities fit its PFC
// queues.
func (p Profile) checkPlatform(pl Platform, field string, add addFunc) {
	q := p.ForPlatform(pl)
	if h := pl.Huawei; h != nil {
		if len(p.LosslessPriorities) > h.MaxPFCQueues {
			add(field, pl.Name, RulePlatform,
				fmt.Sprintf("%s enables PFC on at most %d queues, the profile has %d lossless priorities", pl.Name, h.MaxPFCQueues, len(p.LosslessPriorities)),
				"drop lossless priorities or use another platform")
		}
		for _, tc := range p.losslessTCs() {
			if tc > h.MaxQueue {
				add(field, pl.Name, RulePlatform, fmt.Sprintf("%s takes PFC queues 0–%d, not %d", pl.Name, h.MaxQueue, tc),
					fmt.Sprintf("use a lossless priority of at most %d", h.MaxQueue))
			}
		}
	}
	var total uint64
	for i, port := range q.Ports {
		plan, err := PlanPort(q, port)
		if err != nil {
			continue // checkHeadroom reports it
		}
		if h := pl.Huawei; h != nil && h.HdrmKB[1] != 0 {
			if kb := divCeil(plan.HeadroomBytes, 1024); kb < h.HdrmKB[0] || kb > h.HdrmKB[1] {
				add(fmt.Sprintf("ports[%d]", i), port.Name, RulePlatform,
					fmt.Sprintf("needs %d KB of headroom per lossless queue; %s's `dcb pfc buffer … hdrm` takes %d–%d kbytes",
						kb, pl.Name, h.HdrmKB[0], h.HdrmKB[1]),
					"shorten the cable or lower the speed of this class, or use another platform")
			}
		}
		perPort := uint64(plan.HeadroomBytes) * uint64(len(p.LosslessPriorities))
		total += perPort * uint64(max(1, len(port.Interfaces)))
	}
	if pl.TotalBufferBytes != 0 && total > pl.TotalBufferBytes {
		add(field, pl.Name, RulePlatform,
			fmt.Sprintf("the ports need %d B of lossless headroom, more than %s's %d B buffer", total, pl.Name, pl.TotalBufferBytes),
			"fewer lossless priorities, shorter cables or fewer interfaces per class")
	}
}

// divCeil is a/b rounded up.
func divCeil(a, b uint32) uint32 { return (a + b - 1) / b }
