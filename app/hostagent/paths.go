package hostagent

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// pathRefresh is how often the agent re-reads the kernel's controllers in
// the background: what the kernel changes on its own (a path reconnected,
// an ANA state, a controller removed by ctrl_loss_tmo) is in the view that
// long after at most.
const pathRefresh = 2 * time.Second

// pathView is the agent's background view of the kernel's NVMe-oF
// controllers (sysfs): which controllers are paths of one subsystem and
// which of them can carry I/O. A failover decides from it and reads
// nothing from sysfs before it acts. It is read every pathRefresh, after
// every lane job, and at once by a failover that finds it older than the
// last change a lane made (a connect or disconnect since it was read).
type pathView struct {
	kern Kernel
	// changes counts the controller changes lanes started (connects and
	// disconnects); a view read before the latest one is stale.
	changes atomic.Uint64
	cur     atomic.Pointer[viewSnap]
	kick    chan struct{}
}

// viewSnap is one read of sysfs and the change count it covers.
type viewSnap struct {
	paths []KernelPath
	seen  uint64
}

func newPathView(k Kernel) *pathView {
	return &pathView{kern: k, kick: make(chan struct{}, 1)}
}

// changing tells the view that a lane is about to change controllers.
func (v *pathView) changing() { v.changes.Add(1) }

// refresh asks the view's goroutine for a new read (it coalesces).
func (v *pathView) refresh() {
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// get returns the current view; false when it is older than the last
// change a lane started, or there is none yet.
func (v *pathView) get() ([]KernelPath, bool) {
	s := v.cur.Load()
	if s == nil || s.seen < v.changes.Load() {
		return nil, false
	}
	return s.paths, true
}

// read reads sysfs now and stores the result unless a read that began
// later stored first.
func (v *pathView) read() ([]KernelPath, error) {
	seen := v.changes.Load()
	ps, err := v.kern.Paths()
	if err != nil {
		return nil, err
	}
	next := &viewSnap{paths: ps, seen: seen}
	for {
		old := v.cur.Load()
		if old != nil && old.seen > seen {
			return ps, nil
		}
		if v.cur.CompareAndSwap(old, next) {
			return ps, nil
		}
	}
}

// paths returns the view, read afresh when it is stale.
func (v *pathView) paths() ([]KernelPath, error) {
	if ps, ok := v.get(); ok {
		return ps, nil
	}
	return v.read()
}

// run keeps the view current until ctx ends: a read at start, every
// pathRefresh and on refresh. A read error is logged once until reads
// work again.
func (v *pathView) run(ctx context.Context, clk Clock, log *slog.Logger) {
	t := clk.NewTicker(pathRefresh)
	defer t.Stop()
	logged := ""
	for {
		_, err := v.read()
		if msg := fmt.Sprint(err); err != nil && msg != logged {
			log.Warn("reading NVMe controllers from sysfs", "err", err)
			logged = msg
		} else if err == nil {
			logged = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-v.kick:
		}
	}
}
