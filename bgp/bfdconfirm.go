package bgp

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/openinof/inof/internal/echoprobe"
)

// BFDConfirm configures how a reflector turns a switch's BFD down into a
// switch gone (its session shut, its records withdrawn, reason 7 at every
// host that used them). A BFD down alone is not proof: a switch or a
// reflector starved of CPU for a detection time misses its packets while
// it lives (issue #46: a loaded lab saw more false downs than kills). So:
//
//   - confirmed at once when the switch's BGP session ended a third of a
//     detection time or more before (a killed daemon's kernel closes its
//     connection at once, its BFD falls silent a detection time later);
//   - confirmed after a short probe when the switch's kernel does not
//     answer ICMP echo requests (internal/echoprobe) although it answered
//     them while BFD was up: a kernel answers echo in its receive path even
//     when every process on the box is starved, so silence means the box,
//     or every path to it, is gone (a powered-off switch, its uplinks cut);
//   - otherwise held: the switch is declared gone when BFD is not back
//     within Hold, and nothing happens when it is (counted, logged). A
//     session that ends meanwhile confirms nothing: a switch that loses
//     BFD itself ends its session to that reflector on purpose;
//   - each unconfirmed down of a switch within DampDecay doubles its next
//     Hold (up to MaxHold), and each confirmed down after the first within
//     DampDecay keeps the switch's session down for a hold-down that doubles
//     from DampBase (up to DampMax) once BFD is back: a flapping switch is
//     dampened, as switch vendors' BFD dampening does.
//
// On a client (a switch) the same settings confirm a BFD down towards a
// reflector before the switch drops it (onReflectorBFD): only an answer
// to the echo probe holds the drop, for Hold; there is no dampening.
type BFDConfirm struct {
	// Disabled: every BFD down shuts the session at once and BFD back
	// enables it at once (the behaviour before confirmation and
	// dampening).
	Disabled bool
	// Hold is how long a switch whose session still stands has to get BFD
	// back (default: the BFD session's detection time, so a powered-off
	// switch is declared gone after twice the detection time).
	Hold time.Duration
	// MaxHold caps Hold as it doubles (default 8 × the detection time).
	MaxHold time.Duration
	// NoProbe: a held BFD down waits out its hold; no echo request asks
	// the switch's kernel whether the box is there.
	NoProbe bool
	// ProbeTimeout is how long the echo probe of a held BFD down waits for
	// an answer (default a tenth of the detection time, within 5–50 ms).
	ProbeTimeout time.Duration
	// NoDampen: a switch BFD finds again is enabled at once however often
	// it flapped.
	NoDampen bool
	// DampBase, DampMax: the re-enable hold-down of a switch that flaps
	// (defaults 1 s and 60 s); DampDecay: the quiet time after which a
	// switch's flaps are forgotten (default 5 min).
	DampBase, DampMax, DampDecay time.Duration

	// probe stands in for echoprobe.Probe in this package's tests.
	probe func(context.Context, echoprobe.Options) (echoprobe.Result, error)
}

func (c BFDConfirm) withDefaults() BFDConfirm {
	if c.probe == nil {
		c.probe = echoprobe.Probe
	}
	if c.DampBase <= 0 {
		c.DampBase = time.Second
	}
	if c.DampMax <= 0 {
		c.DampMax = time.Minute
	}
	if c.DampDecay <= 0 {
		c.DampDecay = 5 * time.Minute
	}
	return c
}

// hold is how long a BFD down of a switch with unconfirmed recent downs
// waits, for a session whose detection time is detect.
func (c BFDConfirm) hold(detect time.Duration, unconfirmed int) time.Duration {
	base, max := c.Hold, c.MaxHold
	if base <= 0 {
		base = detect
	}
	if max <= 0 {
		max = 8 * detect
	}
	return doubled(base, maxDur(max, base), unconfirmed)
}

// doubled is base doubled n times, capped at max.
func doubled(base, max time.Duration, n int) time.Duration {
	h := base
	for i := 0; i < n && h < max; i++ {
		h *= 2
	}
	return min(h, max)
}

// probeTimeout is how long a probe of a switch whose BFD session has
// detection time detect waits for an answer.
func (c BFDConfirm) probeTimeout(detect time.Duration) time.Duration {
	if c.ProbeTimeout > 0 {
		return c.ProbeTimeout
	}
	return min(max(detect/10, 5*time.Millisecond), 50*time.Millisecond)
}

