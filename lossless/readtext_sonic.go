package lossless

import (
	"encoding/json"
	"fmt"
	"math"
)

// sonicPort is what config_db sets for one interface: the same on every
// interface (sonicDevice), and per port class.
type sonicPort struct {
	sonicDevice
	ECN      ECNThresholds
	Headroom uint32
}

type sonicDevice struct {
	Lossless string
	Classify string
	ToTC     []uint8
	ETS      []TCShare
	Watchdog WatchdogTimes
}

// readSONiC reads what a config_db rendering does: per interface its
// PORT_QOS_MAP (pfc_enable, the classification map and tc_to_queue_map),
// the QUEUE schedulers and WRED profile of its queues, BUFFER_PG of the
// lossless priority group and PFC_WD, with the tables they name.
func readSONiC(text []byte, in renderInput) (Effective, error) {
	fail := func(format string, args ...any) (Effective, error) {
		return Effective{}, fmt.Errorf("lossless: reading the SONiC rendering back: "+format, args...)
	}
	var db sonicDB
	if err := json.Unmarshal(text, &db); err != nil {
		return fail("%w", err)
	}
	p := in.p
	var pollMs uint32
	if s, ok := db["PFC_WD"]["GLOBAL"]["POLL_INTERVAL"]; ok {
		var err error
		if pollMs, err = atoi32(s); err != nil || pollMs == 0 {
			return fail("PFC_WD GLOBAL POLL_INTERVAL %q", s)
		}
	}
	var e Effective
	classes, sp, err := readClasses(in.plans, func(dev string) (sonicPort, error) { return readSONiCPort(db, p, dev, pollMs) },
		func(sp sonicPort) any { return sp.sonicDevice })
	if err != nil {
		return fail("%w", err)
	}
	for i, plan := range in.plans {
		e.ECN = append(e.ECN, ClassECN{Class: plan.Port.Name, ECNThresholds: classes[i].ECN})
		e.Headroom = append(e.Headroom, ClassHeadroom{Class: plan.Port.Name, Bytes: classes[i].Headroom,
			Unconfirmed: in.pl.BroadcomProfile, XoffOnly: in.pl.BroadcomProfile})
	}
	e.LosslessPriorities, _ = list8(sp.Lossless)
	e.Classify, e.ToTC, e.ETS = sp.Classify, sp.ToTC, sp.ETS
	e.Watchdog = &sp.Watchdog
	e.CNP = p.cnpPlace(e.ToTC, e.ETS, e.LosslessPriorities)
	return e, nil
}

// readSONiCPort reads one interface's settings; a missing entry reads as
// nothing set (which the check shows), a field that is not a number fails.
func readSONiCPort(db sonicDB, p Profile, dev string, pollMs uint32) (sonicPort, error) {
	num := func(table, key, field string) (uint64, error) {
		s, ok := db[table][key][field]
		if !ok {
			return 0, nil
		}
		v, err := atoi64(s)
		if err != nil {
			return 0, fmt.Errorf("%s %s %s %q is not a number", table, key, field, s)
		}
		return v, nil
	}
	qos := db["PORT_QOS_MAP"][dev]
	sp := sonicPort{sonicDevice: sonicDevice{Lossless: qos["pfc_enable"]}}
	if sp.Lossless != "" {
		if _, err := list8(sp.Lossless); err != nil {
			return sonicPort{}, fmt.Errorf("pfc_enable: %w", err)
		}
	}
	table, name, n := "DSCP_TO_TC_MAP", qos["dscp_to_tc_map"], 64
	sp.Classify = "dscp"
	if name == "" {
		table, name, n = "DOT1P_TO_TC_MAP", qos["dot1p_to_tc_map"], NumPriorities
		sp.Classify = "pcp"
	}
	tcQueue := func(tc uint8) (uint8, error) {
		v, err := num("TC_TO_QUEUE_MAP", qos["tc_to_queue_map"], itoa(tc))
		if err != nil || v >= NumPriorities {
			return 0, fmt.Errorf("TC_TO_QUEUE_MAP %s: TC %d → %d: %v", qos["tc_to_queue_map"], tc, v, err)
		}
		return uint8(v), nil
	}
	sp.ToTC = make([]uint8, n)
	for k := range n {
		tc, err := num(table, name, itoa(k))
		if err != nil || tc >= NumPriorities {
			return sonicPort{}, fmt.Errorf("%s %s: %d → %d: %v", table, name, k, tc, err)
		}
		if sp.ToTC[k], err = tcQueue(uint8(tc)); err != nil {
			return sonicPort{}, err
		}
	}
	strict, weight := map[uint8]bool{}, map[uint8]uint32{}
	for _, c := range p.scheduled() {
		sched := db["QUEUE"][fmt.Sprintf("%s|%d", dev, c.TC)]["scheduler"]
		strict[c.TC] = db["SCHEDULER"][sched]["type"] == "STRICT"
		w, err := num("SCHEDULER", sched, "weight")
		if err != nil {
			return sonicPort{}, err
		}
		weight[c.TC] = uint32(min(w, math.MaxUint32))
	}
	sp.ETS = sharesFor(p, strict, percentOf(p, strict, weight))
	if tcs := p.losslessTCs(); len(tcs) > 0 {
		wred := db["QUEUE"][fmt.Sprintf("%s|%d", dev, tcs[0])]["wred_profile"]
		if prof := db["WRED_PROFILE"][wred]; prof["wred_green_enable"] == "true" && (prof["ecn"] == "ecn_all" || prof["ecn"] == "ecn_green") {
			kmin, err1 := num("WRED_PROFILE", wred, "green_min_threshold")
			kmax, err2 := num("WRED_PROFILE", wred, "green_max_threshold")
			pmax, err3 := num("WRED_PROFILE", wred, "green_drop_probability")
			if err := firstErr(err1, err2, err3); err != nil {
				return sonicPort{}, err
			}
			sp.ECN = ECNThresholds{KminBytes: kmin, KmaxBytes: kmax, PmaxPercent: uint8(min(pmax, 255))}
		}
		pg, err := num("TC_TO_PRIORITY_GROUP_MAP", qos["tc_to_pg_map"], itoa(tcs[0]))
		if err != nil {
			return sonicPort{}, err
		}
		profile := db["BUFFER_PG"][fmt.Sprintf("%s|%d", dev, pg)]["profile"]
		field := "size"
		if db["BUFFER_PROFILE"][profile]["xon_offset"] != "" {
			field = "xoff" // Broadcom: size is the guaranteed buffer
		}
		hr, err := num("BUFFER_PROFILE", profile, field)
		if err != nil {
			return sonicPort{}, err
		}
		sp.Headroom = uint32(min(hr, math.MaxUint32))
	}
	wd := db["PFC_WD"][dev]
	detect, err1 := num("PFC_WD", dev, "detection_time")
	restore, err2 := num("PFC_WD", dev, "restoration_time")
	if err := firstErr(err1, err2); err != nil {
		return sonicPort{}, err
	}
	// pfcwd acts on poll ticks.
	if pollMs > 0 {
		detect, restore = uint64(roundUp(uint32(min(detect, 1<<31)), pollMs)), uint64(roundUp(uint32(min(restore, 1<<31)), pollMs))
	}
	// A watchdog that does not watch the lossless priorities is none.
	if qos["pfcwd_sw_enable"] == sp.Lossless {
		sp.Watchdog = WatchdogTimes{DetectionMs: uint32(detect), RestorationMs: uint32(restore), Action: wd["action"]}
	}
	return sp, nil
}
