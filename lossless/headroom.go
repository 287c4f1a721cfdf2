package lossless

import (
	"fmt"
	"math"
)

// PauseQuanta returns the PFC pause response time in quanta (512 bit times)
// for a port speed in Mb/s, IEEE 802.3 31B.3.7 as tabulated by SONiC, and
// whether the speed is one the table lists.
func PauseQuanta(speedMbps uint32) (uint32, bool) {
	switch speedMbps {
	case 100:
		return 1, true
	case 1000:
		return 2, true
	case 10000:
		return 67, true
	case 25000:
		return 80, true
	case 40000:
		return 118, true
	case 50000:
		return 147, true
	case 100000:
		return 394, true
	case 200000:
		return 453, true
	case 400000, 800000:
		return 905, true
	}
	return 0, false
}

// SwitchHeadroom is the SONiC dynamic model's result for one port class.
type SwitchHeadroom struct {
	Xoff uint32 // bytes that arrive after XOFF is sent
	Xon  uint32
	Size uint32 // reserved per priority group (xon alone with a shared headroom pool)
}

// Constants of sonic-swss cfgmgr/buffer_headroom_mellanox.lua.
const (
	// speedOfLight is the signal speed in cable, m/s.
	speedOfLight = 198000000
	// minimalPacket is the small packet the worst-case cell use assumes.
	minimalPacket = 64
	// smallPacketCompensation is what the script adds to xoff when a small
	// packet share below 100 % leaves it more than this short of the worst
	// case (sonic-swss PR 4757, shared headroom pool off).
	smallPacketCompensation = 2 * 1024
	// spectrum6Compensation is the extra xoff of Spectrum-6 (PR 4797).
	spectrum6Compensation = 18 * 1024
)

// SONiCHeadroom computes a port's headroom with the SONiC dynamic model,
// following the current sonic-swss cfgmgr/buffer_headroom_mellanox.lua (PR
// 3235, 2024: small packets counted by size, the worst-case factor rounded
// up, the cable term divided by 8×1000; PR 4757: 2 KiB more xoff when a small
// packet share below 100 % leaves xoff short of the worst case and no shared
// headroom pool is used; PR 4797: 18 KiB more on Spectrum-6; bytes on tile on
// Spectrum-4/5; doubled pipeline latency and one more port MTU on 8-lane
// ports). The arithmetic is the script's, so the numbers are what a Mellanox
// SONiC switch computes for itself with the same ASIC constants.
func SONiCHeadroom(port Port, b SwitchBuffer) (SwitchHeadroom, error) {
	quanta, ok := PauseQuanta(port.SpeedMbps)
	if !ok {
		return SwitchHeadroom{}, fmt.Errorf("lossless: no pause quanta for speed %d Mb/s", port.SpeedMbps)
	}
	cell := float64(b.CellBytes)
	pipeline := b.PipelineLatencyKB * 1024
	var speedOverhead float64
	if port.Lanes == 8 {
		pipeline *= 2
		speedOverhead = float64(port.MTU)
	}
	worstCase := 2 * cell / (1 + cell)
	if cell > 2*minimalPacket {
		worstCase = cell / minimalPacket
	}
	worstCase = math.Ceil(worstCase)
	spp, losslessMTU := float64(b.SmallPacketPercent), float64(b.LosslessMTU)
	sppByBytes := 100 * minimalPacket / ((spp*minimalPacket + (100-spp)*losslessMTU) / 100)
	occupancy := (100 - sppByBytes + sppByBytes*worstCase) / 100

	speed := float64(port.SpeedMbps)
	peerResponse := float64(quanta) * 512 / 8
	onCable := 2 * float64(port.CableMeters) * speed * 1e9 / speedOfLight / (8 * 1000)
	onGearbox := speed * float64(b.GearboxDelayNs) / (8 * 1024)
	var onTile float64
	if b.Generation == 4 || b.Generation == 5 {
		onTile = speed / 1000 * 120 / 8
	}
	propagation := float64(port.MTU) + onCable + 2*onGearbox + b.MACPHYDelayKB*1024 + peerResponse + onTile

	xoff := ceil1024(losslessMTU + propagation*occupancy)
	if b.Generation == 6 {
		xoff += spectrum6Compensation
	}
	if !b.SharedHeadroomPool && b.SmallPacketPercent != 100 {
		if full := ceil1024(losslessMTU + propagation*worstCase); xoff+smallPacketCompensation < full {
			xoff += smallPacketCompensation
		}
	}
	xon := ceil1024(pipeline)
	size := xon
	if !b.SharedHeadroomPool {
		size = ceil1024(float64(xoff) + float64(xon) + speedOverhead)
	}
	return SwitchHeadroom{Xoff: xoff, Xon: xon, Size: size}, nil
}

func ceil1024(v float64) uint32 { return uint32(math.Ceil(v/1024)) * 1024 }

// NICHeadroom is the mlx5 driver's requirement for one lossless buffer.
type NICHeadroom struct {
	Xoff      uint32 // bytes in flight after PAUSE (the driver's "xoff")
	MinBuffer uint32 // smallest lossless buffer the driver accepts
}

// MLX5Headroom computes the NIC side as Linux mlx5 en/port_buffer.c does, in
// its integer arithmetic: xoff = (301 + 216·L/100) × speed/1000 + 272·MTU/100
// with speed in Mb/s floored at 40G; a lossless buffer must be at least
// xoff + MTU + one cell.
func MLX5Headroom(speedMbps, cableM, mtu, cellBytes uint32) NICHeadroom {
	speed := uint64(max(speedMbps, 40000))
	xoff := (301+216*uint64(cableM)/100)*speed/1000 + 272*uint64(mtu)/100
	return NICHeadroom{Xoff: uint32(xoff), MinBuffer: uint32(xoff) + mtu + cellBytes}
}
