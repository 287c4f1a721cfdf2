package switchagent

import (
	"context"
	"errors"
	"fmt"
)

// LiveKeys are the option keys a running switch agent takes on a reload
// (SIGHUP); every other key needs a restart. The log keys are applied by
// the daemon's logger; the BFD timers and the access ports by Reload.
var LiveKeys = []string{"log.", "bfd.desired_min_tx", "bfd.required_min_rx", "bfd.detect_mult", "access_ports"}

// reconfRequest hands reloaded options to the loop.
type reconfRequest struct {
	next Options
	done chan error
}

// errNotRunning is Reload's answer outside Run.
var errNotRunning = errors.New("switchagent: not running")

// Reload applies the live keys of next (options of a reload) to the
// running agent, from its loop:
//   - the BFD sessions toward the reflectors take next's timers, announced
//     with a Poll sequence (sessions stay Up);
//   - access ports added are opened and start taking registrations; ports
//     removed are closed, and their devices leave as on a link down
//     (reason 1): hosts elsewhere are told, and the records go inactive.
//
// It returns when the loop is done with it, or when ctx ends.
func (a *Agent) Reload(ctx context.Context, next Options) error {
	if err := next.Validate(); err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	select {
	case <-a.ready:
	default:
		return errNotRunning
	}
	req := reconfRequest{next: next, done: make(chan error, 1)}
	select {
	case a.reconf <- req:
	case <-a.tasks.ctx.Done():
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reconfigure carries out a reload in the loop: the fabric side takes
// the BFD timers, the port side the access ports.
func (a *Agent) reconfigure(next Options) error {
	names, err := a.ports.reconcile(next)
	if a.health != nil {
		a.health.mon.Watch(names)
	}
	// The discovery controller is advertised on the access ports only.
	return errors.Join(a.fab.reconfigure(next), err, a.disc.setInterfaces(names))
}
