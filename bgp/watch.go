package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/bgp/record"
)

// Watches deliver events from one goroutine per watch, fed through a
// bounded queue (Options.WatchQueue events). A consumer too slow for the
// queue is not fed a gap: the queue is dropped and, once the consumer is
// back, the watch resynchronises from the table itself — it delivers a
// withdraw for every record it had reported that is gone, then every
// current record, then the events queued since (Stats.Resyncs counts
// this). Intermediate states may be skipped; the consumer's view always
// converges to the table. A table watch also starts this way: the
// initial table is a snapshot taken after the watch was registered.

// DefaultWatchQueue is the default bound of a watch's event queue.
const DefaultWatchQueue = 1 << 14

// watchQueue is a bounded queue with an overflow mark.
type watchQueue[E any] struct {
	mu       sync.Mutex
	items    []E
	limit    int
	overflow bool
	wake     chan struct{}
}

func newWatchQueue[E any](limit int, startOverflowed bool) *watchQueue[E] {
	q := &watchQueue[E]{limit: limit, overflow: startOverflowed, wake: make(chan struct{}, 1)}
	if startOverflowed {
		q.wake <- struct{}{}
	}
	return q
}

// push queues e; it reports whether this push overflowed the queue (the
// queue is then emptied and marked until the next take).
func (q *watchQueue[E]) push(e E) (overflowed bool) {
	q.mu.Lock()
	switch {
	case q.overflow:
	case len(q.items) >= q.limit:
		q.items, q.overflow, overflowed = nil, true, true
	default:
		q.items = append(q.items, e)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return overflowed
}

// take returns the queued events and whether a resync is due.
func (q *watchQueue[E]) take() ([]E, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items, ov := q.items, q.overflow
	q.items, q.overflow = nil, false
	return items, ov
}

// recordWatch is the delivery side of one table watch.
type recordWatch struct {
	q        *watchQueue[RecordEvent]
	fn       func(RecordEvent)
	snapshot func(context.Context) ([]RecordEvent, error)
	byPeer   bool     // identify records by source and key (Adj-RIB-In)
	settle   *settler // graceful-restart withdraw hold; nil without
	// keep, if set, selects by key the records the watch reports; the
	// speaker applies it before decoding the rest.
	keep func(key []byte) bool
	log  *slog.Logger
	// delivered are the records the consumer holds, for resyncs, with the
	// neighbor each came from (for the settler; invalid once its withdraw
	// is held).
	delivered map[string]netip.Addr
}

func newRecordWatch(limit int, fn func(RecordEvent), snapshot func(context.Context) ([]RecordEvent, error),
	byPeer bool, settle *settler, log *slog.Logger) *recordWatch {
	return &recordWatch{q: newWatchQueue[RecordEvent](limit, true), fn: fn, snapshot: snapshot, byPeer: byPeer,
		settle: settle, log: log, delivered: map[string]netip.Addr{}}
}

// ident is the key, after the 16-byte source address for an Adj-RIB-In
// watch.
func (w *recordWatch) ident(ev *RecordEvent) string {
	if w.byPeer {
		src := ev.Source.As16()
		return string(src[:]) + string(ev.Key)
	}
	return string(ev.Key)
}

// run delivers until ctx ends.
func (w *recordWatch) run(ctx context.Context) {
	var timer *time.Timer
	var timerC <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.q.wake:
		case <-timerC:
		}
		items, resync := w.q.take()
		if resync {
			snap, err := w.snapshot(ctx)
			if err != nil {
				if ctx.Err() == nil {
					w.log.Error("watch ended: cannot read the table", "err", err)
				}
				return
			}
			w.resync(ctx, w.kept(snap))
		}
		for _, ev := range items {
			if ctx.Err() != nil {
				return
			}
			w.deliver(ev)
		}
		if w.settle != nil {
			for _, ev := range w.settle.due(time.Now()) {
				w.deliver(ev)
			}
			if timer != nil {
				timer.Stop()
			}
			timer, timerC = nil, nil
			if at, ok := w.settle.next(); ok {
				timer = time.NewTimer(time.Until(at))
				timerC = timer.C
			}
		}
	}
}

// wants reports whether the watch reports the record with this key.
func (w *recordWatch) wants(key []byte) bool { return w.keep == nil || w.keep(key) }

// kept filters a snapshot by keep.
func (w *recordWatch) kept(snap []RecordEvent) []RecordEvent {
	if w.keep == nil {
		return snap
	}
	out := snap[:0]
	for _, ev := range snap {
		if w.keep(ev.Key) {
			out = append(out, ev)
		}
	}
	return out
}

// typeFilter selects records by type, the first byte of their key; no
// types means every record.
func typeFilter(types []record.Type) func([]byte) bool {
	if len(types) == 0 {
		return nil
	}
	return func(key []byte) bool { return len(key) > 0 && slices.Contains(types, record.Type(key[0])) }
}

// resync brings the consumer from what it was told to the snapshot.
func (w *recordWatch) resync(ctx context.Context, snap []RecordEvent) {
	present := make(map[string]struct{}, len(snap))
	for i := range snap {
		present[w.ident(&snap[i])] = struct{}{}
	}
	var gone []RecordEvent
	for id := range w.delivered {
		if _, ok := present[id]; !ok {
			gone = append(gone, w.withdrawOf(id))
		}
	}
	for _, ev := range append(gone, snap...) {
		if ctx.Err() != nil {
			return
		}
		w.deliver(ev)
	}
}

