package lossless

// Watchdog timing per target: each expresses detection and restoration in
// its own units; these pick the values closest to the profile's (never
// shorter) and say where the result differs.

// nvueWatchdog: Cumulus polls every polling-interval and mitigates after
// robustness polls without progress; it restores once a whole polling
// interval passes without pause frames and always drops.
func nvueWatchdog(w Watchdog, ns *notes) (pollMs, robustness uint32, eff *WatchdogTimes) {
	pollMs = min(max(w.PollMs, nvueMinPollMs), nvueMaxPollMs)
	robustness = min(max(divCeil(w.DetectionMs, pollMs), 1), nvueMaxRobustness)
	eff = &WatchdogTimes{DetectionMs: robustness * pollMs, RestorationMs: pollMs, Action: ActionDrop}
	if eff.DetectionMs != w.DetectionMs {
		ns.add("PFC watchdog detection is polling-interval × robustness = %d × %d = %d ms, not %d ms", pollMs, robustness, eff.DetectionMs, w.DetectionMs)
	}
	if eff.RestorationMs != w.RestorationMs {
		ns.add("Cumulus restores after one polling interval without pause frames (%d ms), not restoration_ms (%d ms): NVUE has no restoration time", pollMs, w.RestorationMs)
	}
	if w.Action != ActionDrop {
		ns.add("Cumulus always drops on a stalled queue; NVUE has no watchdog action (profile: %s)", w.Action)
	}
	return pollMs, robustness, eff
}

// huaweiPrecisionWatchdog: the CE6855 family counts detection (1–max) and
// recovery (0–max) in units of one precision for the whole device; the
// finest precision that holds both is used.
func huaweiPrecisionWatchdog(w Watchdog, h *HuaweiCaps, ns *notes) (precision, detect, recovery uint32, eff *WatchdogTimes) {
	for _, precision = range h.DeadlockPrecisionMs {
		detect, recovery = divCeil(w.DetectionMs, precision), divCeil(w.RestorationMs, precision)
		if detect <= h.DeadlockDetectMax && recovery <= h.DeadlockRecoverMax {
			break
		}
	}
	detect, recovery = min(max(detect, 1), h.DeadlockDetectMax), min(recovery, h.DeadlockRecoverMax)
	eff = &WatchdogTimes{DetectionMs: detect * precision, RestorationMs: recovery * precision, Action: huaweiAction(w, ns)}
	if eff.DetectionMs != w.DetectionMs || eff.RestorationMs != w.RestorationMs {
		ns.add("deadlock detection %d × %d ms = %d ms and recovery %d × %d ms = %d ms (profile: %d and %d ms)",
			detect, precision, eff.DetectionMs, recovery, precision, eff.RestorationMs, w.DetectionMs, w.RestorationMs)
	}
	return precision, detect, recovery, eff
}

// huaweiTimerWatchdog: the CE6866 family takes both times in ms, 10–1500.
func huaweiTimerWatchdog(w Watchdog, h *HuaweiCaps, ns *notes) (detect, recovery uint32, eff *WatchdogTimes) {
	lo, hi := h.DeadlockTimerMs[0], h.DeadlockTimerMs[1]
	detect, recovery = min(max(w.DetectionMs, lo), hi), min(max(w.RestorationMs, lo), hi)
	eff = &WatchdogTimes{DetectionMs: detect, RestorationMs: recovery, Action: huaweiAction(w, ns)}
	if detect != w.DetectionMs || recovery != w.RestorationMs {
		ns.add("deadlock timers take %d–%d ms: detection %d ms, recovery %d ms (profile: %d and %d ms)", lo, hi, detect, recovery, w.DetectionMs, w.RestorationMs)
	}
	return detect, recovery, eff
}

// huaweiAction maps the action to `dcb pfc deadlock recovery-behavior`
// ("" for alert, which CloudEngine cannot do).
func huaweiAction(w Watchdog, ns *notes) string {
	switch w.Action {
	case ActionDrop:
		return ActionDrop
	case ActionForward:
		return ActionForward
	}
	ns.add("CloudEngine cannot only alert on a PFC deadlock: it ignores the pause frames and forwards or discards; recovery-behavior is left at the device default")
	return ""
}

// huaweiBehavior is the recovery-behavior keyword of an action.
func huaweiBehavior(action string) string {
	if action == ActionDrop {
		return "discard"
	}
	return "forwarding"
}

// comwareWatchdog: Comware counts the deadlock interval and the
// auto-recover delay in units of the device-wide precision; the finest
// precision that holds both in at most DeadlockMaxUnits units is used.
func comwareWatchdog(w Watchdog, c *ComwareCaps, ns *notes) (precision string, interval, delay uint32) {
	for _, precision = range []string{"high", "normal", "low"} {
		unit := c.DeadlockUnitMs[precision]
		interval, delay = divCeil(w.DetectionMs, unit), divCeil(w.RestorationMs, unit)
		if interval <= c.DeadlockMaxUnits && delay <= c.DeadlockMaxUnits {
			break
		}
	}
	unit := c.DeadlockUnitMs[precision]
	interval, delay = min(max(interval, 1), c.DeadlockMaxUnits), min(max(delay, 1), c.DeadlockMaxUnits)
	if w.Action == ActionAlert {
		ns.add("Comware cannot only alert on a PFC deadlock: auto-recover forwards or discards; the device default (forwarding) is kept")
	}
	if d, r := interval*unit, delay*unit; d != w.DetectionMs || r != w.RestorationMs {
		ns.add("deadlock interval %d and delay %d at precision %s are %d and %d ms (profile: %d and %d ms)",
			interval, delay, precision, d, r, w.DetectionMs, w.RestorationMs)
	}
	return precision, interval, delay
}
