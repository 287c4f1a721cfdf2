package l2proto

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/internal/dueheap"
)

// Notifier defaults.
//
// Pacing: 100 frames/s with a burst of 10 lets at most 60 frames leave in
// any 500 ms, a quarter of the ceiling NewNotifier enforces (FrameCeiling).
//
// Retransmission: the timeout of each host adapts to its measured ACK round
// trip as TCP's does (RFC 6298), between MinRTO and MaxRTO, and doubles per
// retransmission. The floor is RFC 6298's 1 s: a busy nvme-snsd host ACKs
// after up to 480 ms (p99, once 1.6 s), and a lower floor turns that tail
// into duplicate connect tasks, while a lost notification is rare (pool and
// flood guard are kept clear) and then waits ~10 s anyway. From the floor,
// 8 sends span 1+2+4+5+5+5+5 = 27 s, longer than two of nvme-snsd's
// flood-guard episodes (~10.5 s each).
//
// Window: nvme-snsd queues at most 1,000 notifications and drops the rest
// without an ACK; 256 unacknowledged notifications per host address leave
// room for retransmitted copies and for a second switch or address.
const (
	DefaultRate        = 100
	DefaultBurst       = 10
	DefaultWindow      = 256
	DefaultInitialRTO  = time.Second // before the first RTT sample (RFC 6298 §2.1)
	DefaultMinRTO      = time.Second // RFC 6298 §2.4
	DefaultMaxRTO      = 5 * time.Second
	DefaultMaxAttempts = 8
	DefaultMaxPending  = 1 << 16
	DefaultMTU         = 1500

	// MaxWindow is the largest Window accepted: half of nvme-snsd's
	// 1,000-notification message pool.
	MaxWindow = 500
	// FloodGuardFrames is nvme-snsd's flood guard: this many frames within
	// FloodGuardPeriod make it drop every frame for about 10.5 s.
	FloodGuardFrames = 500
	FloodGuardPeriod = 500 * time.Millisecond
	// FrameCeiling is the most frames a notifier's pacing may let out in
	// any FloodGuardPeriod: half of the flood guard, so that a host stays
	// well clear of it even with other traffic on the port.
	FrameCeiling = FloodGuardFrames / 2
	// MaxMTU is the largest port MTU accepted. Whatever the MTU, frames are
	// packed to at most MaxFrameLen bytes: nvme-snsd receives into a
	// 1514-byte buffer and drops longer frames.
	MaxMTU = 9216

	clockGranularity = time.Millisecond // G in RFC 6298
	maxIdleHosts     = 4096             // RTT estimates kept for hosts with nothing in flight
	idleWait         = time.Hour
)

// Notifier errors reported in Result.Err or returned by Notify.
var (
	ErrGaveUp     = errors.New("no ACK after the last retransmission")
	ErrSuperseded = errors.New("superseded by a newer notification for the same host, target and port")
	ErrQueueFull  = errors.New("notifier queue full")
	ErrStopped    = errors.New("notifier stopped")
)

// NotifierConfig configures a Notifier for one switch port. Zero fields take
// the defaults above.
type NotifierConfig struct {
	Link Link
	// LegacyV0 sends header version 0 (1-byte state and reason) for hosts
	// running nvme-snsd's older develop branch; the default is version 1.
	LegacyV0 bool
	// Rate (frames per second) and Burst (frames that may leave back to
	// back) pace the port. Burst + Rate/2 must not exceed FrameCeiling.
	Rate, Burst int
	// Window is the most notifications per host address that are sent and
	// not yet ACKed; later ones wait (≤ MaxWindow).
	Window int
	// InitialRTO is the retransmission timeout of a host before its first
	// RTT sample; MinRTO and MaxRTO bound the adaptive timeout. Unset,
	// MinRTO is the smaller of DefaultMinRTO and InitialRTO, and MaxRTO the
	// larger of DefaultMaxRTO and InitialRTO.
	InitialRTO, MinRTO, MaxRTO time.Duration
	MaxAttempts                int // sends (first one included) before giving up
	MaxPending                 int // notifications queued or in flight at most
	// MTU is the port's MTU. Frames carry at most min(MTU, 1500) payload
	// bytes, since nvme-snsd drops frames longer than 1514 bytes; a jumbo
	// port works, with standard-size frames.
	MTU int
	// OnResult, if set, is called once per notification with its outcome:
	// delivered (Err nil), ErrGaveUp, ErrSuperseded or ErrStopped. It is
	// called without locks held, from the goroutine of Run, Ack or Notify,
	// and must not block for long.
	OnResult func(Result)
	Clock    Clock // nil: the system clock
	Logger   *slog.Logger
}

