package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// ps converts a duration to the simulator's picoseconds.
func ps(d time.Duration) int64 { return d.Nanoseconds() * 1000 }

// cableSpeed is the signal speed in cable, m/s (SONiC's constant).
const cableSpeed = 198_000_000

// pfcFrameBytes is a PFC frame on the wire (64 B frame, 20 B overhead);
// CNPs and ACKs cost the same.
const pfcFrameBytes = 84

// run is one simulation in progress.
type run struct {
	s       Scenario
	h       eventHeap
	now     int64
	warm    int64
	end     int64
	events  int64
	psPerB  float64 // picoseconds per byte on a link
	prop    int64   // one link's propagation delay
	ctlPath int64   // PFC frame, CNP or ACK over one link
	rng     *rand.Rand
	senders []sender
	mmu     *mmu
	sw      egress
	stats   collector
}

// Run simulates the scenario and returns what it measured. It stops early
// with ctx's error if ctx is cancelled.
func Run(ctx context.Context, s Scenario) (Result, error) {
	if s.SampleEvery == 0 {
		s.SampleEvery = time.Microsecond
	}
	if err := s.validate(); err != nil {
		return Result{}, fmt.Errorf("sim: scenario %q: %w", s.Name, err)
	}
	r := newRun(s)
	if err := r.loop(ctx); err != nil {
		return Result{}, fmt.Errorf("sim: scenario %q: %w", s.Name, err)
	}
	return r.result(), nil
}

func newRun(s Scenario) *run {
	r := &run{
		s:      s,
		warm:   ps(s.Warmup),
		end:    ps(s.Duration),
		psPerB: 8e6 / float64(s.LinkMbps),
		rng:    rand.New(rand.NewPCG(s.Seed, 0x696e6f66)),
		mmu:    newMMU(s.Switch, len(s.Flows)),
	}
	r.prop = int64(float64(s.CableMeters) * 1e12 / cableSpeed)
	r.ctlPath = r.tx(pfcFrameBytes) + r.prop
	r.h.ev = make([]event, 0, 8*len(s.Flows)+16)
	r.sw = newEgress(s)
	r.senders = make([]sender, len(s.Flows))
	line := float64(s.LinkMbps) * 1e6
	for i, f := range s.Flows {
		start := ps(f.Start) + r.rng.Int64N(r.tx(f.PayloadBytes+wireOverheadBytes+headerBytes(f.Class))+1)
		r.senders[i] = newSender(f, line, s, start, r.baseRTT(f))
		r.push(event{at: start, kind: evSend, flow: int32(i)})
		if f.Class == ClassStorage {
			r.push(event{at: start + ps(s.DCQCN.IncreaseTimer), kind: evRateTimer, flow: int32(i)})
		}
	}
	r.stats = newCollector(s, r.end)
	r.push(event{at: ps(s.SampleEvery), kind: evTick})
	return r
}

// tx is the time a number of wire bytes takes on a link.
func (r *run) tx(bytes int) int64 { return int64(float64(bytes)*r.psPerB + 0.5) }

func (r *run) push(e event) { r.h.push(e) }

// baseRTT is a flow's round trip with empty queues.
func (r *run) baseRTT(f Flow) int64 {
	frame := f.PayloadBytes + headerBytes(f.Class) + wireOverheadBytes
	return 2*r.tx(frame) + 4*r.prop + 2*r.ctlPath
}

func (r *run) loop(ctx context.Context) error {
	for len(r.h.ev) > 0 {
		e := r.h.pop()
		if e.at > r.end {
			break
		}
		r.now = e.at
		r.events++
		if r.events&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped at %v simulated: %w", time.Duration(r.now/1000), err)
			}
		}
		switch e.kind {
		case evSend:
			r.onSend(e)
		case evArrive:
			r.onArrive(e)
		case evEgressDone:
			r.onEgressDone(e)
		case evCNP:
			r.onCNP(e)
		case evPause:
			r.onPause(e)
		case evRefresh:
			r.onRefresh(e)
		case evRateTimer:
			r.onRateTimer(e)
		case evAck:
			r.onAck(e)
		case evLoss:
			r.onLoss(e)
		case evTick:
			r.onTick()
		}
	}
	r.now = r.end
	return nil
}
