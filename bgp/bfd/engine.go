package bfd

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/dueheap"
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
	h        dueheap.Heap[deadline]
	wake     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	deferred atomic.Uint64 // detections put off because this process was behind
	batch    txBatch       // the engine goroutine's alone
}

// deadline is one entry of the heap: at is when it is due; a packet may
// be sent up to slack before at. gen is the session's generation of the
// entry (Session.sched.txGen or detectGen): an entry of an older generation is
// stale and ignored.
type deadline struct {
	at    time.Time
	slack time.Duration
	s     *Session
	tx    bool
	gen   uint64
}

// Before orders deadlines by time (dueheap.Entry).
func (d deadline) Before(o deadline) bool { return d.at.Before(o.at) }

func newEngine(log *slog.Logger) *engine {
	return &engine{log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// push queues a deadline and wakes the engine if it is now the earliest.
func (e *engine) push(d deadline) {
	e.mu.Lock()
	e.h.Push(d)
	top := e.h.Peek()
	first := top.s == d.s && top.gen == d.gen && top.tx == d.tx
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
		for e.h.Len() > 0 && !e.h.Top().at.Add(-e.h.Top().slack).After(now) {
			due = append(due, e.h.Pop())
		}
		e.settleLocked()
		next := time.Hour
		if e.h.Len() > 0 {
			next = e.h.Top().at.Sub(now)
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
	for e.h.Len() > 0 && !e.h.Top().tx {
		switch e.h.Top().s.settleDetect(e.h.Top()) {
		case detectStale:
			e.h.Pop()
		case detectMoved:
			e.h.Fix(0)
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