// Result is the outcome of one notification.
type Result struct {
	Notification Notification
	Attempts     int
	Latency      time.Duration // from Notify to the ACK (delivered only)
	Err          error
}

// NotifierStats are counters since the notifier was made. Sent counts
// every notification handed to the link, first sends and retransmissions
// alike; Retransmits the sends after the first; SendFailed the
// notifications in frames the link refused (ENETDOWN on a port that went
// down): each is sent again on its retransmission timer, as if the frame
// had been lost on the wire, and that send counts as a retransmission.
type NotifierStats struct {
	Frames, Sent, Retransmits, Delivered, GaveUp, Superseded, StaleAcks uint64
	SendFailed                                                          uint64
	// RTTSamples counts ACKs used to estimate the round trip (Karn's rule:
	// only notifications sent once).
	RTTSamples uint64
}

// supersedeKey identifies a notification that a newer one replaces.
type supersedeKey struct {
	host, target netip.Addr
	port         uint16
}

type pending struct {
	n         Notification
	host      *hostState
	queued    time.Time // Notify
	firstSent time.Time
	due       time.Time
	rto       time.Duration // timeout of the latest send
	attempts  int
	index     int           // in the due heap (inside the window), or -1
	elem      *list.Element // in host.waiting (beyond the window), or nil
}

// hostState is the window and the RTT estimate of one host address.
type hostState struct {
	addr     netip.Addr
	inflight int       // notifications inside the window (in the due heap)
	waiting  list.List // *pending beyond the window, oldest first
	srtt     time.Duration
	rttvar   time.Duration
	sampled  bool
	rto      time.Duration
	// timed is the notification whose round trip is being measured: one
	// at a time, so that the estimate gets about one sample per round trip
	// as TCP's does (RFC 6298 §3), however many notifications are in
	// flight. Timing many at once feeds near-identical samples and
	// collapses RTTVAR.
	timed *pending
}

// Notifier delivers notifications on one port reliably: it numbers them,
// keeps at most Window of them unacknowledged per host, packs the due ones
// into frames, paces frames, retransmits with an adaptive, backed-off timeout
// until the matching ACK arrives (fed in through Ack), and reports each
// outcome. A newer notification for the same (host, target, port) replaces
// one still queued or in flight.
type Notifier struct {
	cfg     NotifierConfig
	version uint8
	payload int // bytes per frame after the Ethernet header
	clock   Clock
	log     *slog.Logger
	pace    *pacer // used by the Run goroutine only

	mu      sync.Mutex
	seq     uint32
	byAck   map[AckKey]*pending
	byKey   map[supersedeKey]*pending
	hosts   map[netip.Addr]*hostState
	due     dueheap.Heap[*pending]
	wake    chan struct{}
	stopped bool

	// Test hooks: fixedRTO disables RTT estimation and host backoff (the
	// notifier before RFC 6298); onSend sees every frame with its send time.
	fixedRTO bool
	onSend   func(now time.Time, frame []byte)

	frames, sent, retrans, delivered, gaveUp, superseded, stale, samples, sendFailed atomic.Uint64
}

// NewNotifier validates cfg and returns a notifier; call Run to start it.
func NewNotifier(cfg NotifierConfig) (*Notifier, error) {
	if cfg.Link == nil {
		return nil, errors.New("l2proto: notifier needs a link")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.Rate, DefaultRate)
	def(&cfg.Burst, DefaultBurst)
	def(&cfg.Window, DefaultWindow)
	def(&cfg.MaxAttempts, DefaultMaxAttempts)
	def(&cfg.MaxPending, DefaultMaxPending)
	def(&cfg.MTU, DefaultMTU)
	defDur(&cfg.InitialRTO, DefaultInitialRTO)
	defDur(&cfg.MinRTO, min(DefaultMinRTO, cfg.InitialRTO))
	defDur(&cfg.MaxRTO, max(DefaultMaxRTO, cfg.InitialRTO))
	if err := checkNotifierConfig(&cfg); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	version := uint8(Version1)
	if cfg.LegacyV0 {
		version = Version0
	}
	return &Notifier{
		cfg:     cfg,
		version: version,
		payload: min(cfg.MTU, MaxFrameLen-ethHeaderLen),
		clock:   cfg.Clock,
		log:     log.With("port", cfg.Link.Name()),
		pace:    newPacer(cfg.Rate, cfg.Burst, cfg.Clock.Now()),
		// A random first sequence number keeps ACKs meant for an earlier
		// instance on this port from matching.
		seq:   rand.Uint32(),
		byAck: make(map[AckKey]*pending),
		byKey: make(map[supersedeKey]*pending),
		hosts: make(map[netip.Addr]*hostState),
		due:   dueheap.Heap[*pending]{Moved: func(p *pending, i int) { p.index = i }},
		wake:  make(chan struct{}, 1),
	}, nil
}

