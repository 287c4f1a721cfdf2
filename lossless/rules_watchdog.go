package lossless

import "fmt"

// SONiC pfcwd ranges, from sonic-yang-models sonic-pfcwd.yang, in
// milliseconds.
const (
	minDetectionMs   = 100
	maxDetectionMs   = 5000
	minRestorationMs = 100
	maxRestorationMs = 60000
	minPollMs        = 100
	maxPollMs        = 1000
)

// checkWatchdog: detection, restoration and poll interval within the ranges
// SONiC's YANG model accepts, detection and restoration no shorter than the
// poll interval (the model's must-statements: a watchdog cannot act between
// two polls), and a known action.
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
	if w.PollMs < minPollMs || w.PollMs > maxPollMs {
		add("watchdog.poll_ms", w.PollMs, RuleWatchdog,
			fmt.Sprintf("the poll interval is %d–%d ms (SONiC PFC_WD GLOBAL POLL_INTERVAL)", minPollMs, maxPollMs), "use 200")
	} else {
		if w.DetectionMs < w.PollMs {
			add("watchdog.poll_ms", w.PollMs, RuleWatchdog,
				fmt.Sprintf("the poll interval must not exceed the detection time (%d ms)", w.DetectionMs), "use 200 or less")
		}
		if w.RestorationMs < w.PollMs {
			add("watchdog.restoration_ms", w.RestorationMs, RuleWatchdog,
				fmt.Sprintf("restoration must not be shorter than the poll interval (%d ms)", w.PollMs), "raise restoration_ms or lower poll_ms")
		}
	}
	switch w.Action {
	case ActionDrop, ActionForward, ActionAlert:
	default:
		add("watchdog.action", w.Action, RuleWatchdog, `action is "drop", "forward" or "alert"`, "use drop")
	}
}
