package lossless

import "fmt"

// PortPlan is what a profile means for one port class.
type PortPlan struct {
	Port   Port
	Switch SwitchHeadroom // SONiC dynamic model
	NIC    NICHeadroom    // mlx5 formula
	// XoffBytes is the larger of the two models' in-flight bytes.
	XoffBytes uint32
	// HeadroomBytes is the per-priority-group reservation rendered: the
	// port's override when set, else the larger of xon + XoffBytes (xon alone
	// with a shared headroom pool) and the NIC's minimum lossless buffer.
	HeadroomBytes uint32
	ECN           ECNThresholds
}

// Compute plans every port class of the profile.
func Compute(p Profile) ([]PortPlan, error) {
	plans := make([]PortPlan, 0, len(p.Ports))
	for _, port := range p.Ports {
		plan, err := PlanPort(p, port)
		if err != nil {
			return nil, err
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// PlanPort computes headroom and ECN thresholds for one port class.
func PlanPort(p Profile, port Port) (PortPlan, error) {
	sw, err := SONiCHeadroom(port, p.SwitchBuffer)
	if err != nil {
		return PortPlan{}, fmt.Errorf("lossless: port class %q: %w", port.Name, err)
	}
	nic := MLX5Headroom(port.SpeedMbps, port.CableMeters, port.MTU, p.NICBuffer.CellBytes)
	xoff := max(sw.Xoff, nic.Xoff)
	// The switch size is xon + its xoff (+ the 8-lane MTU): swap in the
	// larger xoff.
	size := sw.Size - sw.Xoff + xoff
	if p.SwitchBuffer.SharedHeadroomPool {
		size = sw.Xon
	}
	plan := PortPlan{
		Port:          port,
		Switch:        sw,
		NIC:           nic,
		XoffBytes:     xoff,
		HeadroomBytes: max(size, nic.MinBuffer),
		ECN:           ScaleECN(p.ECN, port.SpeedMbps),
	}
	if port.HeadroomBytes != 0 {
		plan.HeadroomBytes = port.HeadroomBytes
	}
	return plan, nil
}

// TableSpeedsMbps returns the port speeds `inofctl lossless table` prints
// by default (10–400G).
func TableSpeedsMbps() []uint32 {
	return []uint32{10000, 25000, 40000, 50000, 100000, 200000, 400000}
}

// TableCablesM returns the cable lengths the table prints by default (1–300 m).
func TableCablesM() []uint32 { return []uint32{1, 3, 5, 10, 40, 100, 300} }

// Table plans every speed × cable combination with the profile's buffers
// and ECN settings and the given MTU.
func Table(p Profile, mtu uint32, speedsMbps, cablesM []uint32) ([]PortPlan, error) {
	plans := make([]PortPlan, 0, len(speedsMbps)*len(cablesM))
	for _, s := range speedsMbps {
		for _, c := range cablesM {
			port := Port{Name: fmt.Sprintf("%dG-%dm", s/1000, c), SpeedMbps: s, CableMeters: c, MTU: mtu}
			plan, err := PlanPort(p, port)
			if err != nil {
				return nil, err
			}
			plans = append(plans, plan)
		}
	}
	return plans, nil
}
