package lossless

import (
	"fmt"
	"slices"
	"strings"
)

// huaweiPort is what the interface view of one CloudEngine interface does:
// the same on every interface (huaweiDevice), and per port class.
type huaweiPort struct {
	huaweiDevice
	ECN      ECNThresholds
	Headroom uint32
}

type huaweiDevice struct {
	Classify string
	Lossless string
	ETS      []TCShare
}

// readHuawei reads what a CloudEngine rendering does: the diffserv domain's
// inbound map, the `dcb pfc` view's priorities and deadlock times, the
// deadlock interval or timers and recovery behaviour, the drop profiles,
// and per interface trust, PFC, hdrm, scheduling and WRED/ECN.
func readHuawei(text []byte, in renderInput) (Effective, error) {
	fail := func(format string, args ...any) (Effective, error) {
		return Effective{}, fmt.Errorf("lossless: reading the CloudEngine rendering back: "+format, args...)
	}
	p, h := in.p, in.pl.Huawei
	lines := textFields(text)
	domains, err1 := textBlocks(lines, "diffserv", "domain")
	drops, err2 := textBlocks(lines, "drop-profile")
	pfcView, err3 := textBlocks(lines, "dcb", "pfc")
	ifaces, err4 := textBlocks(lines, "interface")
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return fail("%w", err)
	}
	var prios []uint8
	for _, v := range textValues(pfcView[""], "priority") {
		prio, err := atoi8(v[0])
		if err != nil || prio >= NumPriorities {
			return fail("dcb pfc priority %q", strings.Join(v, " "))
		}
		if len(v) == 1 && !slices.Contains(prios, prio) {
			prios = append(prios, prio)
		}
	}
	slices.Sort(prios)
	e := Effective{}
	var err error
	if e.Watchdog, err = readHuaweiWatchdog(lines, pfcView[""], prios, h); err != nil {
		return fail("%w", err)
	}
	inbound, key, n := "ip-dscp-inbound", "dscp", 64
	classes, hp, err := readClasses(in.plans, func(dev string) (huaweiPort, error) { return readHuaweiPort(ifaces[dev], drops, p, prios, h) },
		func(hp huaweiPort) any { return hp.huaweiDevice })
	if err != nil {
		return fail("%w", err)
	}
	for i, plan := range in.plans {
		e.ECN = append(e.ECN, ClassECN{Class: plan.Port.Name, ECNThresholds: classes[i].ECN})
		if h.HdrmKB[1] != 0 {
			// The switch rounds thresholds up to whole blocks.
			e.Headroom = append(e.Headroom, ClassHeadroom{Class: plan.Port.Name, Bytes: roundUp(classes[i].Headroom, huaweiBlockBytes)})
		} else {
			e.Headroom = append(e.Headroom, ClassHeadroom{Class: plan.Port.Name, Bytes: plan.HeadroomBytes, Computed: true})
		}
	}
	e.Classify, e.ETS = hp.Classify, hp.ETS
	e.LosslessPriorities, _ = list8(hp.Lossless)
	if e.Classify == "pcp" {
		inbound, key, n = "8021p-inbound", "802.1p", NumPriorities
	}
	e.ToTC = make([]uint8, n)
	for _, v := range textValues(domains["default"], inbound) {
		k, err := atoi8(v[0])
		q := slices.IndexFunc([]uint8{0, 1, 2, 3, 4, 5, 6, 7}, func(q uint8) bool { return len(v) > 2 && huaweiPHB(q) == v[2] })
		if err != nil || int(k) >= n || len(v) != 4 || v[1] != "phb" || q < 0 || v[3] != "green" {
			return fail("diffserv domain default: %s %q", key, strings.Join(v, " "))
		}
		e.ToTC[k] = uint8(q)
	}
	e.CNP = p.cnpPlace(e.ToTC, e.ETS, e.LosslessPriorities)
	return e, nil
}

