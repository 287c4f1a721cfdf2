package bfd

import (
	"container/heap"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// engine runs the timers of every session of a Manager on one goroutine:
// a heap of deadlines (a packet due, a detection time reached) and one
// runtime timer for the earliest, instead of a goroutine and two timers per
// session. Deadlines that fall due together are handled in one wake-up: a
// packet may go up to its slack early (the jitter of RFC 5880 §6.8.7 leaves
// room for it), so 256 sessions at 100 ms wake the engine far fewer than
// 2,560 times a second. With ManagerOptions.RealTime the goroutine keeps
// one OS thread at real-time priority (SCHED_FIFO) where the system
// permits, so a CPU hog beside it does not delay the timers.
type engine struct {
	log      *slog.Logger
	mu       sync.Mutex
	h        deadlines
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	deferred atomic.Uint64 // detections put off because this process was behind
	batch    txBatch       // the engine goroutine's alone
}

// deadline is one entry of the heap: at is when it is due; a packet may
// be sent up to slack before at. gen is the session's generation of the
// entry (Session.txGen or detectGen): an entry of an older generation is
// stale and ignored.
type deadline struct {
	at    time.Time
	slack time.Duration
	s     *Session
	tx    bool
	gen   uint64
}

type deadlines []deadline

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlines) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlines) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = deadline{}
	*h = old[:len(old)-1]
	return d
}

func newEngine(log *slog.Logger) *engine {
	return &engine{log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// push queues a deadline and wakes the engine if it is now the earliest.
func (e *engine) push(d deadline) {
	e.mu.Lock()
	heap.Push(&e.h, d)
	first := e.h[0].s == d.s && e.h[0].gen == d.gen && e.h[0].tx == d.tx
	e.mu.Unlock()
	if first {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
}

// run is the engine's goroutine, until close.
func (e *engine) run(realTime bool) {
	defer close(e.done)
	if realTime {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := setRealTime(); err != nil {
			e.log.Info("BFD timers run at normal priority", "err", err)
		}
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []deadline
	for {
		now := time.Now()
		e.mu.Lock()
		for len(e.h) > 0 && !e.h[0].at.Add(-e.h[0].slack).After(now) {
			due = append(due, heap.Pop(&e.h).(deadline))
		}
		e.settleLocked()
		next := time.Hour
		if len(e.h) > 0 {
			next = e.h[0].at.Sub(now)
		}
		e.mu.Unlock()
		if len(due) > 0 {
			// The packets first, in one batch per send socket; then the
			// detections (a session whose packet waits in the batch is
			// under its ev lock until the batch is sent).
			for _, d := range due {
				if d.tx {
					d.s.onTx(now, d.gen, &e.batch)
				}
			}
			e.batch.flush()
			for i, d := range due {
				if !d.tx {
					d.s.onDetect(now, d.gen, now.Sub(d.at))
				}
				due[i] = deadline{}
			}
			due = due[:0]
			continue // the handlers queued new deadlines
		}
		t.Reset(next)
		select {
		case <-t.C:
		case <-e.wake:
			t.Stop()
		case <-e.stop:
			return
		}
	}
}

// settleLocked moves the detection entries at the top of the heap whose
// deadline a packet received since moved later (the entry is queued once
// and moved lazily, Session.handle), and drops stale ones, so the engine
// sleeps until a deadline that is really due instead of waking for each
// session's moved detection every detection time: with 256 sessions at
// 3 × 100 ms, some 850 wake-ups a second. e.mu is held; it takes the
// sessions' mu (never held while taking e.mu).
func (e *engine) settleLocked() {
	for len(e.h) > 0 && !e.h[0].tx {
		switch e.h[0].s.settleDetect(&e.h[0]) {
		case detectStale:
			heap.Pop(&e.h)
		case detectMoved:
			heap.Fix(&e.h, 0)
		default:
			return
		}
	}
}

// txBatch is the packets due in one engine wake-up, grouped by send
// socket, each group sent in one call (sendmmsg). The sessions with a
// packet in it hold their ev lock from building the packet until flush has
// sent it, so no packet they send afterwards (a Final, a state change)
// overtakes it.
type txBatch struct {
	held   []*Session
	groups []txGroup
}

type txGroup struct {
	conn sendConn
	ps   []outPacket
}

// add queues s's packet o; s.ev is held and stays held until flush.
func (b *txBatch) add(s *Session, o outPacket) {
	s.batched = true
	b.held = append(b.held, s)
	if s.conn.closed.Load() {
		return // the session's port is closed: its packets go nowhere
	}
	conn := s.conn.conn
	for i := range b.groups {
		if b.groups[i].conn == conn {
			b.groups[i].ps = append(b.groups[i].ps, o)
			return
		}
	}
	if len(b.groups) < cap(b.groups) {
		b.groups = b.groups[:len(b.groups)+1]
	} else {
		b.groups = append(b.groups, txGroup{})
	}
	g := &b.groups[len(b.groups)-1]
	g.conn, g.ps = conn, append(g.ps[:0], o)
}

// flush sends every group and releases the sessions.
func (b *txBatch) flush() {
	for i := range b.groups {
		g := &b.groups[i]
		g.conn.send(g.ps) // a lost packet is what BFD tolerates
		g.conn, g.ps = nil, g.ps[:0]
	}
	b.groups = b.groups[:0]
	for i, s := range b.held {
		s.batched = false
		s.ev.Unlock()
		b.held[i] = nil
	}
	b.held = b.held[:0]
}

// close stops the engine and waits for its goroutine; again, it only
// waits.
func (e *engine) close() {
	e.stopOnce.Do(func() { close(e.stop) })
	<-e.done
}

// setRealTime puts the calling thread at the lowest real-time priority
// (SCHED_FIFO 1): above every normal thread, below the kernel's own
// real-time work. It needs CAP_SYS_NICE (or an RLIMIT_RTPRIO above 0).
func setRealTime() error {
	return unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0)
}
