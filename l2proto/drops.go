package l2proto

import (
	"log/slog"
	"maps"
	"sync"
	"time"
)

// DropCounter counts dropped frames per reason (DropReason labels plus
// "unexpected" for well-formed frames a receiver has no use for) and logs
// them at most once per interval per reason, with how many were not logged.
type DropCounter struct {
	log   *slog.Logger
	every time.Duration

	mu         sync.Mutex
	counts     map[string]uint64
	lastLog    map[string]time.Time
	suppressed map[string]uint64
}

// NewDropCounter logs through log (slog.Default if nil) at most once per
// every (1 s if zero) and reason.
func NewDropCounter(log *slog.Logger, every time.Duration) *DropCounter {
	if log == nil {
		log = slog.Default()
	}
	if every == 0 {
		every = time.Second
	}
	return &DropCounter{log: log, every: every, counts: map[string]uint64{},
		lastLog: map[string]time.Time{}, suppressed: map[string]uint64{}}
}

// Drop counts one dropped frame received on port.
func (d *DropCounter) Drop(port string, err error) {
	d.DropReason(port, DropReason(err), err)
}

// DropReason counts one dropped frame under an explicit reason label.
func (d *DropCounter) DropReason(port, reason string, err error) {
	now := time.Now()
	d.mu.Lock()
	d.counts[reason]++
	if now.Sub(d.lastLog[reason]) < d.every {
		d.suppressed[reason]++
		d.mu.Unlock()
		return
	}
	d.lastLog[reason] = now
	n := d.suppressed[reason]
	d.suppressed[reason] = 0
	d.mu.Unlock()
	d.log.Warn("dropped frame", "port", port, "reason", reason, "err", err, "not_logged_since_last", n)
}

// Counts returns a copy of the counters.
func (d *DropCounter) Counts() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.counts)
}
