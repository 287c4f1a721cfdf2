package sim

import "time"

// Result is what a run measured after the warmup, except where a field
// says "whole run".
type Result struct {
	Scenario string
	LinkGbps float64
	// Measured is the simulated time the statistics cover.
	Measured time.Duration
	Flows    []FlowResult
	Classes  []ClassResult // indexed by Class
	// EgressGbps is the egress port's wire rate (frames, preamble and gap),
	// Utilisation its fraction of the link.
	EgressGbps  float64
	Utilisation float64
	// JainAll is Jain's fairness index over every flow's rate.
	JainAll float64
	// Queue is the egress queue (both classes), sampled every SampleEvery;
	// its Max is the largest queue of the whole run, initial burst included.
	Queue QueueStats
	// StorageQueue is the storage class's egress queue alone.
	StorageQueue QueueStats
	// PauseFrames counts XOFF frames (refreshes included) the switch sent;
	// PauseFramesTotal the whole run's, ResumeFrames the XONs.
	PauseFrames, PauseFramesTotal, ResumeFrames int64
	// PausedFraction is the share of port-time senders spent paused.
	PausedFraction float64
	// CNPs the receiver sent; CNPsTotal the whole run's.
	CNPs, CNPsTotal int64
	// MaxHeadroomBytes is the most headroom one port used, whole run.
	MaxHeadroomBytes int64
	// Events is the number of events the run processed.
	Events int64
	Series Series
}

// FlowResult is one flow's outcome.
type FlowResult struct {
	Class Class
	// Gbps is the flow's delivered wire rate, GoodputGbps its payload rate.
	Gbps, GoodputGbps float64
	// FinalRateGbps is the DCQCN current rate at the end (storage flows).
	FinalRateGbps float64
	Drops         int64
	CNPs          int64
}

// ClassResult sums one class.
type ClassResult struct {
	Class             Class
	Flows             int
	Gbps, GoodputGbps float64
	// Jain is Jain's fairness index over the class's flows.
	Jain  float64
	Drops int64
	// LatencyP50, LatencyP99 are one-way frame delays, sender to receiver.
	LatencyP50, LatencyP99 time.Duration
}

// QueueStats summarises queue samples, in frame bytes.
type QueueStats struct {
	P50, P99, Max int64
	Mean          float64
}

// Series is the run's time series for the plot, one point per interval.
type Series struct {
	TimeUs     []float64
	QueueBytes []float64
	// FlowGbps[f][i] is flow f's delivered rate over interval i.
	FlowGbps [][]float64
}

// jain is Jain's fairness index: (Σx)² / (n·Σx²).
func jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(len(xs)) * s2)
}

func queueStats(h *hist) QueueStats {
	return QueueStats{P50: h.quantile(0.5), P99: h.quantile(0.99), Max: h.max, Mean: h.mean()}
}
