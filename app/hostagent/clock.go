package hostagent

import "time"

// Clock is the time source of the agent; tests drive a fake one.
type Clock interface {
	// AfterFunc calls f in its own goroutine after d, unless stopped.
	AfterFunc(d time.Duration, f func()) Stopper
	NewTicker(d time.Duration) Ticker
}

// Stopper cancels a pending AfterFunc; it reports whether it stopped it.
type Stopper interface{ Stop() bool }

// Ticker is a time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// RealClock is the system clock.
type RealClock struct{}

// AfterFunc implements Clock.
func (RealClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }

// NewTicker implements Clock.
func (RealClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTicker) Stop()                 { r.t.Stop() }
