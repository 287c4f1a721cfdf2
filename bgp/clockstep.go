package bgp

import (
	"context"
	"log/slog"
	"time"
)

// clockStepTolerance is the backward step that resets the sessions: GoBGP
// compares whole seconds, so a smaller step can make a session ignore at
// most its first second.
const clockStepTolerance = time.Second

// clockPoll is how often the wall clock is compared with the monotonic one.
const clockPoll = 250 * time.Millisecond

// wallStepBack returns how far the wall clock went back between two
// readings of time.Now (0 if it did not): how much less it advanced than
// the monotonic clock.
func wallStepBack(prev, now time.Time) time.Duration {
	return max(0, now.Sub(prev)-now.Round(0).Sub(prev.Round(0)))
}

// watchWallClock, until ctx ends, shuts the socket of every session to
// neighbors when the wall clock stepped back by more than
// clockStepTolerance. GoBGP drops every message an established session
// receives whose wall-clock time, in seconds, is before the session's
// start (v3.37, pkg/server/server.go, "beforeUptime"). When the wall clock steps back by d, every session that
// was up ignores its peer's UPDATEs for d (records, withdraws, End-of-RIB,
// route-target memberships), and nothing sends them again. Found by the
// soak (seed 2266060917834395947): a reflector whose clock was stepped back
// 10 minutes for 4 s ignored a switch's new membership for a zone and sent
// that switch none of the zone's records afterwards; the switch had them
// from the other reflector only, and when that one stopped its hosts were
// told the zone's targets were gone. Shut down, a session fails at both
// ends, which keep each other's routes under graceful restart (as after a
// crash) and start a new session, whose start is read from the clock as it
// is now; the peer sends its whole table again, what was ignored included.
func watchWallClock(ctx context.Context, neighbors *neighborTable, log *slog.Logger) {
	tick := time.NewTicker(clockPoll)
	defer tick.Stop()
	prev := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		back := wallStepBack(prev, now)
		prev = now
		if back <= clockStepTolerance {
			continue
		}
		shut := 0
		for _, n := range neighbors.all() {
			k, err := shutdownSessions(n.LocalAddress, n.Address)
			if err != nil {
				log.Warn("wall clock stepped back: resetting a session failed", "neighbor", n.Address, "err", err)
			}
			shut += k
		}
		log.Warn("wall clock stepped back; every BGP session reset (GoBGP would ignore their updates for as long)",
			"step", back.Round(time.Millisecond), "sessions", shut)
	}
}
