package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// FluidParams are the inputs of the DCQCN fluid model (Zhu et al.,
// "ECN or Delay", CoNEXT 2016, Fig. "DCQCN fluid model"). The model counts
// packets; rates and sizes given here in bits and bytes are converted with
// PacketBytes.
type FluidParams struct {
	N           int
	LinkGbps    float64
	PacketBytes float64
	KminBytes   float64
	KmaxBytes   float64
	Pmax        float64
	G           float64
	AlphaPeriod time.Duration // τ'
	CNPInterval time.Duration // τ
	Timer       time.Duration // T
	ByteCounter float64       // B, bytes
	F           float64
	AIMbps      float64
	// Delay is the control-loop delay τ*.
	Delay time.Duration
	// LinearAboveKmax continues the ramp past Kmax (capped at 1) instead of
	// RED's step to 1; the published linearised stability analysis assumes
	// it wherever q* lies above Kmax.
	LinearAboveKmax bool
}

// PaperFluid40G returns the published 40G defaults for n flows and a
// control-loop delay.
func PaperFluid40G(n int, delay time.Duration) FluidParams {
	d := PaperDCQCN40G()
	return FluidParams{
		N: n, LinkGbps: 40, PacketBytes: PaperFrameBytes,
		KminBytes: 5000, KmaxBytes: 200000, Pmax: 0.01,
		G: d.G, AlphaPeriod: d.AlphaPeriod, CNPInterval: d.CNPInterval, Timer: d.IncreaseTimer,
		ByteCounter: float64(d.ByteCounter), F: float64(d.FastRecoverySteps), AIMbps: d.AIMbps,
		Delay: delay,
	}
}

func (f FluidParams) validate() error {
	if f.N <= 0 || f.LinkGbps <= 0 || f.PacketBytes <= 0 || f.KminBytes >= f.KmaxBytes || f.Pmax <= 0 ||
		f.G <= 0 || f.AlphaPeriod <= 0 || f.CNPInterval <= 0 || f.Timer <= 0 || f.ByteCounter <= 0 || f.AIMbps <= 0 {
		return errors.New("fluid model: need N, link, packet, Kmin < Kmax, Pmax, g, τ', τ, T, B and R_AI all positive")
	}
	return nil
}

// capacity is C in packets per second.
func (f FluidParams) capacity() float64 { return f.LinkGbps * 1e9 / 8 / f.PacketBytes }

// FixedPoint returns the closed-form equilibrium of the fluid model: the
// marking probability p* ≈ ∛[(R_AI·N²/(τ'·C²))·(1/B + N/(T·C))²] (first
// order in p) and the queue q* = (p*/Pmax)(Kmax − Kmin) + Kmin, in bytes.
func FixedPoint(f FluidParams) (p, qBytes float64) {
	c := f.capacity()
	n := float64(f.N)
	rai := f.AIMbps * 1e6 / 8 / f.PacketBytes
	b := f.ByteCounter / f.PacketBytes
	tau1 := f.AlphaPeriod.Seconds()
	inner := 1/b + n/(f.Timer.Seconds()*c)
	p = math.Cbrt(rai * n * n / (tau1 * c * c) * inner * inner)
	return p, p/f.Pmax*(f.KmaxBytes-f.KminBytes) + f.KminBytes
}

// FluidTrace is the integrated model: time, queue and each flow's rate
// (all flows are symmetric).
type FluidTrace struct {
	TimeUs     []float64
	QueueBytes []float64
	RateGbps   []float64
}

// Fluid integrates the fluid model from every flow at line rate and an
// empty queue, with a fixed step, recording one point per `every`.
func Fluid(f FluidParams, duration, step, every time.Duration) (FluidTrace, error) {
	if err := f.validate(); err != nil {
		return FluidTrace{}, err
	}
	if step <= 0 || duration < step || every < step {
		return FluidTrace{}, fmt.Errorf("fluid model: step %v, duration %v, every %v", step, duration, every)
	}
	var (
		c     = f.capacity()
		n     = float64(f.N)
		rai   = f.AIMbps * 1e6 / 8 / f.PacketBytes
		bPk   = f.ByteCounter / f.PacketBytes
		kmin  = f.KminBytes / f.PacketBytes
		kmax  = f.KmaxBytes / f.PacketBytes
		tau   = f.CNPInterval.Seconds()
		tau1  = f.AlphaPeriod.Seconds()
		timer = f.Timer.Seconds()
		dt    = step.Seconds()
		lag   = int(f.Delay / step)
		steps = int(duration / step)
		rec   = int(every / step)
	)
	// ring buffers of the delayed marking probability and rate
	pHist := make([]float64, lag+1)
	rHist := make([]float64, lag+1)
	q, alpha, rt, rc := 0.0, 1.0, c, c
	for i := range rHist {
		rHist[i] = c
	}
	var tr FluidTrace
	for i := range steps {
		slot := i % (lag + 1)
		pNow := markProb(q, kmin, kmax, f.Pmax, f.LinearAboveKmax)
		pHist[slot], rHist[slot] = pNow, rc
		old := (i + 1) % (lag + 1) // lag steps ago (the initial state before that)
		pd, rd := pHist[old], rHist[old]
		cut := 1 - pow1m(pd, tau*rd)
		cutA := 1 - pow1m(pd, tau1*rd)
		byteEv := eventRate(pd, bPk)
		timerEv := eventRate(pd, timer*rd)
		byteAI := pow1m(pd, f.F*bPk) * byteEv
		timerAI := pow1m(pd, f.F*timer*rd) * timerEv
		dAlpha := f.G / tau1 * (cutA - alpha)
		dRT := -(rt-rc)/tau*cut + rai*rd*(byteAI+timerAI)
		dRC := -rc*alpha/(2*tau)*cut + (rt-rc)/2*rd*(byteEv+timerEv)
		dq := n*rc - c
		alpha += dAlpha * dt
		rt = min(rt+dRT*dt, c)
		rc = min(max(rc+dRC*dt, 0), c)
		q = max(q+dq*dt, 0)
		if (i+1)%rec == 0 {
			tr.TimeUs = append(tr.TimeUs, float64(i+1)*dt*1e6)
			tr.QueueBytes = append(tr.QueueBytes, q*f.PacketBytes)
			tr.RateGbps = append(tr.RateGbps, rc*f.PacketBytes*8/1e9)
		}
	}
	return tr, nil
}

// markProb is the RED ramp of the model: 0 up to Kmin, Pmax at Kmax, then
// 1 (or the ramp continued, capped at 1).
func markProb(q, kmin, kmax, pmax float64, linear bool) float64 {
	switch {
	case q <= kmin:
		return 0
	case q > kmax && !linear:
		return 1
	}
	return min((q-kmin)/(kmax-kmin)*pmax, 1)
}

// pow1m is (1−p)^x.
func pow1m(p, x float64) float64 {
	if p >= 1 {
		return 0
	}
	return math.Exp(x * math.Log1p(-p))
}

// eventRate is p / ((1−p)^(−x) − 1): per packet, how often a counter of
// x packets (or x packets' worth of time) expires between marks; its limit
// at p = 0 is 1/x.
func eventRate(p, x float64) float64 {
	switch {
	case p >= 1:
		return 0
	case p < 1e-12:
		return 1 / x
	}
	return p / math.Expm1(-x*math.Log1p(-p))
}
