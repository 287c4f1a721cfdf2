package l2proto

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Notifier defaults. With 100 frames/s and a burst of 10, at most 60 frames
// leave in any 500 ms: far below nvme-snsd's flood guard (500 in 500 ms drops
// everything for ~10 s). The retransmission schedule (0.1 s doubling to
// 3.2 s, 8 sends) spans ~12.7 s, so a notification also outlives a flood-guard
// episode caused by someone else.
const (
	DefaultRate        = 100
	DefaultBurst       = 10
	DefaultInitialRTO  = 100 * time.Millisecond
	DefaultMaxRTO      = 3200 * time.Millisecond
	DefaultMaxAttempts = 8
	DefaultMaxPending  = 1 << 16
	DefaultMTU         = 1500
	// floodGuardFrames is nvme-snsd's threshold per 500 ms window.
	floodGuardFrames = 500
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
	LegacyV0    bool
	Rate        int           // frames per second
	Burst       int           // frames that may leave back to back
	InitialRTO  time.Duration // first retransmission timeout
	MaxRTO      time.Duration // cap of the doubling timeout
	MaxAttempts int           // sends (first one included) before giving up
	MaxPending  int           // notifications in flight at most
	MTU         int           // payload bytes per frame
	// OnResult, if set, is called once per notification with its outcome:
	// delivered (Err nil), ErrGaveUp, ErrSuperseded or ErrStopped. It is
	// called without locks held, from the Run or Ack goroutine, and must not
	// block for long.
	OnResult func(Result)
	Logger   *slog.Logger
}

// Result is the outcome of one notification.
type Result struct {
	Notification Notification
	Attempts     int
	Latency      time.Duration // from Notify to the ACK (delivered only)
	Err          error
}

// NotifierStats are counters since the notifier was made.
type NotifierStats struct {
	Frames, Sent, Retransmits, Delivered, GaveUp, Superseded, StaleAcks uint64
}

// supersedeKey identifies a notification that a newer one replaces.
type supersedeKey struct {
	host, target netip.Addr
	port         uint16
}

type pending struct {
	n        Notification
	queued   time.Time
	due      time.Time
	rto      time.Duration
	attempts int
	index    int // in the due heap
}

