package hostagent

import "github.com/openinof/inof/inof"

// pathAction is what an inactive notification does to one of this agent's
// controllers at once (the removal after the restrain time is
// disconnect_on's business).
type pathAction uint8

const (
	// keepPath leaves the path to the kernel (keep-alive, multipath).
	keepPath pathAction = iota
	// failPath fails the path over now with the configured method.
	failPath
)

func (a pathAction) String() string {
	if a == failPath {
		return "fail over"
	}
	return "keep"
}

// pathDead reports whether a reason means the path can no longer carry
// I/O: the target's link went down (1), its address moved (5), its
// registration aged out (6: the device went silent), or the switch that
// served it vanished (7).
func pathDead(r inof.Reason) bool {
	return r == inof.ReasonLinkDown || r == inof.ReasonIPChange || r == inof.ReasonAgeOut || r == inof.ReasonBFDDown
}

// pathDegraded reports whether a reason means the path still works but
// badly: a PFC storm (2) or packet errors (3) on its link.
func pathDegraded(r inof.Reason) bool {
	return r == inof.ReasonPFCStorm || r == inof.ReasonPacketErr
}

// failoverAction is the policy table of docs/host-agent.md ("Multipath
// failover"): for an inactive with reason r on a live path, whether a live
// sibling path of the same subsystem exists, what to do now.
//
//   - a dead path (1, 5, 6, 7) is failed over, sibling or not, unless it is
//     the last path and last_path is keep;
//   - a degraded path (2, 3) is failed over only onto a live sibling;
//   - a zone change (4) fails nothing over: the path works until the
//     controller is removed (after the restrain time, disconnect_on);
//   - method none fails nothing over.
func failoverAction(o FailoverOptions, r inof.Reason, sibling bool) pathAction {
	switch {
	case o.Method == FailoverNone:
		return keepPath
	case pathDead(r) && (sibling || o.LastPath != LastPathKeep):
		return failPath
	case pathDegraded(r) && sibling:
		return failPath
	}
	return keepPath
}

// failsOver reports whether an inactive with reason r may fail a path over
// (with or without a sibling), i.e. whether the agent has to look.
func failsOver(o FailoverOptions, r inof.Reason) bool {
	return o.Method != FailoverNone && (pathDead(r) || pathDegraded(r))
}
