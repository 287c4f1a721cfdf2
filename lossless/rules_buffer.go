package lossless

import "fmt"

// roceHeaderBytes is what Linux (iboe_get_mtu) subtracts from the Ethernet
// MTU to find the largest RoCE MTU: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH
// 28, ICRC 4.
const roceHeaderBytes = 96

// maxPortMTU is the largest port MTU all rendered platforms accept.
const maxPortMTU = 9216

// mlx5MaxCableM: mlx5 takes the cable length from the PFC delay only below
// this many metres.
const mlx5MaxCableM = 1000

// checkECN: Kmin below Kmax, a marking probability, a reference speed.
func (p Profile) checkECN(add addFunc) {
	e := p.ECN
	if e.ReferenceMbps == 0 {
		add("ecn.reference_mbps", 0, RuleECNThresholds, "thresholds need the speed they are given for", "set reference_mbps: 25000")
	}
	if e.KminBytes == 0 || e.KminBytes >= e.KmaxBytes {
		add("ecn.kmin_bytes", e.KminBytes, RuleECNThresholds,
			fmt.Sprintf("Kmin must be above 0 and below Kmax (%d)", e.KmaxBytes), "lower kmin_bytes or raise kmax_bytes")
	}
	if e.PmaxPercent == 0 || e.PmaxPercent > 100 {
		add("ecn.pmax_percent", e.PmaxPercent, RuleECNThresholds, "the marking probability at Kmax is 1–100 %", "set pmax_percent (default 20)")
	}
}

// checkHeadroom: every port class has a speed the pause table knows and a
// cable length, the ASIC constants are usable, ECN marks before PFC pauses,
// and a headroom override still covers the bytes in flight.
func (p Profile) checkHeadroom(add addFunc) {
	b := p.SwitchBuffer
	if b.CellBytes == 0 {
		add("switch_buffer.cell_bytes", 0, RuleHeadroom, "the ASIC cell size is needed for cell occupancy", "set cell_bytes (Spectrum-2: 144)")
	}
	if b.SmallPacketPercent > 100 {
		add("switch_buffer.small_packet_percent", b.SmallPacketPercent, RuleHeadroom, "a percentage is 0–100", "use 50")
	}
	if p.NICBuffer.CellBytes == 0 {
		add("nic_buffer.cell_bytes", 0, RuleHeadroom, "the NIC buffer cell size is needed", "set cell_bytes: 128")
	}
	if p.PFC.XoffThresholdBytes == 0 {
		add("pfc.xoff_threshold_bytes", 0, RuleECNBeforePFC, "no PFC XOFF threshold to compare ECN against", "set xoff_threshold_bytes")
	}
	for i, port := range p.Ports {
		field := fmt.Sprintf("ports[%d]", i)
		if _, ok := PauseQuanta(port.SpeedMbps); !ok {
			add(field+".speed_mbps", port.SpeedMbps, RuleHeadroom,
				"no IEEE 802.3 pause response time for this speed", "use 10000, 25000, 40000, 50000, 100000, 200000, 400000 or 800000")
			continue
		}
		if port.CableMeters == 0 || port.CableMeters >= mlx5MaxCableM {
			add(field+".cable_m", port.CableMeters, RuleHeadroom,
				fmt.Sprintf("headroom needs the cable length, 1–%d m", mlx5MaxCableM-1), "set cable_m (server 5, leaf 40, spine 300)")
		}
		plan, err := PlanPort(p, port)
		if err != nil {
			continue // reported above
		}
		if p.PFC.XoffThresholdBytes != 0 && plan.ECN.KmaxBytes >= p.PFC.XoffThresholdBytes {
			add(field+".speed_mbps", port.SpeedMbps, RuleECNBeforePFC,
				fmt.Sprintf("ECN Kmax at this speed (%d B) is not below the PFC XOFF threshold (%d B): PFC would pause before ECN slows senders",
					plan.ECN.KmaxBytes, p.PFC.XoffThresholdBytes),
				"lower ecn.kmax_bytes or raise pfc.xoff_threshold_bytes")
		}
		if port.HeadroomBytes != 0 && uint64(port.HeadroomBytes) > largestBuffer() {
			add(field+".headroom_bytes", port.HeadroomBytes, RuleHeadroom,
				fmt.Sprintf("is more than the packet buffer of any switch this renders for (the largest, %d B)", largestBuffer()),
				"use the computed headroom (remove headroom_bytes) or a per-queue size in bytes")
		}
		if port.HeadroomBytes != 0 {
			port.HeadroomBytes = 0
			need, _ := PlanPort(p, port)
			if plan.HeadroomBytes < need.HeadroomBytes {
				add(field+".headroom_bytes", plan.HeadroomBytes, RuleHeadroom,
					fmt.Sprintf("does not cover the %d B in flight for %d Mb/s over %d m (switch %d B, NIC %d B)",
						need.HeadroomBytes, port.SpeedMbps, port.CableMeters, need.Switch.Size, need.NIC.MinBuffer),
					fmt.Sprintf("raise headroom_bytes to at least %d or remove it", need.HeadroomBytes))
			}
		}
	}
}

// checkMTU: the RoCE MTU is a valid IB MTU, it fits every port's MTU with
// RoCEv2 headers, ports stay within jumbo limits, and the switch headroom
// model counts a full lossless packet.
func (p Profile) checkMTU(add addFunc) {
	switch p.RoCE.MTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		add("roce.mtu", p.RoCE.MTU, RuleMTUFits, "RoCE MTU is 256, 512, 1024, 2048 or 4096", "use 4096 with jumbo frames, 1024 without")
	}
	for i, port := range p.Ports {
		field := fmt.Sprintf("ports[%d].mtu", i)
		if port.MTU < p.RoCE.MTU+roceHeaderBytes {
			add(field, port.MTU, RuleMTUFits,
				fmt.Sprintf("RoCE MTU %d needs a port MTU of at least %d (RoCEv2 headers take %d B)", p.RoCE.MTU, p.RoCE.MTU+roceHeaderBytes, roceHeaderBytes),
				fmt.Sprintf("raise the port MTU to %d or more, or lower roce.mtu", p.RoCE.MTU+roceHeaderBytes))
		}
		if port.MTU > maxPortMTU {
			add(field, port.MTU, RuleMTUFits, fmt.Sprintf("above the %d B jumbo limit", maxPortMTU), "use 9100")
		}
	}
	if p.SwitchBuffer.LosslessMTU < p.RoCE.MTU {
		add("switch_buffer.lossless_mtu", p.SwitchBuffer.LosslessMTU, RuleMTUFits,
			fmt.Sprintf("headroom must count a full lossless packet (RoCE MTU %d)", p.RoCE.MTU),
			fmt.Sprintf("set lossless_mtu to %d", p.RoCE.MTU))
	}
}

// largestBuffer is the largest packet buffer of any known platform: a
// per-queue headroom above it fits no switch, whatever the platform.
func largestBuffer() uint64 {
	var largest uint64
	for _, pls := range platforms {
		for _, pl := range pls {
			largest = max(largest, pl.TotalBufferBytes)
		}
	}
	return largest
}
