package lossless

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sonicMap is the name of every map table entry the profile creates.
const sonicMap = "INOF"

// Buffer objects a SONiC platform's own buffers.json defines; the profile's
// entries refer to them (a leafref needs them once config load merges).
const (
	sonicLosslessPool = "ingress_lossless_pool"
	sonicLossyProfile = "ingress_lossy_profile"
)

// sonicDB is config_db: table → key → field → value. encoding/json writes
// map keys sorted, so the output is deterministic.
type sonicDB map[string]map[string]map[string]string

func (db sonicDB) set(table, key, field, value string) {
	if db[table] == nil {
		db[table] = map[string]map[string]string{}
	}
	if db[table][key] == nil {
		db[table][key] = map[string]string{}
	}
	db[table][key][field] = value
}

func itoa[T uint8 | uint32 | uint64 | int8 | int](v T) string { return strconv.FormatInt(int64(v), 10) }

// renderSONiC writes a config_db JSON fragment for `config load`. JSON has
// no comments, so the notes go with the Rendering (inofctl prints them on
// stderr).
func renderSONiC(in renderInput) (Rendering, error) {
	p := in.p
	db := sonicDB{}
	var ns notes
	ns.add("BUFFER_PROFILE pool %s and BUFFER_PG <port>|%d profile %s are the platform's own (buffers.json); config load merges with them",
		sonicLosslessPool, p.lossyPG(), sonicLossyProfile)
	sonicMaps(db, p)
	sonicSchedulers(db, p)
	pfc := joinUint8(p.LosslessPriorities, ",")
	for _, plan := range in.plans {
		profile := fmt.Sprintf("pg_lossless_%d_%dm_profile", plan.Port.SpeedMbps, plan.Port.CableMeters)
		db.set("BUFFER_PROFILE", profile, "pool", sonicLosslessPool)
		db.set("BUFFER_PROFILE", profile, "dynamic_th", itoa(p.SwitchBuffer.DynamicThreshold))
		if in.pl.BroadcomProfile {
			// Broadcom: size is the guaranteed buffer, xoff the headroom
			// beyond it, xon_offset the resume hysteresis.
			cell := p.SwitchBuffer.CellBytes
			guaranteed := divCeil(p.SwitchBuffer.LosslessMTU, cell) * cell
			xoff := divCeil(plan.XoffBytes, cell) * cell
			db.set("BUFFER_PROFILE", profile, "size", itoa(guaranteed))
			db.set("BUFFER_PROFILE", profile, "xon", "0")
			db.set("BUFFER_PROFILE", profile, "xon_offset", itoa(guaranteed))
			db.set("BUFFER_PROFILE", profile, "xoff", itoa(xoff))
		} else {
			db.set("BUFFER_PROFILE", profile, "xon", itoa(plan.Switch.Xon))
			db.set("BUFFER_PROFILE", profile, "xoff", itoa(plan.XoffBytes))
			db.set("BUFFER_PROFILE", profile, "size", itoa(plan.HeadroomBytes))
		}
		wred := fmt.Sprintf("INOF_LOSSLESS_%d", plan.Port.SpeedMbps)
		sonicWRED(db, wred, plan.ECN)
		for _, dev := range plan.Port.Interfaces {
			db.set("CABLE_LENGTH", sonicMap, dev, fmt.Sprintf("%dm", plan.Port.CableMeters))
			maps := []string{"tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map", "dscp_to_tc_map"}
			if p.RoCE.Trust == "pcp" {
				maps[3] = "dot1p_to_tc_map"
			}
			for _, f := range maps {
				db.set("PORT_QOS_MAP", dev, f, sonicMap)
			}
			db.set("PORT_QOS_MAP", dev, "pfc_enable", pfc)
			db.set("PORT_QOS_MAP", dev, "pfcwd_sw_enable", pfc)
			db.set("BUFFER_PG", fmt.Sprintf("%s|%d", dev, p.lossyPG()), "profile", sonicLossyProfile)
			for _, prio := range p.LosslessPriorities {
				db.set("BUFFER_PG", fmt.Sprintf("%s|%d", dev, prio), "profile", profile)
			}
			for _, c := range p.scheduled() {
				db.set("QUEUE", fmt.Sprintf("%s|%d", dev, c.TC), "scheduler", fmt.Sprintf("INOF_TC%d", c.TC))
			}
			for _, tc := range p.losslessTCs() {
				db.set("QUEUE", fmt.Sprintf("%s|%d", dev, tc), "wred_profile", wred)
			}
			w := p.Watchdog
			db.set("PFC_WD", dev, "action", w.Action)
			db.set("PFC_WD", dev, "detection_time", itoa(w.DetectionMs))
			db.set("PFC_WD", dev, "restoration_time", itoa(w.RestorationMs))
		}
	}
	if in.pl.BroadcomProfile {
		ns.add("Broadcom BUFFER_PROFILE: size %d B is the guaranteed buffer and xon_offset one lossless MTU (ours); xoff is the headroom; SONiC on Broadcom looks headroom up per SKU (pg_profile_lookup.ini), so these are our values, not the switch's",
			divCeil(p.SwitchBuffer.LosslessMTU, p.SwitchBuffer.CellBytes)*p.SwitchBuffer.CellBytes)
	} else {
		ns.add("BUFFER_PROFILE size = xon + xoff (Mellanox); xoff is the larger of SONiC's current dynamic model (sonic-swss buffer_headroom_mellanox.lua) and the mlx5 NIC's")
	}
	db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", itoa(p.Watchdog.PollMs))
	sonicWatchdogNote(p.Watchdog, &ns)
	out, err := json.MarshalIndent(db, "", "    ")
	if err != nil {
		return Rendering{}, fmt.Errorf("lossless: render sonic: %w", err)
	}
	out = append(out, '\n')
	read, err := readSONiC(out, in)
	if err != nil {
		return Rendering{}, err
	}
	return Rendering{Text: out, Notes: ns, Effective: read}, nil
}

