package sim

import (
	"errors"
	"fmt"
	"time"
)

// Class is a traffic class of the simulated egress port.
type Class uint8

// The two scheduled classes. CNPs travel on the reverse path, which carries
// nothing else, so their strict class needs no scheduler here.
const (
	// ClassStorage is lossless RoCE: PFC, ECN marking and DCQCN senders.
	ClassStorage Class = iota
	// ClassOther is lossy TCP-like traffic: drop-tail, AIMD senders.
	ClassOther
	numClasses
)

// String names the class as the table prints it.
func (c Class) String() string {
	if c == ClassStorage {
		return "storage"
	}
	return "other"
}

// Header bytes per frame, Ethernet header and FCS included: RoCEv2 over IPv4
// (Eth 14, IPv4 20, UDP 8, BTH 12, ICRC 4, FCS 4) and TCP over IPv4 with
// timestamps (Eth 14, IPv4 20, TCP 32, FCS 4).
const (
	roceHeaderBytes = 62
	tcpHeaderBytes  = 70
)

// wireOverheadBytes is the preamble, start delimiter and inter-frame gap
// every frame costs on the wire.
const wireOverheadBytes = 20

// smallFrameBytes is the frame size of the small-packet share of a flow.
const smallFrameBytes = 64

// Flow is one sender and its traffic; each flow has its own ingress port.
type Flow struct {
	Class Class
	// PayloadBytes is the payload of a full-size frame (RoCE MTU, TCP MSS).
	PayloadBytes int
	// SmallBytePercent of the flow's bytes go in 64 B frames, the
	// small-packet share the switch headroom model assumes.
	SmallBytePercent int
	// Start delays the flow's first frame.
	Start time.Duration
}

// SwitchConfig is the leaf's buffer and PFC model (after the HPCC
// simulator's switch MMU): a shared buffer with a per-(port, priority)
// reserve, a dynamic threshold at a fraction of the free shared buffer, and
// per-port headroom for the lossless priority.
type SwitchConfig struct {
	BufferBytes int64
	// CellBytes is the allocation unit; every frame occupies whole cells.
	CellBytes int
	// ReserveBytes is guaranteed per (ingress port, priority group).
	ReserveBytes int
	// HeadroomBytes absorbs what arrives on a lossless port after XOFF.
	HeadroomBytes int
	// XoffThresholdBytes caps the dynamic threshold (0: dynamic only): the
	// shared occupancy of a lossless priority group that triggers XOFF.
	XoffThresholdBytes int64
	// DynamicShift sets the dynamic threshold to free shared buffer >> shift.
	DynamicShift uint
	// ResumeOffsetBytes: XON once shared use is this far below threshold.
	ResumeOffsetBytes int
	// PFC enables pause frames on the storage class.
	PFC bool
	// PauseQuanta is the time an XOFF asks for, in 512-bit-time quanta; the
	// switch refreshes it every half of that while the port stays paused.
	PauseQuanta uint16
	// PauseWaitBytes is a frame in transmission toward the sender that each
	// PFC frame waits behind: the port MTU for the worst case the SONiC
	// headroom model assumes, 0 for an idle reverse link.
	PauseWaitBytes int
	// ResponseQuanta is how long a sender may keep starting frames after a
	// PAUSE arrives (IEEE 802.3 31B.3.7 worst case), in quanta.
	ResponseQuanta uint32
}

// ECNConfig is the egress RED/ECN ramp, applied to both classes' queues.
type ECNConfig struct {
	Enabled   bool
	KminBytes int64
	KmaxBytes int64
	// Pmax is the marking probability at Kmax; above Kmax every packet is
	// marked, as in the DCQCN paper's RED.
	Pmax float64
	// LinearAboveKmax continues the ramp past Kmax (capped at 1) instead of
	// marking every packet; for comparison with the fluid model's analysis.
	LinearAboveKmax bool
	// MarkOther marks the other class's packets too (else TCP sees loss only).
	MarkOther bool
}

// TCPConfig is the lossy class's AIMD sender.
type TCPConfig struct {
	InitialWindowBytes int
	MaxWindowBytes     int
}

// Scenario is one simulation: N flows through one leaf to one receiver.
type Scenario struct {
	Name string
	Seed uint64
	// Duration is simulated time; statistics count after Warmup.
	Duration time.Duration
	Warmup   time.Duration
	LinkMbps uint32
	// CableMeters is the length of every sender and receiver link.
	CableMeters uint32
	Flows       []Flow
	Switch      SwitchConfig
	ECN         ECNConfig
	DCQCN       DCQCN
	TCP         TCPConfig
	// Weights are the ETS/WRR shares of the storage and other classes.
	WeightStorage, WeightOther int
	// FeedbackDelay adds to the CNP path: the control-loop delay τ* of the
	// fluid model beyond the links' own.
	FeedbackDelay time.Duration
	// SampleEvery is the queue sampling period (default 1 µs); the plot
	// series keeps at most about 4000 points.
	SampleEvery time.Duration
	// Progress, when set, is called with simulated time done and total,
	// about every 1 % of the run.
	Progress func(done, total time.Duration)
}

// validate reports the first thing that makes the scenario unusable.
func (s Scenario) validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Duration <= 0 || s.Warmup < 0 || s.Warmup >= s.Duration {
		add("duration %v and warmup %v: need 0 <= warmup < duration", s.Duration, s.Warmup)
	}
	if s.LinkMbps == 0 {
		add("link speed is 0")
	}
	if len(s.Flows) == 0 {
		add("no flows")
	}
	for i, f := range s.Flows {
		if f.Class >= numClasses {
			add("flow %d: unknown class %d", i, f.Class)
		}
		if f.PayloadBytes <= 0 || f.PayloadBytes > 9000 {
			add("flow %d: payload %d B, want 1–9000", i, f.PayloadBytes)
		}
		if f.SmallBytePercent < 0 || f.SmallBytePercent > 100 {
			add("flow %d: small byte percent %d, want 0–100", i, f.SmallBytePercent)
		}
		if f.Class == ClassStorage && s.WeightStorage <= 0 || f.Class == ClassOther && s.WeightOther <= 0 {
			add("flow %d: class %v has no WRR weight", i, f.Class)
		}
	}
	sw := s.Switch
	if sw.BufferBytes <= 0 || sw.CellBytes <= 0 || sw.ReserveBytes < 0 || sw.HeadroomBytes < 0 {
		add("switch buffer %d B, cell %d B, reserve %d B, headroom %d B: need positive sizes",
			sw.BufferBytes, sw.CellBytes, sw.ReserveBytes, sw.HeadroomBytes)
	}
	if sw.PFC && sw.PauseQuanta == 0 {
		add("PFC on with 0 pause quanta")
	}
	if s.ECN.Enabled && (s.ECN.KminBytes >= s.ECN.KmaxBytes || s.ECN.Pmax <= 0 || s.ECN.Pmax > 1) {
		add("ECN Kmin %d, Kmax %d, Pmax %g: need Kmin < Kmax and 0 < Pmax <= 1", s.ECN.KminBytes, s.ECN.KmaxBytes, s.ECN.Pmax)
	}
	if err := s.DCQCN.validate(); err != nil {
		errs = append(errs, err)
	}
	if s.TCP.InitialWindowBytes <= 0 || s.TCP.MaxWindowBytes < s.TCP.InitialWindowBytes {
		add("TCP window %d..%d B", s.TCP.InitialWindowBytes, s.TCP.MaxWindowBytes)
	}
	if s.SampleEvery < 0 || s.FeedbackDelay < 0 {
		add("negative sample period or feedback delay")
	}
	return errors.Join(errs...)
}
