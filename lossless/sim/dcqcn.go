package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DCQCN holds the reaction point (sender) and notification point
// (receiver) parameters of DCQCN (Zhu et al., SIGCOMM 2015).
type DCQCN struct {
	// G is the gain of the congestion estimate α, updated once per
	// AlphaPeriod: α ← (1−G)α + G·[a CNP arrived in the period].
	G           float64
	AlphaPeriod time.Duration
	// InitialAlpha is α when a flow starts.
	InitialAlpha float64
	// CutGain scales the rate cut: RC ← RC·(1 − CutGain·α); 1/2 in the paper.
	CutGain float64
	// MaxCut bounds one cut (mlx5 rpg_min_dec_fac); 1 leaves it unbounded.
	MaxCut float64
	// MinCutInterval: at most one cut per interval (mlx5
	// rate_reduce_monitor_period); 0 cuts on every CNP.
	MinCutInterval time.Duration
	// IncreaseTimer is T: a rate increase step every T without a cut.
	IncreaseTimer time.Duration
	// ByteCounter is B: a rate increase step every B bytes sent (0: off).
	ByteCounter int64
	// FastRecoverySteps is F: steps in fast recovery before additive
	// increase; hyper increase once both counters pass F+1.
	FastRecoverySteps int
	AIMbps            float64 // R_AI
	HAIMbps           float64 // R_HAI
	MinRateMbps       float64
	// ClampTarget sets the target rate to the current rate on every cut (the
	// paper). Without it the target is kept through consecutive cuts and
	// updated only after a timer-driven increase, as ConnectX does with its
	// defaults clamp_tgt_rate 0 and clamp_tgt_rate_after_time_inc 1.
	ClampTarget bool
	// CNPInterval: the receiver sends at most one CNP per flow per interval.
	CNPInterval time.Duration
}

func (d DCQCN) validate() error {
	switch {
	case d.G <= 0 || d.G > 1:
		return fmt.Errorf("DCQCN g %g: want 0 < g <= 1", d.G)
	case d.AlphaPeriod <= 0 || d.IncreaseTimer <= 0:
		return fmt.Errorf("DCQCN alpha period %v and increase timer %v must be positive", d.AlphaPeriod, d.IncreaseTimer)
	case d.CutGain <= 0 || d.MaxCut <= 0 || d.MaxCut > 1:
		return fmt.Errorf("DCQCN cut gain %g, max cut %g: want positive, max cut <= 1", d.CutGain, d.MaxCut)
	case d.FastRecoverySteps < 0 || d.ByteCounter < 0 || d.AIMbps < 0 || d.HAIMbps < 0 || d.MinRateMbps <= 0:
		return errors.New("DCQCN: negative steps, byte counter or increase rate, or no minimum rate")
	}
	return nil
}

// rp is one sender's DCQCN reaction point. Rates are in bit/s, times in
// picoseconds.
type rp struct {
	rc, rt, line float64
	alpha        float64
	alphaAt      int64 // start of the current α period
	cnpSeen      bool  // a CNP arrived in the current α period
	lastCut      int64
	cutOnce      bool
	timerCount   int
	byteCount    int
	bytes        int64
	timerGen     uint32
}

func newRP(line float64, d DCQCN, start int64) rp {
	return rp{rc: line, rt: line, line: line, alpha: d.InitialAlpha, alphaAt: start}
}

// advanceAlpha applies the α updates of every period that ended by now.
func (r *rp) advanceAlpha(now int64, d DCQCN) {
	period := d.AlphaPeriod.Nanoseconds() * 1000
	k := (now - r.alphaAt) / period
	if k <= 0 {
		return
	}
	seen := 0.0
	if r.cnpSeen {
		seen = 1
	}
	r.alpha = (1-d.G)*r.alpha + d.G*seen
	if k > 1 {
		r.alpha *= math.Pow(1-d.G, float64(k-1))
	}
	r.cnpSeen = false
	r.alphaAt += k * period
}

// onCNP reacts to a congestion notification; it reports whether the rate
// was cut (the caller then restarts the increase timer).
func (r *rp) onCNP(now int64, d DCQCN) bool {
	r.advanceAlpha(now, d)
	r.cnpSeen = true
	if r.cutOnce && now-r.lastCut < d.MinCutInterval.Nanoseconds()*1000 {
		return false
	}
	if d.ClampTarget || r.timerCount > 0 || !r.cutOnce {
		r.rt = r.rc
	}
	r.rc *= 1 - min(d.CutGain*r.alpha, d.MaxCut)
	r.rc = max(r.rc, d.MinRateMbps*1e6)
	r.lastCut, r.cutOnce = now, true
	r.timerCount, r.byteCount, r.bytes = 0, 0, 0
	r.timerGen++
	return true
}

// onTimer is one increase-timer expiry.
func (r *rp) onTimer(d DCQCN) {
	r.timerCount++
	r.increase(d)
}

// onSent counts bytes sent; it reports whether the rate changed.
func (r *rp) onSent(bytes int64, d DCQCN) bool {
	if d.ByteCounter == 0 {
		return false
	}
	r.bytes += bytes
	if r.bytes < d.ByteCounter {
		return false
	}
	r.bytes -= d.ByteCounter
	r.byteCount++
	r.increase(d)
	return true
}

// increase is one step of fast recovery, additive or hyper increase. The
// counters count steps since the last cut: the first F are fast recovery,
// hyper increase starts once both counters pass F+1 (with the byte counter
// off, the timer alone decides, as in ConnectX).
func (r *rp) increase(d DCQCN) {
	f, t, b := d.FastRecoverySteps, r.timerCount, r.byteCount
	if d.ByteCounter == 0 {
		b = t
	}
	switch lo := min(t, b); {
	case max(t, b) <= f:
		// fast recovery: halve the distance to the target
	case lo > f+1:
		r.rt += d.HAIMbps * 1e6 * float64(lo-f-1)
	default:
		r.rt += d.AIMbps * 1e6
	}
	r.rt = min(r.rt, r.line)
	r.rc = min((r.rt+r.rc)/2, r.line)
}