func checkNotifierConfig(cfg *NotifierConfig) error {
	switch {
	case cfg.Rate < 0 || cfg.Burst < 0 || cfg.Window < 0 || cfg.MaxAttempts < 0 || cfg.MaxPending < 0 ||
		cfg.InitialRTO < 0 || cfg.MinRTO < 0 || cfg.MaxRTO < 0:
		return errors.New("l2proto: notifier limits must not be negative")
	case cfg.Window > MaxWindow:
		return fmt.Errorf("l2proto: window of %d notifications per host above the maximum %d (nvme-snsd's message pool holds 1000 and drops the rest without an ACK)",
			cfg.Window, MaxWindow)
	case cfg.MTU < 128 || cfg.MTU > MaxMTU:
		return fmt.Errorf("l2proto: MTU %d out of range 128..%d", cfg.MTU, MaxMTU)
	case cfg.MinRTO > cfg.InitialRTO || cfg.InitialRTO > cfg.MaxRTO:
		return fmt.Errorf("l2proto: RTOs must satisfy min %s ≤ initial %s ≤ max %s", cfg.MinRTO, cfg.InitialRTO, cfg.MaxRTO)
	}
	if peak := maxFramesPerPeriod(cfg.Rate, cfg.Burst); peak > FrameCeiling {
		return fmt.Errorf("l2proto: rate %d frames/s with burst %d lets up to %d frames out in %s; the ceiling is %d (half of nvme-snsd's flood guard of %d frames per %s)",
			cfg.Rate, cfg.Burst, peak, FloodGuardPeriod, FrameCeiling, FloodGuardFrames, FloodGuardPeriod)
	}
	return nil
}

// maxFramesPerPeriod bounds the frames a token bucket lets out in any
// FloodGuardPeriod: the saved-up burst plus what accrues meanwhile.
func maxFramesPerPeriod(rate, burst int) int {
	perPeriod := int64(FloodGuardPeriod / time.Millisecond)
	return burst + int((int64(rate)*perPeriod+999)/1000)
}

// Notify queues n for delivery and returns the sequence number it carries.
// n.Seq is ignored. A notification still queued or in flight for the same
// host, target and port is dropped with ErrSuperseded.
func (nt *Notifier) Notify(n Notification) (uint32, error) {
	if _, _, err := addrPair(n.Target, n.Host); err != nil {
		return 0, err
	}
	if err := checkNotifyNQN(n.NQN); err != nil {
		return 0, err
	}
	now := nt.clock.Now()
	nt.mu.Lock()
	if nt.stopped {
		nt.mu.Unlock()
		return 0, ErrStopped
	}
	key := supersedeKey{n.Host, n.Target, n.Port}
	old := nt.byKey[key]
	if old != nil {
		nt.removeLocked(old, now)
	} else if len(nt.byKey) >= nt.cfg.MaxPending {
		nt.mu.Unlock()
		return 0, ErrQueueFull
	}
	nt.seq++
	n.Seq = nt.seq
	h := nt.hosts[n.Host]
	if h == nil {
		h = &hostState{addr: n.Host, rto: nt.cfg.InitialRTO}
		nt.hosts[n.Host] = h
	}
	p := &pending{n: n, host: h, queued: now, index: -1}
	nt.byAck[n.Key()] = p
	nt.byKey[key] = p
	if h.inflight < nt.cfg.Window {
		nt.admitLocked(p, now)
	} else {
		p.elem = h.waiting.PushBack(p)
	}
	nt.mu.Unlock()
	if old != nil {
		nt.superseded.Add(1)
		nt.report(Result{Notification: old.n, Attempts: old.attempts, Err: ErrSuperseded})
	}
	nt.poke()
	return n.Seq, nil
}

