package lossless

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Platform is one hardware family of a render target: the buffer facts the
// headroom checks use and what the family's commands accept. The table is
// in platforms below; docs/lossless.md prints it with its sources.
type Platform struct {
	Name   string
	Target string
	// Models are the devices the family covers.
	Models string
	// CellBytes is the buffer cell; 0 means not known, and the profile's
	// switch_buffer.cell_bytes is used.
	CellBytes uint32
	// TotalBufferBytes is the chip's packet buffer; 0 means not known (no
	// total check).
	TotalBufferBytes uint64
	// Spectrum holds the SONiC ASIC_TABLE constants of an NVIDIA Spectrum.
	Spectrum *SpectrumASIC
	// BroadcomProfile is set for SONiC on Broadcom: BUFFER_PROFILE size is
	// the guaranteed buffer and xoff the headroom, not size = xon + xoff.
	BroadcomProfile bool
	NVUE            *NVUECaps
	Comware         *ComwareCaps
	Huawei          *HuaweiCaps
	// Unconfirmed lists the facts of this entry that no reference we read
	// states; the output and docs/lossless.md say so where they are used.
	Unconfirmed []string
}

// SpectrumASIC is SONiC's STATE_DB ASIC_TABLE for a Spectrum generation.
type SpectrumASIC struct {
	Generation        uint8
	PipelineLatencyKB float64
	MACPHYDelayKB     float64
}

// NVUECaps is what Cumulus Linux NVUE accepts.
type NVUECaps struct {
	// LosslessPoolPercent is the share of buffer given to the
	// default-lossless traffic pool (the rest to default-lossy).
	LosslessPoolPercent uint8
}

// NVUE command ranges (NVUE reference, Cumulus Linux 5.6+).
const (
	nvueMinPollMs       = 100
	nvueMaxPollMs       = 5000
	nvueMaxRobustness   = 1000
	nvueMaxBWPercentSum = 100
)

// ComwareCaps is what H3C Comware 7 accepts.
type ComwareCaps struct {
	// WFQMaxWeight is the largest WFQ byte-count the renderer emits: weights
	// are reduced to the smallest integers with the profile's ratio.
	WFQMaxWeight uint32
	// WREDMaxLimit is the largest low-limit/high-limit of a WRED table entry.
	WREDMaxLimit uint32
	// DeadlockUnitMs is the deadlock timer unit per precision keyword.
	DeadlockUnitMs map[string]uint32
	// DeadlockMaxUnits is the largest interval or delay emitted.
	DeadlockMaxUnits uint32
}

// HuaweiCaps is what a CloudEngine family accepts (CloudEngine 6800/8800
// command reference: dcb pfc buffer, qos buffer headroom-pool, dcb pfc
// deadlock-detect, color).
type HuaweiCaps struct {
	// HdrmKB is the range of `dcb pfc buffer Q hdrm N kbytes`; zero when the
	// family has no hdrm form.
	HdrmKB [2]uint32
	// XonXoffDynamic: the family sets PFC thresholds only as `xon dynamic A
	// xoff dynamic B` (or static kbytes pairs) and sizes headroom itself.
	XonXoffDynamic bool
	// HeadroomPool: `qos buffer headroom-pool size N kbytes slot S` is
	// mandatory before PFC.
	HeadroomPool bool
	// DSCPMapping: DSCP-based PFC needs `dcb pfc dscp-mapping enable slot S`.
	DSCPMapping bool
	// MaxQueue is the largest PFC queue index; MaxPFCQueues how many
	// priorities may be lossless.
	MaxQueue     uint8
	MaxPFCQueues int
	// WREDBytes is the range of `color … buffer-size low-limit/high-limit`.
	WREDBytes [2]uint64
	// Deadlock timers: either per priority in units of a precision
	// (`priority P deadlock-detect time T`, `dcb pfc deadlock-detect
	// interval I`) or global timers in ms (`dcb pfc deadlock-detect timer`).
	DeadlockPrecisionMs []uint32
	DeadlockDetectMax   uint32
	DeadlockRecoverMax  uint32
	DeadlockTimerMs     [2]uint32
}

