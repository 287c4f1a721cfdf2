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
		next := time.Hour
		if len(e.h) > 0 {
			next = e.h[0].at.Sub(now)
		}
		e.mu.Unlock()
		if len(due) > 0 {
			for i, d := range due {
				if d.tx {
					d.s.onTx(now, d.gen)
				} else {
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
