package lossless

import "fmt"

// SONiC pfcwd ranges for manually configured times, in milliseconds.
const (
	minDetectionMs   = 100
	maxDetectionMs   = 5000
	minRestorationMs = 100
	maxRestorationMs = 60000
)

// checkWatchdog: detection and restoration within SONiC's ranges, a poll
// interval no longer than detection (a watchdog that looks less often cannot
// detect in time), and a known action.
func (p Profile) checkWatchdog(add addFunc) {
	w := p.Watchdog
	if w.DetectionMs < minDetectionMs || w.DetectionMs > maxDetectionMs {
		add("watchdog.detection_ms", w.DetectionMs, RuleWatchdog,
			fmt.Sprintf("detection time is %d–%d ms", minDetectionMs, maxDetectionMs), "use 200")
	}
	if w.RestorationMs < minRestorationMs || w.RestorationMs > maxRestorationMs {
		add("watchdog.restoration_ms", w.RestorationMs, RuleWatchdog,
			fmt.Sprintf("restoration time is %d–%d ms", minRestorationMs, maxRestorationMs), "use 200 (or twice the detection time)")
	}
	if w.PollMs == 0 || w.PollMs > w.DetectionMs {
		add("watchdog.poll_ms", w.PollMs, RuleWatchdog,
			fmt.Sprintf("the poll interval must be above 0 and at most the detection time (%d ms)", w.DetectionMs), "use 200 or less")
	}
	switch w.Action {
	case ActionDrop, ActionForward, ActionAlert:
	default:
		add("watchdog.action", w.Action, RuleWatchdog, `action is "drop", "forward" or "alert"`, "use drop")
	}
}
