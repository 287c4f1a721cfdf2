package lossless

import (
	"fmt"
	"slices"
	"strings"
)

// comwarePort is what the interface view of one Comware interface does:
// the same on every interface (comwareDevice), and per port class.
type comwarePort struct {
	comwareDevice
	ECN      ECNThresholds
	Headroom uint32
}

type comwareDevice struct {
	Classify string
	Lossless string
	ETS      []TCShare
	Watchdog bool
}

// readComware reads what a Comware rendering does: the dscp-dot1p and
// dot1p-lp map tables, the WRED queue tables, the deadlock precision,
// per-CoS interval and auto-recover delay and action, and per interface
// trust, PFC no-drop priorities and headroom, WFQ and the WRED table. Limits
// and headroom are in cells of switch_buffer.cell_bytes, a unit no reference
// confirms.
func readComware(text []byte, in renderInput) (Effective, error) {
	fail := func(format string, args ...any) (Effective, error) {
		return Effective{}, fmt.Errorf("lossless: reading the Comware rendering back: "+format, args...)
	}
	p, c := in.p, in.pl.Comware
	cell := p.SwitchBuffer.CellBytes
	lines := textFields(text)
	maps, err1 := textBlocks(lines, "qos", "map-table")
	wred, err2 := textBlocks(lines, "qos", "wred", "queue", "table")
	ifaces, err3 := textBlocks(lines, "interface")
	if err := firstErr(err1, err2, err3); err != nil {
		return fail("%w", err)
	}
	// import K… export V lines of a map table.
	table := func(name string, keys int) ([]uint8, error) {
		out := make([]uint8, keys)
		for _, v := range textValues(maps[name], "import") {
			i := slices.Index(v, "export")
			if i < 1 || i != len(v)-2 {
				return nil, fmt.Errorf("map-table %s: %q", name, strings.Join(v, " "))
			}
			val, err := atoi8(v[i+1])
			if err != nil || val >= NumPriorities {
				return nil, fmt.Errorf("map-table %s: %q", name, strings.Join(v, " "))
			}
			for _, w := range v[:i] {
				k, err := atoi8(w)
				if err != nil || int(k) >= keys {
					return nil, fmt.Errorf("map-table %s: %q", name, strings.Join(v, " "))
				}
				out[k] = val
			}
		}
		return out, nil
	}
	lp, err := table("dot1p-lp", NumPriorities)
	if err != nil {
		return fail("%w", err)
	}
	var prioTC [NumPriorities]uint8
	copy(prioTC[:], lp)
	var e Effective
	classes, cp, err := readClasses(in.plans, func(dev string) (comwarePort, error) { return readComwarePort(ifaces[dev], wred, p, cell) },
		func(cp comwarePort) any { return cp.comwareDevice })
	if err != nil {
		return fail("%w", err)
	}
	for i, plan := range in.plans {
		e.ECN = append(e.ECN, ClassECN{Class: plan.Port.Name, ECNThresholds: classes[i].ECN, Unconfirmed: true})
		e.Headroom = append(e.Headroom, ClassHeadroom{Class: plan.Port.Name, Bytes: classes[i].Headroom, Unconfirmed: true})
	}
	e.Classify, e.ETS = cp.Classify, cp.ETS
	e.LosslessPriorities, _ = list8(cp.Lossless)
	keyPrio := []uint8{0, 1, 2, 3, 4, 5, 6, 7}
	if e.Classify == "dscp" {
		if keyPrio, err = table("dscp-dot1p", 64); err != nil {
			return fail("%w", err)
		}
	}
	e.ToTC = toTC(keyPrio, prioTC)
	if e.Watchdog, err = readComwareWatchdog(lines, e.LosslessPriorities, c); err != nil {
		return fail("%w", err)
	}
	if !cp.Watchdog {
		e.Watchdog = &WatchdogTimes{Unconfirmed: true}
	}
	e.CNP = p.cnpPlace(e.ToTC, e.ETS, e.LosslessPriorities)
	return e, nil
}