// huaweiBlockBytes is the fixed small block CE6855-family buffer thresholds
// round up to (dcb pfc buffer usage guidelines).
const huaweiBlockBytes = 320

// spectrum builds the SONiC or NVUE entry of a Spectrum generation.
func spectrum(target string, gen uint8, cell uint32, pipelineKB float64, totalMB uint64, unconfirmed ...string) Platform {
	pl := Platform{
		Name: fmt.Sprintf("spectrum-%d", gen), Target: target,
		Models:           map[uint8]string{1: "SN2000 series", 2: "SN3000 series", 3: "SN4000 series", 4: "SN5000 series"}[gen],
		CellBytes:        cell,
		TotalBufferBytes: totalMB << 20,
		Spectrum:         &SpectrumASIC{Generation: gen, PipelineLatencyKB: pipelineKB, MACPHYDelayKB: 0.8},
		Unconfirmed:      unconfirmed,
	}
	if target == TargetNVUE {
		pl.NVUE = &NVUECaps{LosslessPoolPercent: 50}
		pl.Unconfirmed = append(pl.Unconfirmed, "lossless traffic pool 50 % (the NVUE guide's example, ours)")
	}
	return pl
}

// platforms is the table, by target, default first.
var platforms = map[string][]Platform{
	TargetLinux: {{
		Name: "mlx5", Target: TargetLinux, Models: "NVIDIA ConnectX-4 and later (mlx5_core)",
		CellBytes: 128,
	}},
	TargetSONiC: {
		spectrum(TargetSONiC, 2, 144, 18, 42, "42 MB buffer (vendor product brief, not read here)"),
		spectrum(TargetSONiC, 1, 96, 18, 16),
		spectrum(TargetSONiC, 3, 144, 19, 64, "64 MB buffer (vendor product brief, not read here)",
			"pipeline latency 19 KB (inferred from sonic-swss PR 3235's SPC3 xon 19456)"),
		spectrum(TargetSONiC, 4, 192, 19, 160, "160 MB buffer (vendor product brief, not read here)",
			"cell 192 B (PR 3235's SPC4 numbers hold for any cell of 129–192 B)", "pipeline latency 19 KB"),
		{
			Name: "broadcom", Target: TargetSONiC, Models: "Broadcom Trident/Tomahawk SONiC SKUs",
			BroadcomProfile: true,
			Unconfirmed: []string{"cell size (switch_buffer.cell_bytes is used)",
				"guaranteed size and xon_offset of one lossless MTU (ours; SKUs' pg_profile_lookup.ini differ)"},
		},
	},
	TargetNVUE: {
		spectrum(TargetNVUE, 2, 144, 18, 42, "42 MB buffer (vendor product brief, not read here)"),
		spectrum(TargetNVUE, 1, 96, 18, 16),
		spectrum(TargetNVUE, 3, 144, 19, 64, "64 MB buffer (vendor product brief, not read here)"),
		spectrum(TargetNVUE, 4, 192, 19, 160, "160 MB buffer (vendor product brief, not read here)", "cell 192 B"),
	},
	TargetComware: {{
		Name: "comware7", Target: TargetComware, Models: "H3C S6850/S9850/S9825/S9855 (Comware 7)",
		Comware: &ComwareCaps{
			WFQMaxWeight: 15, WREDMaxLimit: 16000,
			DeadlockUnitMs:   map[string]uint32{"high": 10, "normal": 100, "low": 1000},
			DeadlockMaxUnits: 15,
		},
		Unconfirmed: []string{
			"cell size (switch_buffer.cell_bytes is used; Broadcom cells are larger, so headroom in cells errs high)",
			"WRED low-limit/high-limit and PFC headroom counted in cells",
			"deadlock interval/delay units 10/100/1000 ms at precision high/normal/low, at most 15",
			"WFQ byte-count 1–15",
		},
	}},
	TargetHuawei: {
		{
			Name: "ce6855", Target: TargetHuawei,
			Models:    "CE6855-48XS8CQ, CE6863E-48S8CQ, CE6885 (-T, -SAN, -LL standard mode), CE8851-32CQ4BQ, CE8855",
			CellBytes: huaweiBlockBytes,
			Huawei: &HuaweiCaps{
				HdrmKB: [2]uint32{16, 30720}, HeadroomPool: true, DSCPMapping: true,
				MaxQueue: 7, MaxPFCQueues: 4, WREDBytes: [2]uint64{320, 34078720},
				DeadlockPrecisionMs: []uint32{10, 100, 500, 1000}, DeadlockDetectMax: 15, DeadlockRecoverMax: 31,
			},
		},
		{
			Name: "ce6866", Target: TargetHuawei,
			Models:    "CE6866, CE6866K, CE6860-SAN, CE6860-HAM, CE8850-SAN, CE8850-HAM, CE8851K, CE8851-32CQ8DQ-P",
			CellBytes: 128,
			Huawei: &HuaweiCaps{
				XonXoffDynamic: true, MaxQueue: 5, MaxPFCQueues: 3, WREDBytes: [2]uint64{128, 16000000},
				DeadlockTimerMs: [2]uint32{10, 1500},
			},
			Unconfirmed: []string{"cell 128 B (16,000,000 B / 125,000 cells, the two WRED ranges)"},
		},
	},
}

