package daemon

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Signals are a daemon's signal handlers: SIGTERM and SIGINT end Context,
// SIGHUP asks for a reload. Catch them first thing, before the
// configuration is read, so that no signal meets Go's default action
// (SIGHUP would kill the daemon).
type Signals struct {
	// Context ends on SIGTERM or SIGINT.
	Context context.Context
	// Reload receives once per SIGHUP (a burst of them counts as one while
	// a reload is pending).
	Reload <-chan struct{}
	stop   context.CancelFunc
	hup    chan os.Signal
}

// CatchSignals installs the handlers.
func CatchSignals(parent context.Context) *Signals {
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-hup:
				if !ok {
					return
				}
				select {
				case reload <- struct{}{}:
				default:
				}
			}
		}
	}()
	return &Signals{Context: ctx, Reload: reload, stop: stop, hup: hup}
}

// Stop releases the handlers: a second SIGTERM then kills the process.
// SIGHUP stays ignored, so that one arriving during shutdown does not kill
// the daemon before it saved its state.
func (s *Signals) Stop() {
	s.stop()
	signal.Ignore(syscall.SIGHUP)
	signal.Stop(s.hup)
}
