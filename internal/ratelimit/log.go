package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultEvery is the interval NewLog uses for zero.
const DefaultEvery = time.Second

// Log writes log lines that an unauthenticated party can cause (a refused
// request, a refused connection) at most once per interval per kind,
// counting the rest, so that a client looping on bad requests cannot fill
// the disk. Inputs are quoted and cut by the caller (inof.Quote). The zero
// value is not usable; use NewLog.
type Log struct {
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	last    map[string]time.Time
	skipped map[string]uint64
}

// NewLog returns a Log writing each kind at most once per every
// (DefaultEvery if zero); now is the clock (time.Now if nil).
func NewLog(every time.Duration, now func() time.Time) *Log {
	if every <= 0 {
		every = DefaultEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Log{every: every, now: now, last: map[string]time.Time{}, skipped: map[string]uint64{}}
}

// Warn writes msg with args at WARN through l, unless a line of the same
// msg was written less than the interval ago; then it only counts it, and
// the next line written says how many were not ("not_logged_since_last").
// It reports whether it wrote.
func (r *Log) Warn(l *slog.Logger, msg string, args ...any) bool {
	return r.write(l, slog.LevelWarn, msg, args...)
}

// Info is Warn at INFO, for a line a lasting condition repeats (a probe
// answered again and again).
func (r *Log) Info(l *slog.Logger, msg string, args ...any) bool {
	return r.write(l, slog.LevelInfo, msg, args...)
}

func (r *Log) write(l *slog.Logger, level slog.Level, msg string, args ...any) bool {
	now := r.now()
	r.mu.Lock()
	if t, ok := r.last[msg]; ok && now.Sub(t) < r.every {
		r.skipped[msg]++
		r.mu.Unlock()
		return false
	}
	r.last[msg] = now
	n := r.skipped[msg]
	delete(r.skipped, msg)
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "not_logged_since_last", n)
	}
	l.Log(context.Background(), level, msg, args...)
	return true
}
