package daemon

import (
	"errors"
	"fmt"
	"net"
)

// Common are the options every fabric daemon (inofd --role reflector and
// --role switch) starts with: its log, the Go runtime, the metrics
// listener and the state directory. A role's Options embed it inline, so
// its keys stay top-level (log.level, metrics_listen, state_dir).
type Common struct {
	Log LogOptions `yaml:"log"`
	// Runtime tunes the Go runtime (the collector's headroom).
	Runtime RuntimeOptions `yaml:"runtime"`
	// MetricsListen is the address of /metrics and /healthz; empty disables.
	MetricsListen string `yaml:"metrics_listen"`
	// StateDir holds what the daemon keeps across restarts (each role's
	// guide says what).
	StateDir string `yaml:"state_dir"`
}

// DefaultCommon are the common defaults of a role that serves its metrics
// on metricsListen and keeps its state in stateDir.
func DefaultCommon(metricsListen, stateDir string) Common {
	return Common{Log: DefaultLogOptions(), Runtime: DefaultRuntimeOptions(), MetricsListen: metricsListen, StateDir: stateDir}
}

// Validate reports every problem in c, joined.
func (c *Common) Validate() error {
	errs := []error{c.Runtime.Validate(), c.Log.Validate()}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("metrics_listen %q: want host:port", c.MetricsListen))
		}
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("state_dir: must be set"))
	}
	return errors.Join(errs...)
}
