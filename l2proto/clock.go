package l2proto

import "time"

// Clock is the time source of a Notifier. NotifierConfig.Clock nil means the
// system clock; tests inject a fake one to drive retransmission, RTT
// estimation and pacing without real waiting.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-running timer that fires once d has
	// passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Notifier uses. Reset and Stop follow
// Go 1.23 semantics: after either, no value from an earlier arming is
// received from C.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

// SystemClock is the Clock of the time package.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s sysTimer) C() <-chan time.Time   { return s.t.C }
func (s sysTimer) Reset(d time.Duration) { s.t.Reset(d) }
func (s sysTimer) Stop()                 { s.t.Stop() }