// readComwareWatchdog reads the deadlock interval and auto-recover delay of
// the first lossless priority in units of the device-wide precision, and the
// action (forwarding when none is set).
func readComwareWatchdog(lines [][]string, prios []uint8, c *ComwareCaps) (*WatchdogTimes, error) {
	w := &WatchdogTimes{Action: ActionForward, Unconfirmed: true}
	prec := textValues(lines, "priority-flow-control", "deadlock", "precision")
	if len(prec) != 1 || c.DeadlockUnitMs[prec[0][0]] == 0 {
		return nil, fmt.Errorf("no single known deadlock precision (%v)", prec)
	}
	unit := c.DeadlockUnitMs[prec[0][0]]
	if len(prios) > 0 {
		cos := itoa(prios[0])
		for _, v := range textValues(lines, "priority-flow-control", "deadlock", "cos", cos, "interval") {
			n, err := atoi32(v[0])
			if err != nil {
				return nil, fmt.Errorf("deadlock cos %s interval %q", cos, v[0])
			}
			w.DetectionMs = n * unit
		}
		for _, v := range textValues(lines, "priority-flow-control", "deadlock", "auto-recover", "cos", cos, "delay") {
			n, err := atoi32(v[0])
			if err != nil {
				return nil, fmt.Errorf("deadlock auto-recover cos %s delay %q", cos, v[0])
			}
			w.RestorationMs = n * unit
		}
	}
	for _, v := range textValues(lines, "priority-flow-control", "deadlock", "auto-recover", "action") {
		var ok bool
		if w.Action, ok = recoveryAction(v[0]); !ok {
			return nil, fmt.Errorf("deadlock auto-recover action %q", v[0])
		}
	}
	return w, nil
}

// readComwarePort reads one interface view.
func readComwarePort(view [][]string, wred map[string][][]string, p Profile, cell uint32) (comwarePort, error) {
	var cp comwarePort
	switch trust := textValues(view, "qos", "trust"); {
	case len(trust) == 1 && trust[0][0] == "dscp":
		cp.Classify = "dscp"
	case len(trust) == 1 && trust[0][0] == "dot1p":
		cp.Classify = "pcp"
	}
	var prios []uint8
	headroom := map[uint8]uint32{}
	for _, v := range textValues(view, "priority-flow-control") {
		switch {
		case len(v) == 3 && v[0] == "no-drop" && v[1] == "dot1p":
			prio, err := atoi8(v[2])
			if err != nil || prio >= NumPriorities {
				return comwarePort{}, fmt.Errorf("priority-flow-control %q", strings.Join(v, " "))
			}
			prios = append(prios, prio)
		case len(v) == 4 && v[0] == "dot1p" && v[2] == "headroom":
			prio, err1 := atoi8(v[1])
			cells, err2 := atoi32(v[3])
			if err := firstErr(err1, err2); err != nil || cells > 1<<22 {
				return comwarePort{}, fmt.Errorf("priority-flow-control %q", strings.Join(v, " "))
			}
			headroom[prio] = cells * cell
		case len(v) == 2 && v[0] == "deadlock" && v[1] == "enable":
			cp.Watchdog = true
		}
	}
	slices.Sort(prios)
	if !slices.ContainsFunc(view, func(f []string) bool { return slices.Equal(f, []string{"priority-flow-control", "enable"}) }) {
		prios = nil
	}
	cp.Lossless = joinUint8(slices.Compact(prios), ",")
	if len(prios) > 0 {
		cp.Headroom = headroom[prios[0]]
	}
	strict, weight := map[uint8]bool{}, map[uint8]uint32{}
	for _, v := range textValues(view, "qos", "wfq") {
		if len(v) < 3 || v[1] != "group" {
			continue
		}
		tc, err := atoi8(v[0])
		if err != nil {
			return comwarePort{}, fmt.Errorf("qos wfq %q", strings.Join(v, " "))
		}
		switch {
		case len(v) == 3 && v[2] == "sp":
			strict[tc] = true
		case len(v) == 5 && v[2] == "1" && v[3] == "byte-count":
			w, err := atoi32(v[4])
			if err != nil {
				return comwarePort{}, fmt.Errorf("qos wfq %q", strings.Join(v, " "))
			}
			weight[tc] = w
		}
	}
	cp.ETS = sharesFor(p, strict, percentOf(p, strict, weight))
	applied := textValues(view, "qos", "wred", "apply")
	if tcs := p.losslessTCs(); len(applied) == 1 && len(tcs) > 0 {
		name, q := applied[0][0], itoa(tcs[0])
		entries := wred[name]
		if slices.ContainsFunc(entries, func(f []string) bool { return slices.Equal(f, []string{"queue", q, "ecn"}) }) {
			for _, v := range textValues(entries, "queue", q, "drop-level", "0") {
				if len(v) != 6 || v[0] != "low-limit" || v[2] != "high-limit" || v[4] != "discard-probability" {
					return comwarePort{}, fmt.Errorf("wred table %s queue %s: %q", name, q, strings.Join(v, " "))
				}
				lo, err1 := atoi64(v[1])
				hi, err2 := atoi64(v[3])
				pct, err3 := atoi8(v[5])
				if err := firstErr(err1, err2, err3); err != nil || lo > 1<<32 || hi > 1<<32 {
					return comwarePort{}, fmt.Errorf("wred table %s queue %s: %q", name, q, strings.Join(v, " "))
				}
				cp.ECN = ECNThresholds{KminBytes: lo * uint64(cell), KmaxBytes: hi * uint64(cell), PmaxPercent: pct}
			}
		}
	}
	return cp, nil
}
