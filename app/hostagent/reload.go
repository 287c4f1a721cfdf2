package hostagent

import "time"

// LiveKeys are the option keys a running inof-host takes on a reload
// (SIGHUP); every other key needs a restart. The log keys are applied by
// the daemon's logger, the disconnect policy by Reload: it governs the
// notifications that arrive from then on (a disconnect already waiting out
// its restrain time keeps its time).
var LiveKeys = []string{"log.", "disconnect_on", "restrain_time"}

// policy is the part of the options a reload changes.
type policy struct {
	disconnectOn DisconnectPolicy
	restrainTime time.Duration
}

// Reload applies the live keys of next (options of a reload).
func (a *Agent) Reload(next Options) error {
	if err := next.Validate(); err != nil {
		return err
	}
	a.pol.Store(&policy{disconnectOn: next.DisconnectOn, restrainTime: next.RestrainTime})
	return nil
}

// policy returns the disconnect policy in force.
func (a *Agent) policy() policy {
	if p := a.pol.Load(); p != nil {
		return *p
	}
	return policy{disconnectOn: a.opt.DisconnectOn, restrainTime: a.opt.RestrainTime}
}

// Ready is closed once Run serves: the links are open, announcing, and
// the worker runs.
func (a *Agent) Ready() <-chan struct{} { return a.ready }
