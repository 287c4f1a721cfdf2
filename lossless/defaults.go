package lossless

// Default returns the profile for a 100G RoCE storage fabric. Every value and
// its source is listed in docs/lossless.md.
func Default() Profile {
	return Profile{
		Name:               "default",
		LosslessPriorities: []uint8{3},
		CNP:                CNP{Priority: 6, DSCP: 48},
		RoCE:               RoCE{DSCP: 24, MTU: 4096, Trust: "dscp"},
		DSCPToPriority:     map[uint8]uint8{24: 3, 48: 6},
		PriorityToTC:       []uint8{0, 0, 0, 3, 0, 0, 6, 0},
		TrafficClasses: []TrafficClass{
			{TC: 0, Name: "other", Scheduler: SchedulerETS, Weight: 50},
			{TC: 3, Name: "storage", Scheduler: SchedulerETS, Weight: 50},
			{TC: 6, Name: "cnp", Scheduler: SchedulerStrict},
		},
		Ports: []Port{
			{Name: "server", SpeedMbps: 100000, CableMeters: 5, MTU: 9100},
			{Name: "leaf", SpeedMbps: 100000, CableMeters: 40, MTU: 9100},
			{Name: "spine", SpeedMbps: 100000, CableMeters: 300, MTU: 9100},
		},
		PFC: PFC{XoffThresholdBytes: 4000000},
		SwitchBuffer: SwitchBuffer{
			CellBytes:          144,
			PipelineLatencyKB:  18,
			MACPHYDelayKB:      0.8,
			LosslessMTU:        4096,
			SmallPacketPercent: 50,
		},
		NICBuffer: NICBuffer{CellBytes: 128},
		ECN:       ECN{ReferenceMbps: 25000, KminBytes: 100000, KmaxBytes: 400000, PmaxPercent: 20},
		DCQCN: DCQCN{
			RPGTimeReset:            300,
			RPGByteReset:            32767,
			RPGThreshold:            1,
			RPGAIRate:               5,
			RPGHAIRate:              50,
			RPGGD:                   11,
			RPGMinDecFac:            50,
			RPGMinRate:              1,
			DCETCPG:                 1019,
			DCETCPRTT:               1,
			RateReduceMonitorPeriod: 4,
			InitialAlphaValue:       1023,
			MinTimeBetweenCNPs:      2,
		},
		Watchdog: Watchdog{DetectionMs: 200, RestorationMs: 200, PollMs: 200, Action: ActionDrop},
	}
}
