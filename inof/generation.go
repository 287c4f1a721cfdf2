package inof

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Generations order the writes of one configuration object across the
// reflectors of a fabric. A generation is a hybrid logical clock value:
// wall-clock milliseconds shifted left by GenerationLogicalBits, plus a
// counter, so it never goes backwards and stays above every generation a
// reflector has observed.
const GenerationLogicalBits = 16

// Fabric-wide rules for generations that every reflector must apply alike.
const (
	// MaxGenerationSkew bounds how far ahead of the local clock an accepted
	// generation may be. A record from further in the future is refused, so
	// one reflector with a wrong clock cannot drag every later write forward.
	MaxGenerationSkew = 5 * time.Minute
	// TombstoneLifetime is how long a deletion is kept, measured from the
	// generation that wrote it. After that every reflector drops it and
	// refuses it when it is offered again. A reflector away for longer can
	// bring a deleted object back; keep it above the longest outage.
	TombstoneLifetime = 7 * 24 * time.Hour
)

// ErrFutureGeneration reports a generation beyond MaxGenerationSkew.
var ErrFutureGeneration = errors.New("generation too far in the future")

// GenerationTime returns the wall-clock part of a generation.
func GenerationTime(gen uint64) time.Time {
	return time.UnixMilli(int64(gen >> GenerationLogicalBits))
}

// GenerationAt returns the lowest generation at wall-clock time t.
func GenerationAt(t time.Time) uint64 {
	return uint64(t.UnixMilli()) << GenerationLogicalBits
}

// CheckGeneration returns ErrFutureGeneration if gen is more than
// MaxGenerationSkew ahead of now.
func CheckGeneration(gen uint64, now time.Time) error {
	if at := GenerationTime(gen); at.Sub(now) > MaxGenerationSkew {
		return fmt.Errorf("%w: %s is %s ahead of the local clock (limit %s)",
			ErrFutureGeneration, at.UTC().Format(time.RFC3339Nano), at.Sub(now).Round(time.Millisecond), MaxGenerationSkew)
	}
	return nil
}

// TombstoneExpired reports whether a deletion written at generation gen is
// past TombstoneLifetime at now.
func TombstoneExpired(gen uint64, now time.Time) bool {
	return now.Sub(GenerationTime(gen)) > TombstoneLifetime
}

// Clock issues generations. It is safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	last uint64
	now  func() time.Time
}

// NewClock returns a clock reading now (time.Now if nil).
func NewClock(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

// Now returns the clock's wall-clock reading.
func (c *Clock) Now() time.Time { return c.now() }

// Next returns a generation above every one returned or observed before.
func (c *Clock) Next() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wall := GenerationAt(c.now()); wall > c.last {
		c.last = wall
	} else {
		c.last++
	}
	return c.last
}

// Last returns the highest generation the clock has returned or been
// moved past (0 before any).
func (c *Clock) Last() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Advance moves the clock past a generation this reflector wrote itself
// (read back from its own store): unlike Observe it is not bounded by
// MaxGenerationSkew, so after the wall clock steps back new writes still
// win over the ones already made.
func (c *Clock) Advance(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, gen)
}

// Observe moves the clock past a generation seen elsewhere. A generation
// more than MaxGenerationSkew ahead is refused with ErrFutureGeneration and
// leaves the clock alone.
func (c *Clock) Observe(gen uint64) error {
	if err := CheckGeneration(gen, c.now()); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, gen)
	return nil
}
