package lossless

import "fmt"

// checkPFCLosslessOnly: PFC runs on the lossless priorities only. A lossy
// priority sharing a lossless traffic class would be paused with it; CNP must
// never wait behind a pause; SONiC and Cumulus enable PFC per queue, so a
// lossless priority must use the traffic class of the same number.
func (p Profile) checkPFCLosslessOnly(add addFunc) {
	if len(p.LosslessPriorities) == 0 {
		add("lossless_priorities", "[]", RulePFCLosslessOnly, "no priority is lossless", "set lossless_priorities: [3]")
	}
	for i, prio := range p.LosslessPriorities {
		field := fmt.Sprintf("lossless_priorities[%d]", i)
		if prio == p.CNP.Priority {
			add(field, prio, RulePFCLosslessOnly, "the CNP priority must not be paused by PFC",
				"use a lossless priority other than cnp.priority")
		}
		tc, ok := p.tcOf(prio)
		if !ok {
			continue
		}
		if tc != prio {
			add(fmt.Sprintf("priority_to_tc[%d]", prio), tc, RulePFCLosslessOnly,
				"a lossless priority must use the traffic class (queue) of the same number: switches enable PFC per queue",
				fmt.Sprintf("map priority %d to traffic class %d", prio, prio))
		}
		for other, otc := range p.PriorityToTC {
			if otc == tc && !p.isLossless(uint8(other)) {
				add(fmt.Sprintf("priority_to_tc[%d]", other), otc, RulePFCLosslessOnly,
					fmt.Sprintf("lossy priority %d shares traffic class %d with lossless priority %d and would be paused too", other, tc, prio),
					fmt.Sprintf("map priority %d to another traffic class or make it lossless", other))
			}
		}
		if c, ok := p.trafficClass(tc); ok && c.Scheduler == SchedulerStrict {
			add(fmt.Sprintf("traffic_classes[tc=%d].scheduler", tc), c.Scheduler, RulePFCLosslessOnly,
				"a strict lossless class can starve every other class", "schedule it ets with a weight")
		}
	}
}

// checkCNPStrict: CNPs travel on their own priority, scheduled strict, so
// congestion feedback is never queued behind the traffic it throttles.
func (p Profile) checkCNPStrict(add addFunc) {
	tc, ok := p.tcOf(p.CNP.Priority)
	if !ok {
		return
	}
	c, ok := p.trafficClass(tc)
	if !ok {
		c.Scheduler = "(class not listed)"
	}
	if c.Scheduler != SchedulerStrict {
		add(fmt.Sprintf("traffic_classes[tc=%d].scheduler", tc), c.Scheduler, RuleCNPStrict,
			fmt.Sprintf("CNP priority %d uses traffic class %d, which must be strict", p.CNP.Priority, tc),
			fmt.Sprintf("add {tc: %d, scheduler: strict}", tc))
	}
	for other, otc := range p.PriorityToTC {
		if otc == tc && uint8(other) != p.CNP.Priority {
			add(fmt.Sprintf("priority_to_tc[%d]", other), otc, RuleCNPStrict,
				fmt.Sprintf("priority %d shares the CNP traffic class %d", other, tc),
				fmt.Sprintf("map priority %d to another traffic class", other))
		}
	}
}

// checkETS: the ETS/WRR shares of the ets classes sum to 100; strict classes
// have no weight; every traffic class a priority uses is listed, so the
// classes left out carry no traffic on any target.
func (p Profile) checkETS(add addFunc) {
	sum, n := 0, 0
	for i, c := range p.TrafficClasses {
		switch c.Scheduler {
		case SchedulerETS:
			sum += int(c.Weight)
			n++
			if c.Weight == 0 {
				add(fmt.Sprintf("traffic_classes[%d].weight", i), c.Weight, RuleETSSum,
					"an ets class needs a share above 0", "give it a weight or remove it")
			}
		case SchedulerStrict:
			if c.Weight != 0 {
				add(fmt.Sprintf("traffic_classes[%d].weight", i), c.Weight, RuleETSSum,
					"a strict class takes no share", "remove the weight")
			}
		}
	}
	if n > 0 && sum != 100 {
		add("traffic_classes[*].weight", sum, RuleETSSum, "ets shares must sum to 100",
			"adjust the weights (default: other 50, storage 50)")
	}
	for prio, tc := range p.PriorityToTC {
		if _, ok := p.trafficClass(tc); !ok && tc < NumPriorities {
			add(fmt.Sprintf("priority_to_tc[%d]", prio), tc, RuleETSSum,
				fmt.Sprintf("priority %d uses traffic class %d, which traffic_classes does not schedule (targets would keep their own default for it)", prio, tc),
				fmt.Sprintf("add {tc: %d, scheduler: ets, weight: N} or map the priority to a listed class", tc))
		}
	}
}

// checkDSCP: the DSCP plan is the same on hosts and switches: RoCE lands on a
// lossless priority, CNPs on the CNP priority, and a host map, when given,
// agrees with the switch map.
func (p Profile) checkDSCP(add addFunc) {
	prioOf := func(m map[uint8]uint8, d uint8) uint8 { return m[d] } // unlisted: priority 0
	if prio := prioOf(p.DSCPToPriority, p.RoCE.DSCP); !p.isLossless(prio) {
		add(fmt.Sprintf("dscp_to_priority[%d]", p.RoCE.DSCP), prio, RuleDSCPAgree,
			fmt.Sprintf("RoCE DSCP %d maps to lossy priority %d", p.RoCE.DSCP, prio),
			"map the RoCE DSCP to a lossless priority")
	}
	if prio := prioOf(p.DSCPToPriority, p.CNP.DSCP); prio != p.CNP.Priority {
		add(fmt.Sprintf("dscp_to_priority[%d]", p.CNP.DSCP), prio, RuleDSCPAgree,
			fmt.Sprintf("CNP DSCP %d maps to priority %d, not the CNP priority %d", p.CNP.DSCP, prio, p.CNP.Priority),
			fmt.Sprintf("map DSCP %d to priority %d", p.CNP.DSCP, p.CNP.Priority))
	}
	if p.HostDSCPToPriority == nil {
		return
	}
	union := map[uint8]uint8{}
	for d := range p.DSCPToPriority {
		union[d] = 0
	}
	for d := range p.HostDSCPToPriority {
		union[d] = 0
	}
	for _, d := range sortedKeys(union) {
		sw, host := prioOf(p.DSCPToPriority, d), prioOf(p.HostDSCPToPriority, d)
		if sw != host {
			add(fmt.Sprintf("host_dscp_to_priority[%d]", d), host, RuleDSCPAgree,
				fmt.Sprintf("hosts map DSCP %d to priority %d, switches to %d", d, host, sw),
				"make the maps equal or drop host_dscp_to_priority")
		}
	}
}
