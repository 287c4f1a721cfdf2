// Package ratelimit spaces out repeated events, such as log lines about
// bad input: at most one per interval passes.
package ratelimit

import (
	"sync"
	"time"
)

// Limit allows one event per Every. The zero value allows every event;
// it is safe for concurrent use.
type Limit struct {
	Every time.Duration

	mu   sync.Mutex
	last time.Time
}

// Allow reports whether an event now passes, and if so starts a new
// interval.
func (r *Limit) Allow() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.last) >= r.Every {
		r.last = now
		return true
	}
	return false
}
