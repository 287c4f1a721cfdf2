package reflector

import (
	"errors"
	"fmt"

	"github.com/openinof/inof/bgp/bfd"
)

// LiveKeys are the option keys a running reflector takes on a reload
// (SIGHUP); every other key needs a restart. The log keys are applied by
// the daemon's logger, the BFD timers by Reload. A client's own bfd
// overrides sit in the clients list, which needs a restart as a whole.
var LiveKeys = []string{"log.", "bfd.desired_min_tx", "bfd.required_min_rx", "bfd.detect_mult"}

// Reload applies the live keys of next (validated options of a reload)
// to the running reflector: each client's BFD session gets next's timers
// (the client's own override still wins), announced to the client with a
// Poll sequence; sessions stay Up.
func (r *Reflector) Reload(next Options) error {
	if err := next.Validate(); err != nil {
		return err
	}
	rn, release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	if rn.bfd == nil {
		return nil
	}
	var errs []error
	for _, n := range next.neighbors() {
		if n.BFD == nil {
			continue
		}
		k := bfd.SessionKey{Local: n.LocalAddress, Peer: n.Address}
		if _, ok := rn.bfd.Session(k); !ok {
			continue // a client added in the file: it comes with the restart
		}
		t := bfd.Timers{DesiredMinTx: n.BFD.DesiredMinTx, RequiredMinRx: n.BFD.RequiredMinRx, DetectMult: n.BFD.DetectMult}
		if err := rn.bfd.SetTimers(k, t); err != nil {
			errs = append(errs, fmt.Errorf("reflector: BFD %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