// holdDown is how long a switch confirmed down for the n-th time within
// the decay window stays down once BFD is back (0 for the first).
func (c BFDConfirm) holdDown(n int) time.Duration {
	if n <= 1 || c.Disabled || c.NoDampen {
		return 0
	}
	return doubled(c.DampBase, c.DampMax, n-2)
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// flaps is a switch's recent BFD downs.
type flaps struct {
	unconfirmed, confirmed int
	last                   time.Time
}

// confirmState is the confirmation's state: downs waiting for their
// confirmation, switches waiting out a hold-down, and each switch's recent
// flaps. BFD changes (onBFD) and the goroutine that watches BFD (watchBFD,
// whose timer runs the holds out) share it under mu; wake tells the
// goroutine that the next deadline may have moved.
type confirmState struct {
	mu      sync.Mutex
	wake    chan struct{}
	cfg     BFDConfirm
	pending map[netip.Addr]pendingDown
	// enable are switches BFD found again whose session waits for its
	// hold-down to end, with when it ends.
	enable map[netip.Addr]time.Time
	flaps  map[netip.Addr]flaps
	// answers holds the switches whose kernel answered the echo probe made
	// when their BFD came up: only their silence is evidence.
	answers map[netip.Addr]bool
	// probes carries the probes onBFD asks for to watchBFD, which starts
	// them; probed carries their results back to it.
	probes chan probeRequest
	probed chan probeResult
}

// probeRequest asks for an echo probe of a switch: when its BFD came up
// (down is zero), or for the pending down it may confirm. On a reflector
// with other switches, a down's probe also asks a control: another switch
// whose BFD is up and whose kernel answered before. Only when the control
// answers does the suspect's silence say the suspect is gone rather than
// the reflector itself cut off (its own uplink down: every switch silent
// at once).
type probeRequest struct {
	n       Neighbor
	timeout time.Duration
	down    pendingDown
	// control is the witness of the reflector's own reachability
	// (hasControl false: none was asked).
	control    Neighbor
	hasControl bool
}

// probeResult is what a probe found; controlAnswered says the control
// (if asked) answered.
type probeResult struct {
	probeRequest
	result          echoprobe.Result
	err             error
	controlAnswered bool
}

// pendingDown is a BFD down waiting for its confirmation.
type pendingDown struct {
	n     Neighbor
	diag  string
	hold  time.Duration
	until time.Time
}

func newConfirmState(cfg BFDConfirm) *confirmState {
	return &confirmState{cfg: cfg.withDefaults(), wake: make(chan struct{}, 1), pending: map[netip.Addr]pendingDown{},
		enable: map[netip.Addr]time.Time{}, flaps: map[netip.Addr]flaps{}, answers: map[netip.Addr]bool{},
		probes: make(chan probeRequest, probeQueue), probed: make(chan probeResult, probeQueue)}
}

// probeQueue bounds the probes waiting to start or to be looked at; a
// request that finds the queue full is dropped (the down waits its hold).
const probeQueue = 64

// requestProbe queues a probe for watchBFD; c.mu is held. It reports
// whether the request was queued.
func (c *confirmState) requestProbe(r probeRequest) bool {
	if c.cfg.Disabled || c.cfg.NoProbe {
		return false
	}
	select {
	case c.probes <- r:
		return true
	default:
		return false
	}
}

// recent returns a's flaps, forgotten after a quiet DampDecay.
func (s *confirmState) recent(a netip.Addr, now time.Time) flaps {
	f := s.flaps[a]
	if now.Sub(f.last) > s.cfg.DampDecay {
		f = flaps{}
	}
	return f
}

// down counts a down of a, confirmed or not, and returns a's flaps.
func (s *confirmState) down(a netip.Addr, confirmed bool, now time.Time) flaps {
	f := s.recent(a, now)
	if confirmed {
		f.confirmed++
	} else {
		f.unconfirmed++
	}
	f.last = now
	s.flaps[a] = f
	return f
}

// poke wakes watchBFD to look at the deadlines again.
func (s *confirmState) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next is the earliest time a pending down or a hold-down ends.
func (s *confirmState) next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	for _, p := range s.pending {
		if at.IsZero() || p.until.Before(at) {
			at = p.until
		}
	}
	for _, t := range s.enable {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero()
}