// Ack feeds ACKs received on the port. Each one that matches a notification
// in flight completes it; others are counted as stale (late duplicates or
// ACKs of superseded notifications).
func (nt *Notifier) Ack(acks ...Ack) {
	now := nt.clock.Now()
	var done []Result
	nt.mu.Lock()
	for _, a := range acks {
		p := nt.byAck[a.Key()]
		if p == nil || p.attempts == 0 {
			nt.stale.Add(1)
			continue
		}
		if p.host.timed == p {
			// The timed notification was sent once (Karn's rule: a
			// retransmitted one stops being timed): its round trip is
			// unambiguous.
			nt.sampleLocked(p.host, now.Sub(p.firstSent))
		}
		nt.removeLocked(p, now)
		done = append(done, Result{Notification: p.n, Attempts: p.attempts, Latency: now.Sub(p.queued)})
	}
	nt.mu.Unlock()
	if len(done) == 0 {
		return
	}
	nt.delivered.Add(uint64(len(done)))
	nt.poke() // the window has room again
	for _, r := range done {
		nt.report(r)
	}
}

// sampleLocked updates a host's RTT estimate and timeout (RFC 6298 §2).
func (nt *Notifier) sampleLocked(h *hostState, r time.Duration) {
	if nt.fixedRTO {
		return
	}
	nt.samples.Add(1)
	if !h.sampled {
		h.srtt, h.rttvar, h.sampled = r, r/2, true
	} else {
		d := h.srtt - r
		if d < 0 {
			d = -d
		}
		h.rttvar = (3*h.rttvar + d) / 4
		h.srtt = (7*h.srtt + r) / 8
	}
	h.rto = min(max(h.srtt+max(clockGranularity, 4*h.rttvar), nt.cfg.MinRTO), nt.cfg.MaxRTO)
}

// Pending returns the number of notifications queued or in flight.
func (nt *Notifier) Pending() int {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return len(nt.byKey)
}

// Stats returns the counters.
func (nt *Notifier) Stats() NotifierStats {
	return NotifierStats{Frames: nt.frames.Load(), Sent: nt.sent.Load(), Retransmits: nt.retrans.Load(),
		Delivered: nt.delivered.Load(), GaveUp: nt.gaveUp.Load(), Superseded: nt.superseded.Load(),
		StaleAcks: nt.stale.Load(), RTTSamples: nt.samples.Load(), SendFailed: nt.sendFailed.Load()}
}

// hostRTO returns the current retransmission timeout for host.
func (nt *Notifier) hostRTO(host netip.Addr) time.Duration {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if h := nt.hosts[host]; h != nil {
		return h.rto
	}
	return nt.cfg.InitialRTO
}

// Run sends and retransmits until ctx ends; then every notification still
// queued or in flight is reported with ErrStopped and Notify refuses new
// ones. Run must be called once.
func (nt *Notifier) Run(ctx context.Context) error {
	timer := nt.clock.NewTimer(idleWait)
	defer timer.Stop()
	for {
		timer.Reset(nt.poll(nt.clock.Now()))
		select {
		case <-ctx.Done():
			nt.stop()
			return ctx.Err()
		case <-nt.wake:
		case <-timer.C():
		}
	}
}

// poll sends every frame that is due and that pacing allows at now, gives up
// on notifications whose last timeout has passed, and returns how long to
// wait before there is more to do.
func (nt *Notifier) poll(now time.Time) time.Duration {
	for {
		paceWait := nt.pace.delay(now)
		batch, failed, next := nt.collect(now, paceWait == 0)
		nt.gaveUp.Add(uint64(len(failed)))
		for _, r := range failed {
			nt.report(r)
		}
		if len(batch) > 0 {
			nt.pace.take(now)
			if err := nt.send(now, batch); err != nil {
				nt.log.Warn("sending notifications failed", "err", err)
			}
			continue
		}
		switch {
		case next > 0:
			return next
		case paceWait > 0:
			return paceWait
		default:
			return clockGranularity // not reached: collect sends or gives up what is due
		}
	}
}

