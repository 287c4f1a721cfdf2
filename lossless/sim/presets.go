package sim

import (
	"fmt"
	"time"

	"github.com/openinof/inof/lossless"
)

// Buffer model constants of the HPCC simulator's switch MMU
// (alibaba-edu/High-Precision-Congestion-Control): 4 KB reserve per
// (port, priority group), PFC threshold at 1/8 of the free shared buffer,
// XON 3 KB below it; a 32 MB shared buffer.
const (
	hpccBufferBytes  = 32 << 20
	hpccReserveBytes = 4 << 10
	hpccDynamicShift = 3
	hpccResumeOffset = 3 << 10
	maxPauseQuanta   = 0xFFFF
	tcpMSS           = 1448
)

// defaultTCP is a Linux-like start: 10 segments, window capped at 4 MB.
func defaultTCP() TCPConfig {
	return TCPConfig{InitialWindowBytes: 10 * tcpMSS, MaxWindowBytes: 4 << 20}
}

// PaperDCQCN40G returns the DCQCN paper's 40G parameters as the CoNEXT'16
// fluid model uses them: g = 1/256, τ' = 55 µs, T = 55 µs, B = 10 MB, F = 5,
// R_AI = 40 Mb/s, CNP interval τ = 50 µs, cut RC·α/2. R_HAI and the minimum
// rate are ours (the fluid model has neither; with B = 10 MB hyper increase
// needs 50 MB without a CNP and does not occur in the validation runs).
func PaperDCQCN40G() DCQCN {
	return DCQCN{
		G:                 1.0 / 256,
		AlphaPeriod:       55 * time.Microsecond,
		InitialAlpha:      1,
		CutGain:           0.5,
		MaxCut:            1,
		IncreaseTimer:     55 * time.Microsecond,
		ByteCounter:       10_000_000,
		FastRecoverySteps: 5,
		AIMbps:            40,
		HAIMbps:           400,
		MinRateMbps:       10,
		ClampTarget:       true,
		CNPInterval:       50 * time.Microsecond,
	}
}

// PaperFrameBytes is the frame size of the validation runs: the fluid
// model's figures count 1 KB packets.
const PaperFrameBytes = 1000

// Paper40G is the fluid model's validation setting: n DCQCN flows starting
// at line rate into one 40G port, RED Kmin 5 KB, Kmax 200 KB, Pmax 1 %,
// 1 KB frames, a buffer large enough that PFC stays out of the way.
func Paper40G(n int) Scenario {
	flows := make([]Flow, n)
	for i := range flows {
		flows[i] = Flow{Class: ClassStorage, PayloadBytes: PaperFrameBytes - roceHeaderBytes}
	}
	return Scenario{
		Name:        fmt.Sprintf("DCQCN paper 40G, %d flows", n),
		Seed:        1,
		Duration:    20 * time.Millisecond,
		Warmup:      10 * time.Millisecond,
		LinkMbps:    40000,
		CableMeters: 5,
		Flows:       flows,
		Switch: SwitchConfig{
			BufferBytes: hpccBufferBytes, CellBytes: 144, ReserveBytes: hpccReserveBytes,
			HeadroomBytes: 256 << 10, DynamicShift: hpccDynamicShift, ResumeOffsetBytes: hpccResumeOffset,
			PFC: true, PauseQuanta: maxPauseQuanta, ResponseQuanta: 118,
		},
		ECN:           ECNConfig{Enabled: true, KminBytes: 5000, KmaxBytes: 200000, Pmax: 0.01},
		DCQCN:         PaperDCQCN40G(),
		TCP:           defaultTCP(),
		WeightStorage: 50,
		WeightOther:   50,
	}
}