// sonicWatchdogNote says where SONiC pfcwd's timing differs: it acts on
// poll ticks, so times that are not a multiple of the poll interval take
// effect at the next one.
func sonicWatchdogNote(w Watchdog, ns *notes) {
	d, r := roundUp(w.DetectionMs, w.PollMs), roundUp(w.RestorationMs, w.PollMs)
	if d != w.DetectionMs || r != w.RestorationMs {
		ns.add("pfcwd polls every %d ms: detection %d ms and restoration %d ms take effect at %d and %d ms", w.PollMs, w.DetectionMs, w.RestorationMs, d, r)
	}
}

// roundUp is v rounded up to a multiple of step.
func roundUp(v, step uint32) uint32 { return divCeil(v, step) * step }

// sonicMaps writes the classification, TC, PG, queue and PFC-priority maps. Every TC that is not
// lossless goes to the lossy PG (lossyPG), whose profile is the platform's
// lossy one; a lossless TC has the PG of its number.
func sonicMaps(db sonicDB, p Profile) {
	toTC := p.classifyMap()
	table := "DSCP_TO_TC_MAP"
	if p.RoCE.Trust == "pcp" {
		table = "DOT1P_TO_TC_MAP"
	}
	for k, tc := range toTC {
		db.set(table, sonicMap, itoa(k), itoa(tc))
	}
	lossy := p.lossyPG()
	for i := range uint8(NumPriorities) {
		k := itoa(i)
		pg := itoa(lossy)
		if slices.Contains(p.losslessTCs(), i) {
			pg = k
		}
		db.set("TC_TO_PRIORITY_GROUP_MAP", sonicMap, k, pg)
		db.set("TC_TO_QUEUE_MAP", sonicMap, k, k)
		db.set("MAP_PFC_PRIORITY_TO_QUEUE", sonicMap, k, k)
	}
}

// sonicSchedulers writes one scheduler per scheduled traffic class (DWRR
// weights are relative).
func sonicSchedulers(db sonicDB, p Profile) {
	for _, c := range p.scheduled() {
		name := fmt.Sprintf("INOF_TC%d", c.TC)
		if c.Scheduler == SchedulerStrict {
			db.set("SCHEDULER", name, "type", "STRICT")
			continue
		}
		db.set("SCHEDULER", name, "type", "DWRR")
		db.set("SCHEDULER", name, "weight", itoa(c.Weight))
	}
}

// sonicWRED writes an ECN-marking WRED profile with the same thresholds for
// every colour.
func sonicWRED(db sonicDB, name string, e ECNThresholds) {
	db.set("WRED_PROFILE", name, "ecn", "ecn_all")
	for _, color := range []string{"green", "yellow", "red"} {
		db.set("WRED_PROFILE", name, "wred_"+color+"_enable", "true")
		db.set("WRED_PROFILE", name, color+"_min_threshold", itoa(e.KminBytes))
		db.set("WRED_PROFILE", name, color+"_max_threshold", itoa(e.KmaxBytes))
		db.set("WRED_PROFILE", name, color+"_drop_probability", itoa(e.PmaxPercent))
	}
}

// lossyPG is the priority group every lossy traffic class shares: the
// lowest that is no lossless class's.
func (p Profile) lossyPG() uint8 {
	for pg := range uint8(NumPriorities) {
		if !slices.Contains(p.losslessTCs(), pg) {
			return pg
		}
	}
	return 0
}

// joinUint8 joins numbers with sep.
func joinUint8(vs []uint8, sep string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, sep)
}