// collect takes the due notifications for one frame (if canSend) and those
// to give up on, and returns how long until the next one is due (≤ 0 if one
// is due now).
func (nt *Notifier) collect(now time.Time, canSend bool) (batch []Notification, failed []Result, next time.Duration) {
	size := msgHeaderLen
	nt.mu.Lock()
	defer nt.mu.Unlock()
	for nt.due.Len() > 0 && !nt.due.Peek().due.After(now) {
		p := nt.due.Peek()
		if p.attempts >= nt.cfg.MaxAttempts {
			nt.removeLocked(p, now)
			failed = append(failed, Result{Notification: p.n, Attempts: p.attempts, Err: ErrGaveUp})
			continue
		}
		if !canSend {
			break
		}
		l := notificationLen(&p.n, nt.version)
		if len(batch) > 0 && size+l > nt.payload {
			break
		}
		size += l
		batch = append(batch, p.n)
		h := p.host
		if p.attempts == 0 {
			p.firstSent, p.rto = now, h.rto
			if h.timed == nil && !nt.fixedRTO {
				h.timed = p
			}
		} else {
			if h.timed == p {
				h.timed = nil // Karn's rule
			}
			nt.retrans.Add(1)
			p.rto = min(2*p.rto, nt.cfg.MaxRTO)
			if !nt.fixedRTO {
				// Back off (RFC 6298 §5.5): new sends to this host wait
				// as long, until a valid sample resets the timeout.
				h.rto = max(h.rto, p.rto)
			}
		}
		p.attempts++
		p.due = now.Add(p.rto)
		nt.due.Fix(p.index)
	}
	next = idleWait
	if nt.due.Len() > 0 {
		next = nt.due.Peek().due.Sub(now)
	}
	return batch, failed, next
}

func (nt *Notifier) send(now time.Time, batch []Notification) error {
	frame, err := MessageFrame(nt.cfg.Link.HardwareAddr(), &Message{Version: nt.version, Notifications: batch})
	if err != nil {
		return fmt.Errorf("encode %d notifications: %w", len(batch), err)
	}
	nt.frames.Add(1)
	nt.sent.Add(uint64(len(batch)))
	if nt.onSend != nil {
		nt.onSend(now, frame)
	}
	if err := nt.cfg.Link.WriteFrame(frame); err != nil {
		// Lost like a frame on the wire: the retransmission timer covers it.
		nt.sendFailed.Add(uint64(len(batch)))
		return fmt.Errorf("write %d notifications: %w", len(batch), err)
	}
	return nil
}

func (nt *Notifier) stop() {
	nt.mu.Lock()
	nt.stopped = true
	var left []Result
	for _, p := range nt.byKey {
		left = append(left, Result{Notification: p.n, Attempts: p.attempts, Err: ErrStopped})
	}
	clear(nt.byKey)
	clear(nt.byAck)
	clear(nt.hosts)
	nt.due.Clear()
	nt.mu.Unlock()
	for _, r := range left {
		nt.report(r)
	}
}

// admitLocked puts p inside its host's window: due for its first send now.
func (nt *Notifier) admitLocked(p *pending, now time.Time) {
	p.host.inflight++
	p.due = now
	nt.due.Push(p)
}

// removeLocked forgets p and lets the next waiting notification of its host
// into the window.
func (nt *Notifier) removeLocked(p *pending, now time.Time) {
	delete(nt.byAck, p.n.Key())
	delete(nt.byKey, supersedeKey{p.n.Host, p.n.Target, p.n.Port})
	h := p.host
	if h.timed == p {
		h.timed = nil
	}
	switch {
	case p.index >= 0:
		nt.due.Remove(p.index)
		h.inflight--
		for h.inflight < nt.cfg.Window && h.waiting.Len() > 0 {
			w := h.waiting.Remove(h.waiting.Front()).(*pending)
			w.elem = nil
			nt.admitLocked(w, now)
		}
	case p.elem != nil:
		h.waiting.Remove(p.elem)
		p.elem = nil
	}
	if h.inflight == 0 && h.waiting.Len() == 0 && len(nt.hosts) > maxIdleHosts {
		delete(nt.hosts, h.addr)
	}
}

func (nt *Notifier) report(r Result) {
	if nt.cfg.OnResult != nil {
		nt.cfg.OnResult(r)
	}
}

func (nt *Notifier) poke() {
	select {
	case nt.wake <- struct{}{}:
	default:
	}
}

// Before orders the notifications inside the windows by due time, then
// sequence (dueheap.Entry).
func (p *pending) Before(o *pending) bool {
	if p.due.Equal(o.due) {
		return p.n.Seq-o.n.Seq > 1<<31 // p before o, modulo 2^32
	}
	return p.due.Before(o.due)
}
