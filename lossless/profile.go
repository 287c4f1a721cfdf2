package lossless

// NumPriorities is the number of IEEE 802.1p priorities and of traffic
// classes a port has.
const NumPriorities = 8

// Profile is one named lossless configuration for the whole fabric.
type Profile struct {
	Name string `yaml:"name"`
	// LosslessPriorities are the priorities with PFC (default 3).
	LosslessPriorities []uint8 `yaml:"lossless_priorities"`
	// CNP is where congestion notification packets travel.
	CNP CNP `yaml:"cnp"`
	// RoCE is how hosts mark RoCE traffic.
	RoCE RoCE `yaml:"roce"`
	// DSCPToPriority maps a DSCP to a priority on switches (and on hosts unless
	// HostDSCPToPriority is set). Unlisted DSCPs map to priority 0.
	DSCPToPriority map[uint8]uint8 `yaml:"dscp_to_priority"`
	// HostDSCPToPriority, when set, is the map hosts use; it must agree with
	// DSCPToPriority for every DSCP either lists.
	HostDSCPToPriority map[uint8]uint8 `yaml:"host_dscp_to_priority,omitempty"`
	// PriorityToTC maps each of the 8 priorities to a traffic class.
	PriorityToTC []uint8 `yaml:"priority_to_tc,flow"`
	// TrafficClasses lists the scheduled traffic classes; unlisted classes
	// carry no traffic.
	TrafficClasses []TrafficClass `yaml:"traffic_classes"`
	// Ports are the port classes (speed, cable, MTU) the profile applies to.
	Ports []Port `yaml:"ports"`
	// PFC holds the pause threshold the ECN ordering rule compares against.
	PFC PFC `yaml:"pfc"`
	// SwitchBuffer holds the switch ASIC constants of the SONiC headroom model.
	SwitchBuffer SwitchBuffer `yaml:"switch_buffer"`
	// NICBuffer holds the NIC constants of the mlx5 headroom formula.
	NICBuffer NICBuffer `yaml:"nic_buffer"`
	// ECN holds the marking thresholds at a reference speed.
	ECN ECN `yaml:"ecn"`
	// DCQCN holds the NIC congestion control parameters.
	DCQCN DCQCN `yaml:"dcqcn"`
	// Watchdog is the PFC storm watchdog.
	Watchdog Watchdog `yaml:"watchdog"`
	// Platforms names, per render target, the hardware family a device of
	// that target is (e.g. sonic: spectrum-2, huawei: ce6855); a target left
	// out uses its default platform. Platforms() lists them.
	Platforms map[string]string `yaml:"platforms,omitempty"`
}

// CNP places congestion notification packets.
type CNP struct {
	Priority uint8 `yaml:"priority"`
	DSCP     uint8 `yaml:"dscp"`
}

// RoCE says how hosts mark and size RoCE traffic.
type RoCE struct {
	// DSCP hosts put on RoCE packets (24 = ToS 96, `cma_roce_tos -t 96`).
	DSCP uint8 `yaml:"dscp"`
	// MTU is the RoCE path MTU: 256, 512, 1024, 2048 or 4096.
	MTU uint32 `yaml:"mtu"`
	// Trust is what hosts and switches classify by: "dscp" or "pcp".
	Trust string `yaml:"trust"`
}

// Scheduler names for TrafficClass.Scheduler.
const (
	SchedulerStrict = "strict"
	SchedulerETS    = "ets"
)

// TrafficClass is how one traffic class is scheduled.
type TrafficClass struct {
	TC        uint8  `yaml:"tc"`
	Name      string `yaml:"name,omitempty"`
	Scheduler string `yaml:"scheduler"`        // "strict" or "ets"
	Weight    uint8  `yaml:"weight,omitempty"` // ETS/WRR share in percent
}