// Platforms returns the platforms of a target, its default first.
func Platforms(target string) []Platform { return slices.Clone(platforms[target]) }

// PlatformTargets returns the targets that have platforms, sorted.
func PlatformTargets() []string { return slices.Sorted(maps.Keys(platforms)) }

// LookupPlatform returns the named platform of a target ("" is the
// target's default).
func LookupPlatform(target, name string) (Platform, error) {
	list := platforms[target]
	if len(list) == 0 {
		return Platform{}, fmt.Errorf("lossless: target %q has no platforms", target)
	}
	if name == "" {
		return list[0], nil
	}
	for _, pl := range list {
		if pl.Name == name {
			return pl, nil
		}
	}
	return Platform{}, fmt.Errorf("lossless: %s has no platform %q (one of %s)", target, name, strings.Join(platformNames(target), ", "))
}

func platformNames(target string) []string {
	var out []string
	for _, pl := range platforms[target] {
		out = append(out, pl.Name)
	}
	return out
}

// platformFor returns the platform a render of target uses: override, else
// the profile's, else the target's default.
func (p Profile) platformFor(target, override string) (Platform, error) {
	name := override
	if name == "" {
		name = p.Platforms[target]
	}
	return LookupPlatform(target, name)
}

// ForPlatform returns the profile with the platform's buffer constants in
// switch_buffer (cell, and a Spectrum's ASIC_TABLE) or, for a host
// platform, nic_buffer.
func (p Profile) ForPlatform(pl Platform) Profile {
	if pl.Target == TargetLinux {
		if pl.CellBytes != 0 {
			p.NICBuffer.CellBytes = pl.CellBytes
		}
		return p
	}
	if pl.CellBytes != 0 {
		p.SwitchBuffer.CellBytes = pl.CellBytes
	}
	if s := pl.Spectrum; s != nil {
		p.SwitchBuffer.PipelineLatencyKB = s.PipelineLatencyKB
		p.SwitchBuffer.MACPHYDelayKB = s.MACPHYDelayKB
		p.SwitchBuffer.Generation = s.Generation
	}
	return p
}

// String is the platform's name and target, e.g. "sonic/spectrum-2".
func (pl Platform) String() string { return pl.Target + "/" + pl.Name }