// Notifier delivers notifications on one port reliably: it numbers them,
// packs the due ones into frames up to the MTU, paces frames, retransmits
// with bounded exponential backoff until the matching ACK arrives (fed in
// through Ack), and reports each outcome. A newer notification for the same
// (host, target, port) replaces one still in flight.
type Notifier struct {
	cfg     NotifierConfig
	version uint8
	log     *slog.Logger

	mu      sync.Mutex
	seq     uint32
	byAck   map[AckKey]*pending
	byKey   map[supersedeKey]*pending
	due     dueHeap
	wake    chan struct{}
	stopped bool

	frames, sent, retrans, delivered, gaveUp, superseded, stale atomic.Uint64
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
	def(&cfg.MaxAttempts, DefaultMaxAttempts)
	def(&cfg.MaxPending, DefaultMaxPending)
	def(&cfg.MTU, DefaultMTU)
	defDur(&cfg.InitialRTO, DefaultInitialRTO)
	defDur(&cfg.MaxRTO, DefaultMaxRTO)
	switch {
	case cfg.Rate < 0 || cfg.Burst < 0 || cfg.MaxAttempts < 0 || cfg.MaxPending < 0:
		return nil, errors.New("l2proto: notifier limits must not be negative")
	case cfg.Rate/2+cfg.Burst >= floodGuardFrames:
		return nil, fmt.Errorf("l2proto: rate %d/s with burst %d can reach nvme-snsd's flood guard (%d frames in 500 ms)", cfg.Rate, cfg.Burst, floodGuardFrames)
	case cfg.MTU < 128 || cfg.MTU > 9000:
		return nil, fmt.Errorf("l2proto: MTU %d out of range 128..9000", cfg.MTU)
	case cfg.MaxRTO < cfg.InitialRTO:
		return nil, fmt.Errorf("l2proto: max RTO %s below initial RTO %s", cfg.MaxRTO, cfg.InitialRTO)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	version := uint8(Version1)
	if cfg.LegacyV0 {
		version = Version0
	}
	return &Notifier{
		cfg:     cfg,
		version: version,
		// A random first sequence number keeps ACKs meant for an earlier
		// instance on this port from matching.
		seq:   rand.Uint32(),
		log:   log.With("port", cfg.Link.Name()),
		byAck: make(map[AckKey]*pending),
		byKey: make(map[supersedeKey]*pending),
		wake:  make(chan struct{}, 1),
	}, nil
}

// Notify queues n for delivery and returns the sequence number it carries.
// n.Seq is ignored. A notification still in flight for the same host,
// target and port is dropped with ErrSuperseded.
func (nt *Notifier) Notify(n Notification) (uint32, error) {
	if _, _, err := addrPair(n.Target, n.Host); err != nil {
		return 0, err
	}
	if infoFixedLen+len(n.NQN) > maxInfoLen {
		return 0, fmt.Errorf("%w: NQN of %d bytes", ErrValue, len(n.NQN))
	}
	now := time.Now()
	nt.mu.Lock()
	if nt.stopped {
		nt.mu.Unlock()
		return 0, ErrStopped
	}
	key := supersedeKey{n.Host, n.Target, n.Port}
	old := nt.byKey[key]
	if old != nil {
		nt.removeLocked(old)
	} else if len(nt.byKey) >= nt.cfg.MaxPending {
		nt.mu.Unlock()
		return 0, ErrQueueFull
	}
	nt.seq++
	n.Seq = nt.seq
	p := &pending{n: n, queued: now, due: now, rto: nt.cfg.InitialRTO}
	nt.byAck[n.Key()] = p
	nt.byKey[key] = p
	heap.Push(&nt.due, p)
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
	now := time.Now()
	var done []Result
	nt.mu.Lock()
	for _, a := range acks {
		p := nt.byAck[a.Key()]
		if p == nil {
			nt.stale.Add(1)
			continue
		}
		nt.removeLocked(p)
		done = append(done, Result{Notification: p.n, Attempts: p.attempts, Latency: now.Sub(p.queued)})
	}
	nt.mu.Unlock()
	nt.delivered.Add(uint64(len(done)))
	for _, r := range done {
		nt.report(r)
	}
}

// Pending returns the number of notifications in flight.
func (nt *Notifier) Pending() int {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return len(nt.byKey)
}

// Stats returns the counters.
func (nt *Notifier) Stats() NotifierStats {
	return NotifierStats{Frames: nt.frames.Load(), Sent: nt.sent.Load(), Retransmits: nt.retrans.Load(),
		Delivered: nt.delivered.Load(), GaveUp: nt.gaveUp.Load(), Superseded: nt.superseded.Load(), StaleAcks: nt.stale.Load()}
}

// Run sends and retransmits until ctx ends; then every notification still in
// flight is reported with ErrStopped and Notify refuses new ones.
func (nt *Notifier) Run(ctx context.Context) error {
	pace := newPacer(nt.cfg.Rate, nt.cfg.Burst, time.Now())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		nt.mu.Lock()
		wait := time.Hour
		if len(nt.due) > 0 {
			wait = nt.due[0].due.Sub(now)
		}
		nt.mu.Unlock()
		if wait <= 0 {
			if d := pace.delay(now); d > 0 {
				wait = d
			} else {
				pace.take(now)
				if err := nt.sendDue(now); err != nil && ctx.Err() == nil {
					nt.log.Warn("sending notifications failed", "err", err)
				}
				continue
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			nt.stop()
			return ctx.Err()
		case <-nt.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// sendDue packs the due notifications into one frame and sends it, and gives
// up on those whose last timeout has passed.
func (nt *Notifier) sendDue(now time.Time) error {
	var batch []Notification
	var failed []Result
	size := msgHeaderLen
	nt.mu.Lock()
	for len(nt.due) > 0 && !nt.due[0].due.After(now) {
		p := nt.due[0]
		if p.attempts >= nt.cfg.MaxAttempts {
			nt.removeLocked(p)
			failed = append(failed, Result{Notification: p.n, Attempts: p.attempts, Err: ErrGaveUp})
			continue
		}
		l := notificationLen(&p.n, nt.version)
		if len(batch) > 0 && size+l > nt.cfg.MTU {
			break
		}
		size += l
		batch = append(batch, p.n)
		if p.attempts > 0 {
			nt.retrans.Add(1)
		}
		p.attempts++
		p.due = now.Add(p.rto)
		p.rto = min(2*p.rto, nt.cfg.MaxRTO)
		heap.Fix(&nt.due, p.index)
	}
	nt.mu.Unlock()
	nt.gaveUp.Add(uint64(len(failed)))
	for _, r := range failed {
		nt.report(r)
	}
	if len(batch) == 0 {
		return nil
	}
	frame, err := MessageFrame(nt.cfg.Link.HardwareAddr(), &Message{Version: nt.version, Notifications: batch})
	if err != nil {
		return fmt.Errorf("encode %d notifications: %w", len(batch), err)
	}
	nt.frames.Add(1)
	nt.sent.Add(uint64(len(batch)))
	if err := nt.cfg.Link.WriteFrame(frame); err != nil {
		// Lost like a frame on the wire: the retransmission timer covers it.
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
	nt.due = nil
	nt.mu.Unlock()
	for _, r := range left {
		nt.report(r)
	}
}

func (nt *Notifier) removeLocked(p *pending) {
	delete(nt.byAck, p.n.Key())
	delete(nt.byKey, supersedeKey{p.n.Host, p.n.Target, p.n.Port})
	heap.Remove(&nt.due, p.index)
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

// dueHeap orders pending notifications by due time, then sequence.
type dueHeap []*pending

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].n.Seq < h[j].n.Seq
	}
	return h[i].due.Before(h[j].due)
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *dueHeap) Push(x any) {
	p := x.(*pending)
	p.index = len(*h)
	*h = append(*h, p)
}
func (h *dueHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	p.index = -1
	return p
}