// Port is a class of ports sharing speed, cable length and MTU.
type Port struct {
	Name        string `yaml:"name"`
	SpeedMbps   uint32 `yaml:"speed_mbps"`
	CableMeters uint32 `yaml:"cable_m"`
	MTU         uint32 `yaml:"mtu"`
	// HeadroomBytes overrides the computed headroom size when non-zero; it
	// must still cover the computed requirement.
	HeadroomBytes uint32 `yaml:"headroom_bytes,omitempty"`
	// Lanes is the number of SerDes lanes of a port in this class; SONiC
	// doubles the pipeline latency and adds a port MTU to the headroom of
	// 8-lane ports. 0 means not 8.
	Lanes uint8 `yaml:"lanes,omitempty"`
	// Interfaces are the device's interface names in this class; renderers
	// need them, the fabric-wide profile may leave them empty.
	Interfaces []string `yaml:"interfaces,omitempty,flow"`
}

// PFC holds PFC settings not derived from the port.
type PFC struct {
	// XoffThresholdBytes is the ingress occupancy of a lossless priority
	// group at which the switch sends PAUSE.
	XoffThresholdBytes uint64 `yaml:"xoff_threshold_bytes"`
}

// SwitchBuffer holds the inputs of the SONiC dynamic headroom model, in the
// units SONiC's ASIC_TABLE and LOSSLESS_TRAFFIC_PATTERN use.
type SwitchBuffer struct {
	CellBytes          uint32  `yaml:"cell_bytes"`
	PipelineLatencyKB  float64 `yaml:"pipeline_latency_kb"`
	MACPHYDelayKB      float64 `yaml:"mac_phy_delay_kb"`
	LosslessMTU        uint32  `yaml:"lossless_mtu"`
	SmallPacketPercent uint32  `yaml:"small_packet_percent"`
	GearboxDelayNs     uint32  `yaml:"gearbox_delay_ns,omitempty"`
	SharedHeadroomPool bool    `yaml:"shared_headroom_pool,omitempty"`
	DynamicThreshold   int8    `yaml:"dynamic_th"`
	// Generation is the NVIDIA Spectrum generation (1–6) when the model is
	// for one: SONiC adds bytes on tile for Spectrum-4 and -5 and 18 KiB for
	// Spectrum-6. 0 adds neither. A platform sets it.
	Generation uint8 `yaml:"spectrum_generation,omitempty"`
}

// NICBuffer holds the constants of the mlx5 NIC headroom formula.
type NICBuffer struct {
	CellBytes uint32 `yaml:"cell_bytes"`
}

// ECN holds WRED/ECN marking at a reference speed; Compute scales Kmin and
// Kmax linearly with each port's speed.
type ECN struct {
	ReferenceMbps uint32 `yaml:"reference_mbps"`
	KminBytes     uint64 `yaml:"kmin_bytes"`
	KmaxBytes     uint64 `yaml:"kmax_bytes"`
	PmaxPercent   uint8  `yaml:"pmax_percent"`
}

// DCQCN holds the NVIDIA ConnectX congestion control parameters, named as
// in /sys/class/net/<if>/ecn/roce_rp and roce_np.
type DCQCN struct {
	RPGTimeReset            uint32 `yaml:"rpg_time_reset"`
	RPGByteReset            uint32 `yaml:"rpg_byte_reset"`
	RPGThreshold            uint32 `yaml:"rpg_threshold"`
	RPGAIRate               uint32 `yaml:"rpg_ai_rate"`
	RPGHAIRate              uint32 `yaml:"rpg_hai_rate"`
	RPGGD                   uint32 `yaml:"rpg_gd"`
	RPGMinDecFac            uint32 `yaml:"rpg_min_dec_fac"`
	RPGMinRate              uint32 `yaml:"rpg_min_rate"`
	DCETCPG                 uint32 `yaml:"dce_tcp_g"`
	DCETCPRTT               uint32 `yaml:"dce_tcp_rtt"`
	RateReduceMonitorPeriod uint32 `yaml:"rate_reduce_monitor_period"`
	InitialAlphaValue       uint32 `yaml:"initial_alpha_value"`
	MinTimeBetweenCNPs      uint32 `yaml:"min_time_between_cnps"`
}

// Watchdog actions.
const (
	ActionDrop    = "drop"
	ActionForward = "forward"
	ActionAlert   = "alert"
)

// Watchdog is the PFC storm (deadlock) watchdog, times in milliseconds.
type Watchdog struct {
	DetectionMs   uint32 `yaml:"detection_ms"`
	RestorationMs uint32 `yaml:"restoration_ms"`
	PollMs        uint32 `yaml:"poll_ms"`
	Action        string `yaml:"action"`
}
