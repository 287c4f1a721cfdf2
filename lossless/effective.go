package lossless

// Effective is what a rendering makes a device do, read back from the
// rendering's own text (not from the profile), so Check can compare targets.
type Effective struct {
	// LosslessPriorities are the priorities PFC is enabled for.
	LosslessPriorities []uint8
	// Classify is what the device classifies by: "dscp" or "pcp"; ToTC is
	// the traffic class of each DSCP (64 entries) or priority (8).
	Classify string
	ToTC     []uint8
	// ETS is how each scheduled traffic class is served.
	ETS []TCShare
	// CNP is where congestion notifications land.
	CNP CNPPlace
	// ECN is the marking per port class; nil when the target does not mark.
	ECN []ClassECN
	// Watchdog is the PFC watchdog; nil when the target has none.
	Watchdog *WatchdogTimes
	// Headroom is the per-priority-group headroom per port class; nil when
	// the target has no switch headroom.
	Headroom []ClassHeadroom
}

// TCShare is one traffic class's scheduling: strict, or a share of the
// bandwidth left by strict classes, in percent.
type TCShare struct {
	TC      uint8
	Strict  bool
	Percent float64
}

// CNPPlace is the traffic class CNPs travel in on a device and how it is
// served.
type CNPPlace struct {
	DSCP     uint8
	TC       uint8
	Strict   bool
	Lossless bool
}

// ClassECN is the ECN marking of one port class.
type ClassECN struct {
	Class string
	ECNThresholds
	// Unconfirmed says the unit the device reads the numbers in is not
	// confirmed by the references (docs/lossless.md).
	Unconfirmed bool
}

// WatchdogTimes are the watchdog's effective detection and restoration
// times and action.
type WatchdogTimes struct {
	DetectionMs   uint32
	RestorationMs uint32
	Action        string
	Unconfirmed   bool
}

// ClassHeadroom is the headroom a device reserves per lossless priority
// group of one port class.
type ClassHeadroom struct {
	Class string
	Bytes uint32
	// Computed: the device sizes the headroom itself from the cable length
	// (Bytes is our estimate of what it should hold).
	Computed    bool
	Unconfirmed bool
	// XoffOnly: Bytes is the xoff part of the headroom only (SONiC on
	// Broadcom, where the guaranteed buffer holds the rest).
	XoffOnly bool
}

// classifyMap is the profile's classification: trust and the traffic class
// of each DSCP (trust dscp, unlisted DSCPs at priority 0) or priority (pcp).
func (p Profile) classifyMap() []uint8 {
	if p.RoCE.Trust == "pcp" {
		return append([]uint8(nil), p.PriorityToTC...)
	}
	out := make([]uint8, 64)
	for d := range uint8(64) {
		out[d] = p.PriorityToTC[p.DSCPToPriority[d]]
	}
	return out
}

// dscpPriorities is the full DSCP → priority map of m: 64 entries,
// unlisted DSCPs at priority 0.
func dscpPriorities(m map[uint8]uint8) [64]uint8 {
	var out [64]uint8
	for d, prio := range m {
		if d < 64 {
			out[d] = prio
		}
	}
	return out
}

// profileETS is the scheduling the profile asks for.
func (p Profile) profileETS() []TCShare {
	var out []TCShare
	for _, c := range p.scheduled() {
		out = append(out, TCShare{TC: c.TC, Strict: c.Scheduler == SchedulerStrict, Percent: float64(c.Weight)})
	}
	return out
}

// sharesOf turns weights (relative, any scale) of the non-strict classes of
// p into percentages.
func (p Profile) sharesOf(weight func(TrafficClass) float64) []TCShare {
	var sum float64
	for _, c := range p.scheduled() {
		if c.Scheduler == SchedulerETS {
			sum += weight(c)
		}
	}
	var out []TCShare
	for _, c := range p.scheduled() {
		s := TCShare{TC: c.TC, Strict: c.Scheduler == SchedulerStrict}
		if !s.Strict && sum > 0 {
			s.Percent = 100 * weight(c) / sum
		}
		out = append(out, s)
	}
	return out
}

// cnpPlace is where CNPs land given a classification map and ETS.
func (p Profile) cnpPlace(toTC []uint8, ets []TCShare, lossless []uint8) CNPPlace {
	key := p.CNP.DSCP
	if p.RoCE.Trust == "pcp" {
		key = p.CNP.Priority
	}
	c := CNPPlace{DSCP: p.CNP.DSCP}
	if int(key) < len(toTC) {
		c.TC = toTC[key]
	}
	for _, s := range ets {
		if s.TC == c.TC {
			c.Strict = s.Strict
		}
	}
	for _, prio := range lossless {
		if t, ok := p.tcOf(prio); ok && t == c.TC {
			c.Lossless = true
		}
	}
	return c
}
