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

// speedOfLight is the signal speed in cable, m/s, as SONiC uses it.
const speedOfLight = 198000000

// SONiCHeadroom computes headroom with the SONiC dynamic model, following the
// arithmetic of sonic-swss cfgmgr/buffer_headroom_mellanox.lua (which divides
// bits by 8×1024 where the design document divides by 8: the script's cable
// and gearbox terms are 2.4 % smaller than the physical ones, and we match
// the script so our numbers equal what a SONiC switch computes).
func SONiCHeadroom(speedMbps, cableM, portMTU uint32, b SwitchBuffer) (SwitchHeadroom, error) {
	quanta, ok := PauseQuanta(speedMbps)
	if !ok {
		return SwitchHeadroom{}, fmt.Errorf("lossless: no pause quanta for speed %d Mb/s", speedMbps)
	}
	cell := float64(b.CellBytes)
	var worstCase float64
	if cell > 2*64 {
		worstCase = cell / 64
	} else {
		worstCase = 2 * cell / (1 + cell)
	}
	spp := float64(b.SmallPacketPercent)
	occupancy := (100 - spp + spp*worstCase) / 100

	speed := float64(speedMbps)
	peerResponse := float64(quanta) * 512 / 8
	onCable := 2 * float64(cableM) * speed * 1e9 / speedOfLight / (8 * 1024)
	onGearbox := speed * float64(b.GearboxDelayNs) / (8 * 1024)
	propagation := float64(portMTU) + onCable + 2*onGearbox + b.MACPHYDelayKB*1024 + peerResponse

	xoff := ceil1024(float64(b.LosslessMTU) + propagation*occupancy)
	xon := ceil1024(b.PipelineLatencyKB * 1024)
	size := xon + xoff
	if b.SharedHeadroomPool {
		size = xon
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
