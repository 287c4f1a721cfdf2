package discovery

import (
	"log/slog"
	"sync"
	"time"
)

// rateLog writes the lines a remote party can cause (refused connections,
// malformed PDUs, refused commands) at most once per interval per message,
// saying how many of that message were not written since, so that a host
// looping on bad input cannot fill the disk.
type rateLog struct {
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	last    map[string]time.Time
	skipped map[string]uint64
}

func newRateLog(every time.Duration) *rateLog {
	return &rateLog{every: every, now: time.Now, last: map[string]time.Time{}, skipped: map[string]uint64{}}
}

// warn logs msg with args through l at WARN, unless msg was logged less
// than the interval ago (then it is counted for the next line).
func (r *rateLog) warn(l *slog.Logger, msg string, args ...any) {
	now := r.now()
	r.mu.Lock()
	if t, ok := r.last[msg]; ok && now.Sub(t) < r.every {
		r.skipped[msg]++
		r.mu.Unlock()
		return
	}
	r.last[msg] = now
	n := r.skipped[msg]
	delete(r.skipped, msg)
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "not_logged_since_last", n)
	}
	l.Warn(msg, args...)
}