// readHuaweiWatchdog reads the deadlock detection and recovery: per
// priority in units of the device's interval, or the global timers.
func readHuaweiWatchdog(lines, pfcView [][]string, prios []uint8, h *HuaweiCaps) (*WatchdogTimes, error) {
	one := func(prefix ...string) (uint32, error) {
		vs := textValues(lines, prefix...)
		if len(vs) != 1 || len(vs[0]) != 1 {
			return 0, fmt.Errorf("no single %q line", strings.Join(prefix, " "))
		}
		return atoi32(vs[0][0])
	}
	w := &WatchdogTimes{}
	if len(h.DeadlockPrecisionMs) > 0 {
		interval, err := one("dcb", "pfc", "deadlock-detect", "interval")
		if err != nil {
			return nil, err
		}
		if len(prios) > 0 {
			for _, v := range textValues(pfcView, "priority", itoa(prios[0])) {
				if len(v) != 3 || v[1] != "time" {
					continue
				}
				t, err := atoi32(v[2])
				if err != nil {
					return nil, fmt.Errorf("priority %d %q: %w", prios[0], strings.Join(v, " "), err)
				}
				switch v[0] {
				case "deadlock-detect":
					w.DetectionMs = t * interval
				case "deadlock-recovery":
					w.RestorationMs = t * interval
				}
			}
		}
	} else {
		detect, err1 := one("dcb", "pfc", "deadlock-detect", "timer")
		recovery, err2 := one("dcb", "pfc", "deadlock-recovery", "timer")
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		w.DetectionMs, w.RestorationMs = detect, recovery
	}
	for _, v := range textValues(lines, "dcb", "pfc", "deadlock", "recovery-behavior") {
		var ok bool
		if w.Action, ok = recoveryAction(v[0]); !ok {
			return nil, fmt.Errorf("recovery-behavior %q", v[0])
		}
	}
	return w, nil
}

// readHuaweiPort reads one interface view.
func readHuaweiPort(view [][]string, drops map[string][][]string, p Profile, prios []uint8, h *HuaweiCaps) (huaweiPort, error) {
	var hp huaweiPort
	switch trust := textValues(view, "trust"); {
	case len(trust) == 1 && trust[0][0] == "dscp":
		hp.Classify = "dscp"
	case len(trust) == 1 && slices.Equal(trust[0], []string{"8021p", "outer"}):
		hp.Classify = "pcp"
	}
	if len(textValues(view, "dcb", "pfc", "enable")) > 0 {
		hp.Lossless = joinUint8(prios, ",")
	}
	tcs := p.losslessTCs()
	strict, weight := map[uint8]bool{}, map[uint8]uint32{}
	drr := map[uint8]bool{}
	for _, v := range textValues(view, "qos", "drr") {
		for _, w := range v {
			q, err := atoi8(w)
			if err != nil {
				return huaweiPort{}, fmt.Errorf("qos drr %q", strings.Join(v, " "))
			}
			drr[q] = true
		}
	}
	ecnOn := false
	wred := ""
	for _, f := range textValues(view, "qos") {
		switch {
		case len(f) == 2 && f[0] == "pq":
			q, err := atoi8(f[1])
			if err != nil {
				return huaweiPort{}, fmt.Errorf("qos %q", strings.Join(f, " "))
			}
			strict[q] = true
		case len(f) == 5 && f[0] == "queue" && f[2] == "drr" && f[3] == "weight":
			q, err1 := atoi8(f[1])
			w, err2 := atoi32(f[4])
			if err := firstErr(err1, err2); err != nil {
				return huaweiPort{}, fmt.Errorf("qos %q", strings.Join(f, " "))
			}
			if drr[q] {
				weight[q] = w
			}
		case len(f) == 4 && f[0] == "queue" && f[2] == "wred" && len(tcs) > 0 && f[1] == itoa(tcs[0]):
			wred = f[3]
		case len(f) == 3 && f[0] == "queue" && f[2] == "ecn" && len(tcs) > 0 && f[1] == itoa(tcs[0]):
			ecnOn = true
		}
	}
	hp.ETS = sharesFor(p, strict, percentOf(p, strict, weight))
	if ecnOn {
		for _, v := range textValues(drops[wred], "color", "green", "buffer-size") {
			if len(v) != 6 || v[0] != "low-limit" || v[2] != "high-limit" || v[4] != "discard-percentage" {
				return huaweiPort{}, fmt.Errorf("drop-profile %s %q", wred, strings.Join(v, " "))
			}
			lo, err1 := atoi64(v[1])
			hi, err2 := atoi64(v[3])
			pct, err3 := atoi8(v[5])
			if err := firstErr(err1, err2, err3); err != nil {
				return huaweiPort{}, fmt.Errorf("drop-profile %s %q: %w", wred, strings.Join(v, " "), err)
			}
			hp.ECN = ECNThresholds{KminBytes: lo, KmaxBytes: hi, PmaxPercent: pct}
		}
	}
	if h.HdrmKB[1] != 0 && len(tcs) > 0 {
		for _, v := range textValues(view, "dcb", "pfc", "buffer", itoa(tcs[0]), "hdrm") {
			kb, err := atoi32(v[0])
			if err != nil || len(v) != 2 || v[1] != "kbytes" || kb > 1<<22 {
				return huaweiPort{}, fmt.Errorf("dcb pfc buffer %d hdrm %q", tcs[0], strings.Join(v, " "))
			}
			hp.Headroom = kb * 1024
		}
	}
	return hp, nil
}