// withdrawOf rebuilds a withdraw event from a delivered identity.
func (w *recordWatch) withdrawOf(id string) RecordEvent {
	if !w.byPeer {
		return RecordEvent{Key: []byte(id), Withdrawn: true}
	}
	src := netip.AddrFrom16([16]byte([]byte(id[:16]))).Unmap()
	return RecordEvent{Key: []byte(id[16:]), Withdrawn: true, Source: src}
}

func (w *recordWatch) deliver(ev RecordEvent) {
	id := w.ident(&ev)
	if w.settle != nil && !w.settle.pass(ev, w.delivered[id], time.Now()) {
		w.delivered[id] = netip.Addr{} // held: delivered as is when due
		return
	}
	if ev.Withdrawn {
		delete(w.delivered, id)
	} else {
		w.delivered[id] = ev.Source
	}
	w.fn(ev)
}

// settler holds back withdraws of records from a neighbor that is coming
// back or has just come back: until holdUntil says, a withdraw waits, and
// the record coming back in that time cancels it. When the time is over
// holdUntil is asked again (the neighbor may have come back meanwhile, and
// then re-learns for a while). It is used by one watch goroutine only.
type settler struct {
	// holdUntil is until when a withdraw from o is held (not after now:
	// deliver it).
	holdUntil func(o origin, now time.Time) time.Time
	held      map[string]heldWithdraw
}

// origin is the neighbor a withdrawn record was last delivered from, and
// whether graceful restart had kept it stale.
type origin struct {
	src   netip.Addr
	stale bool
}

type heldWithdraw struct {
	ev   RecordEvent
	from origin
	at   time.Time
}

func newSettler(holdUntil func(origin, time.Time) time.Time) *settler {
	return &settler{holdUntil: holdUntil, held: map[string]heldWithdraw{}}
}

// pass reports whether ev is to be delivered now; src is the neighbor the
// record was last delivered from (invalid if none, or if its withdraw was
// held before).
func (s *settler) pass(ev RecordEvent, src netip.Addr, now time.Time) bool {
	delete(s.held, string(ev.Key))
	if !ev.Withdrawn || ev.Err != nil || !src.IsValid() {
		return true
	}
	from := origin{src: src, stale: ev.Stale}
	until := s.holdUntil(from, now)
	if !until.After(now) {
		return true
	}
	s.held[string(ev.Key)] = heldWithdraw{ev: ev, from: from, at: until}
	return false
}

// due removes and returns the held withdraws whose time is over.
func (s *settler) due(now time.Time) []RecordEvent {
	var out []RecordEvent
	for k, h := range s.held {
		if now.Before(h.at) {
			continue
		}
		if until := s.holdUntil(h.from, now); until.After(now) {
			h.at = until
			s.held[k] = h
			continue
		}
		out = append(out, h.ev)
		delete(s.held, k)
	}
	return out
}

// next is the earliest time a held withdraw is due.
func (s *settler) next() (time.Time, bool) {
	var at time.Time
	for _, h := range s.held {
		if at.IsZero() || h.at.Before(at) {
			at = h.at
		}
	}
	return at, !at.IsZero()
}

// neighborWatch delivers session events; after an overflow it delivers the
// current state of every neighbor instead of the lost events.
type neighborWatch struct {
	q        *watchQueue[NeighborEvent]
	fn       func(NeighborEvent)
	snapshot func(context.Context) ([]NeighborEvent, error)
}

func (w *neighborWatch) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.q.wake:
		}
		items, resync := w.q.take()
		if resync {
			snap, err := w.snapshot(ctx)
			if err != nil {
				return
			}
			items = snap
		}
		for _, ev := range items {
			if ctx.Err() != nil {
				return
			}
			w.fn(ev)
		}
	}
}

// watchGroup ties watches to an owner's lifetime: a watch ends when its
// caller's ctx ends or the owner stops, and stop waits for every watch
// goroutine.
type watchGroup struct {
	mu      sync.Mutex
	life    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	resyncs atomic.Uint64
}

func (g *watchGroup) init() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.life == nil {
		g.life, g.cancel = context.WithCancel(context.Background())
	}
}

// context returns a context that ends with ctx or the owner.
func (g *watchGroup) context(ctx context.Context) (context.Context, context.CancelFunc) {
	g.init()
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(g.life, cancel)
	return wctx, func() { stop(); cancel() }
}

// lifetime is the owner's own context.
func (g *watchGroup) lifetime() context.Context {
	g.init()
	return g.life
}

// goWatch runs fn on its own goroutine until stop; cancel runs after it.
func (g *watchGroup) goWatch(ctx context.Context, cancel context.CancelFunc, fn func(context.Context)) {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.life.Err() != nil {
		cancel()
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer cancel()
		fn(ctx)
	}()
}

// stop ends every watch and waits for their goroutines. A watch callback
// must not call it.
func (g *watchGroup) stop() {
	g.init()
	g.mu.Lock()
	g.cancel()
	g.mu.Unlock()
	g.wg.Wait()
}
