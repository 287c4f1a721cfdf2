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

// Rendering is a device configuration and what it makes the device do.
type Rendering struct {
	Target   string
	Platform Platform
	// Text is the configuration in the target's own syntax.
	Text []byte
	// Notes are every way the configuration differs from the profile and
	// why; text targets carry them as comments too, JSON (sonic) cannot.
	Notes []string
	// Effective is what the configuration makes the device do.
	Effective Effective
}

// NotesInText reports whether Text carries the notes as comments.
func (r Rendering) NotesInText() bool { return r.Target != TargetSONiC }

// RenderOptions change how RenderDevice renders.
type RenderOptions struct {
	// Platform names the target's platform, over the profile's platforms.
	Platform string
}

// renderInput is a valid profile on one platform, planned.
type renderInput struct {
	p     Profile // on the platform (ForPlatform)
	pl    Platform
	plans []PortPlan
}

// renderer renders one device target; every port class lists interfaces.
type renderer func(in renderInput) (Rendering, error)

// renderers are the device targets, by name: adding a target is one entry
// here, its platforms and its file.
var renderers = map[string]renderer{
	TargetLinux:   renderLinux,
	TargetSONiC:   renderSONiC,
	TargetNVUE:    renderNVUE,
	TargetComware: renderComware,
	TargetHuawei:  renderHuawei,
}

// Targets returns every target Render accepts: the device targets sorted,
// then "table".
func Targets() []string { return append(DeviceTargets(), TargetTable) }

// DeviceTargets returns the device targets, sorted.
func DeviceTargets() []string { return slices.Sorted(maps.Keys(renderers)) }

// Render validates the profile and renders it for a target platform with
// the profile's platform for it (or the target's default). Device targets
// need every port class to list its interfaces; "table" does not.
func Render(p Profile, target string) ([]byte, error) {
	if target == TargetTable {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("lossless: render %s: %w", target, err)
		}
		return RenderTable(p, p.Ports[0].MTU, TableSpeedsMbps(), TableCablesM())
	}
	r, err := RenderDevice(p, target, RenderOptions{})
	if err != nil {
		return nil, err
	}
	return r.Text, nil
}

// RenderDevice validates the profile, checks it fits the platform and
// renders it for a device target.
func RenderDevice(p Profile, target string, o RenderOptions) (Rendering, error) {
	render, ok := renderers[target]
	if !ok {
		return Rendering{}, fmt.Errorf("lossless: unknown render target %q (one of %s)", target, strings.Join(Targets(), ", "))
	}
	if err := p.Validate(); err != nil {
		return Rendering{}, fmt.Errorf("lossless: render %s: %w", target, err)
	}
	pl, err := p.platformFor(target, o.Platform)
	if err != nil {
		return Rendering{}, fmt.Errorf("lossless: render %s: %w", target, err)
	}
	var ps Problems
	p.checkPlatform(pl, "platform", func(field string, value any, rule, detail, fix string) {
		ps = append(ps, Problem{Field: field, Value: fmt.Sprint(value), Rule: rule, Detail: detail, Fix: fix})
	})
	if len(ps) > 0 {
		return Rendering{}, fmt.Errorf("lossless: render %s on %s: %w", target, pl.Name, ps)
	}
	q := p.ForPlatform(pl)
	plans, err := Compute(q)
	if err != nil {
		return Rendering{}, fmt.Errorf("lossless: render %s: %w", target, err)
	}
	for i, plan := range plans {
		if len(plan.Port.Interfaces) == 0 {
			return Rendering{}, fmt.Errorf("lossless: render %s: port class %q lists no interfaces; set ports[%d].interfaces for this device",
				target, plan.Port.Name, i)
		}
	}
	r, err := render(renderInput{p: q, pl: pl, plans: plans})
	if err != nil {
		return Rendering{}, fmt.Errorf("lossless: render %s on %s: %w", target, pl.Name, err)
	}
	r.Target, r.Platform = target, pl
	return r, nil
}

// text accumulates rendered lines.
type text struct{ b strings.Builder }

func (t *text) line(format string, args ...any) {
	fmt.Fprintf(&t.b, format, args...)
	t.b.WriteByte('\n')
}

func (t *text) bytes() []byte { return []byte(t.b.String()) }

// notes collects the ways a rendering differs from the profile.
type notes []string

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

// comments writes the notes as comment lines with prefix (e.g. "# ").
func (t *text) comments(prefix string, ns notes) {
	for _, n := range ns {
		t.line("%s%s", prefix, n)
	}
}

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