// DCQCNFromProfile maps the profile's ConnectX parameters (named as in
// /sys/class/net/<if>/ecn/roce_rp and roce_np) onto the model: time in µs,
// rates in Mb/s, α in units of 1/1024, the cut RC·α·1024/2^rpg_gd
// (rpg_gd = 11 is the paper's α/2), g = (1024 − dce_tcp_g)/1024 per
// dce_tcp_rtt, and at most one cut per rate_reduce_monitor_period. The
// profile has no clamp_tgt_rate settings; ConnectX's defaults apply
// (ClampTarget false). rpg_byte_reset is not applied: rate increase is
// timer-driven only, as in the HPCC simulator's ConnectX model; read as
// bytes, 32,767 B would add an increase step every 2.6 µs at 100G and
// docs/simulator.md shows what that does to an 8-to-1 incast.
func DCQCNFromProfile(d lossless.DCQCN) DCQCN {
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	g := float64(1024-min(d.DCETCPG, 1023)) / 1024
	return DCQCN{
		G:                 g,
		AlphaPeriod:       us(max(d.DCETCPRTT, 1)),
		InitialAlpha:      float64(min(d.InitialAlphaValue, 1024)) / 1024,
		CutGain:           1024 / float64(uint64(1)<<min(d.RPGGD, 30)),
		MaxCut:            float64(min(max(d.RPGMinDecFac, 1), 100)) / 100,
		MinCutInterval:    us(d.RateReduceMonitorPeriod),
		IncreaseTimer:     us(max(d.RPGTimeReset, 1)),
		FastRecoverySteps: int(d.RPGThreshold),
		AIMbps:            float64(d.RPGAIRate),
		HAIMbps:           float64(d.RPGHAIRate),
		MinRateMbps:       float64(max(d.RPGMinRate, 1)),
		CNPInterval:       us(d.MinTimeBetweenCNPs),
	}
}

// FromProfile builds an incast on one port class of a profile: storage
// RoCE flows (payload = the RoCE MTU) and other TCP flows (MSS 1448) into
// one port of the class's speed and cable length, with the headroom, ECN
// thresholds, DCQCN parameters and ETS weights the profile gives.
func FromProfile(p lossless.Profile, port lossless.Port, storage, other int) (Scenario, error) {
	plan, err := lossless.PlanPort(p, port)
	if err != nil {
		return Scenario{}, fmt.Errorf("sim: plan port: %w", err)
	}
	quanta, _ := lossless.PauseQuanta(port.SpeedMbps) // PlanPort checked the speed
	if len(p.PriorityToTC) != lossless.NumPriorities {
		return Scenario{}, fmt.Errorf("sim: profile %q: priority_to_tc has %d entries, want %d", p.Name, len(p.PriorityToTC), lossless.NumPriorities)
	}
	wStorage, err := ets(p, storageTC(p))
	if err != nil {
		return Scenario{}, err
	}
	wOther, err := ets(p, p.PriorityToTC[0])
	if err != nil {
		return Scenario{}, err
	}
	flows := make([]Flow, 0, storage+other)
	for range storage {
		flows = append(flows, Flow{Class: ClassStorage, PayloadBytes: int(p.RoCE.MTU)})
	}
	for range other {
		flows = append(flows, Flow{Class: ClassOther, PayloadBytes: tcpMSS})
	}
	return Scenario{
		Name:        fmt.Sprintf("profile %q, port %q: %d storage + %d other to 1", p.Name, port.Name, storage, other),
		Seed:        1,
		Duration:    10 * time.Millisecond,
		Warmup:      2 * time.Millisecond,
		LinkMbps:    port.SpeedMbps,
		CableMeters: port.CableMeters,
		Flows:       flows,
		Switch: SwitchConfig{
			BufferBytes: hpccBufferBytes, CellBytes: int(p.SwitchBuffer.CellBytes), ReserveBytes: hpccReserveBytes,
			HeadroomBytes: int(plan.HeadroomBytes), XoffThresholdBytes: int64(p.PFC.XoffThresholdBytes),
			DynamicShift: hpccDynamicShift, ResumeOffsetBytes: hpccResumeOffset,
			PFC: true, PauseQuanta: maxPauseQuanta, ResponseQuanta: quanta, PauseWaitBytes: int(port.MTU),
		},
		ECN: ECNConfig{
			Enabled: true, KminBytes: int64(plan.ECN.KminBytes), KmaxBytes: int64(plan.ECN.KmaxBytes),
			Pmax: float64(plan.ECN.PmaxPercent) / 100, MarkOther: true,
		},
		DCQCN:         DCQCNFromProfile(p.DCQCN),
		TCP:           defaultTCP(),
		WeightStorage: wStorage,
		WeightOther:   wOther,
	}, nil
}

// storageTC is the traffic class of the profile's first lossless priority.
func storageTC(p lossless.Profile) uint8 {
	if len(p.LosslessPriorities) == 0 || int(p.LosslessPriorities[0]) >= len(p.PriorityToTC) {
		return 3
	}
	return p.PriorityToTC[p.LosslessPriorities[0]]
}

// ets returns the ETS share of a traffic class.
func ets(p lossless.Profile, tc uint8) (int, error) {
	for _, c := range p.TrafficClasses {
		if c.TC == tc && c.Scheduler == lossless.SchedulerETS && c.Weight > 0 {
			return int(c.Weight), nil
		}
	}
	return 0, fmt.Errorf("sim: profile %q: traffic class %d has no ETS weight", p.Name, tc)
}
