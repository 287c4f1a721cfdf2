package lossless

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Render targets.
const (
	TargetLinux   = "linux"
	TargetSONiC   = "sonic"
	TargetNVUE    = "nvue"
	TargetComware = "comware"
	TargetHuawei  = "huawei"
	TargetTable   = "table"
)

// renderer renders a valid profile for one device target from the plans of
// its port classes (each lists its interfaces).
type renderer func(p Profile, plans []PortPlan) ([]byte, error)

// renderers are the device targets, by name: adding a target is one entry
// here and its file.
var renderers = map[string]renderer{
	TargetLinux:   infallible(renderLinux),
	TargetSONiC:   renderSONiC,
	TargetNVUE:    infallible(renderNVUE),
	TargetComware: infallible(renderComware),
	TargetHuawei:  infallible(renderHuawei),
}

// infallible adapts a renderer that cannot fail.
func infallible(f func(Profile, []PortPlan) []byte) renderer {
	return func(p Profile, plans []PortPlan) ([]byte, error) { return f(p, plans), nil }
}

// Targets returns every target Render accepts: the device targets sorted,
// then "table".
func Targets() []string { return append(slices.Sorted(maps.Keys(renderers)), TargetTable) }

// Render validates the profile and renders it for a target platform. Device
// targets need every port class to list its interfaces; "table" does not.
func Render(p Profile, target string) ([]byte, error) {
	render, device := renderers[target]
	if !device && target != TargetTable {
		return nil, fmt.Errorf("lossless: unknown render target %q (one of %s)", target, strings.Join(Targets(), ", "))
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("lossless: render %s: %w", target, err)
	}
	if !device {
		return RenderTable(p, p.Ports[0].MTU, TableSpeedsMbps(), TableCablesM())
	}
	plans, err := Compute(p)
	if err != nil {
		return nil, fmt.Errorf("lossless: render %s: %w", target, err)
	}
	for i, plan := range plans {
		if len(plan.Port.Interfaces) == 0 {
			return nil, fmt.Errorf("lossless: render %s: port class %q lists no interfaces; set ports[%d].interfaces for this device",
				target, plan.Port.Name, i)
		}
	}
	return render(p, plans)
}

// text accumulates rendered lines.
type text struct{ b strings.Builder }

func (t *text) line(format string, args ...any) {
	fmt.Fprintf(&t.b, format, args...)
	t.b.WriteByte('\n')
}

func (t *text) bytes() []byte { return []byte(t.b.String()) }

// prioMap is "0:v0 1:v1 ... 7:v7" as separate arguments, for the eight
// priorities or traffic classes, with f giving each value.
func prioMap(f func(uint8) string) []string {
	out := make([]string, NumPriorities)
	for i := range uint8(NumPriorities) {
		out[i] = fmt.Sprintf("%d:%s", i, f(i))
	}
	return out
}

// scheduled returns the traffic class entries in TC order.
func (p Profile) scheduled() []TrafficClass {
	var out []TrafficClass
	for tc := range uint8(NumPriorities) {
		if c, ok := p.trafficClass(tc); ok {
			out = append(out, c)
		}
	}
	return out
}

// losslessTCs returns the traffic classes of the lossless priorities, in order.
func (p Profile) losslessTCs() []uint8 {
	var out []uint8
	for tc := range uint8(NumPriorities) {
		for _, prio := range p.LosslessPriorities {
			if t, ok := p.tcOf(prio); ok && t == tc {
				out = append(out, tc)
				break
			}
		}
	}
	return out
}

// dscpPriority returns the priority DSCP d maps to on switches.
func (p Profile) dscpPriority(d uint8) uint8 { return p.DSCPToPriority[d] }

// hostDSCPMap is the DSCP map hosts use.
func (p Profile) hostDSCPMap() map[uint8]uint8 {
	if p.HostDSCPToPriority != nil {
		return p.HostDSCPToPriority
	}
	return p.DSCPToPriority
}

// portSummary describes a port class in one line for comments.
func portSummary(plan PortPlan) string {
	return fmt.Sprintf("port class %s: %d Mb/s, %d m, MTU %d", plan.Port.Name, plan.Port.SpeedMbps, plan.Port.CableMeters, plan.Port.MTU)
}

// headroomSummary describes the computed headroom in one line for comments.
func headroomSummary(plan PortPlan) string {
	return fmt.Sprintf("headroom %d B (xoff %d B: switch model %d B, NIC model %d B; xon %d B)",
		plan.HeadroomBytes, plan.XoffBytes, plan.Switch.Xoff, plan.NIC.Xoff, plan.Switch.Xon)
}
