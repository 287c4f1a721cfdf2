package lossless

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// sonicMap is the name of every map table entry the profile creates.
const sonicMap = "INOF"

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

// renderSONiC writes a config_db JSON fragment for `config load`. SONiC can
// express every switch setting of the profile, so it carries no notes.
func renderSONiC(p Profile, plans []PortPlan) ([]byte, error) {
	db := sonicDB{}
	sonicMaps(db, p)
	sonicSchedulers(db, p)
	pfc := joinUint8(p.LosslessPriorities, ",")
	for _, plan := range plans {
		profile := fmt.Sprintf("pg_lossless_%d_%dm_profile", plan.Port.SpeedMbps, plan.Port.CableMeters)
		db.set("BUFFER_PROFILE", profile, "pool", "ingress_lossless_pool")
		db.set("BUFFER_PROFILE", profile, "xon", strconv.Itoa(int(plan.Switch.Xon)))
		db.set("BUFFER_PROFILE", profile, "xoff", strconv.Itoa(int(plan.XoffBytes)))
		db.set("BUFFER_PROFILE", profile, "size", strconv.Itoa(int(plan.HeadroomBytes)))
		db.set("BUFFER_PROFILE", profile, "dynamic_th", strconv.Itoa(int(p.SwitchBuffer.DynamicThreshold)))
		wred := fmt.Sprintf("INOF_LOSSLESS_%d", plan.Port.SpeedMbps)
		sonicWRED(db, wred, plan.ECN)
		for _, dev := range plan.Port.Interfaces {
			db.set("CABLE_LENGTH", sonicMap, dev, fmt.Sprintf("%dm", plan.Port.CableMeters))
			for _, f := range []string{"dscp_to_tc_map", "tc_to_queue_map", "tc_to_pg_map", "pfc_to_queue_map"} {
				db.set("PORT_QOS_MAP", dev, f, sonicMap)
			}
			db.set("PORT_QOS_MAP", dev, "pfc_enable", pfc)
			db.set("PORT_QOS_MAP", dev, "pfcwd_sw_enable", pfc)
			for _, prio := range p.LosslessPriorities {
				db.set("BUFFER_PG", fmt.Sprintf("%s|%d", dev, prio), "profile", profile)
			}
			for _, c := range p.scheduled() {
				key := fmt.Sprintf("%s|%d", dev, c.TC)
				db.set("QUEUE", key, "scheduler", fmt.Sprintf("INOF_TC%d", c.TC))
			}
			for _, tc := range p.losslessTCs() {
				db.set("QUEUE", fmt.Sprintf("%s|%d", dev, tc), "wred_profile", wred)
			}
			w := p.Watchdog
			db.set("PFC_WD", dev, "action", w.Action)
			db.set("PFC_WD", dev, "detection_time", strconv.Itoa(int(w.DetectionMs)))
			db.set("PFC_WD", dev, "restoration_time", strconv.Itoa(int(w.RestorationMs)))
		}
	}
	db.set("PFC_WD", "GLOBAL", "POLL_INTERVAL", strconv.Itoa(int(p.Watchdog.PollMs)))
	out, err := json.MarshalIndent(db, "", "    ")
	if err != nil {
		return nil, fmt.Errorf("lossless: render sonic: %w", err)
	}
	return append(out, '\n'), nil
}

// sonicMaps writes the DSCP, TC, PG, queue and PFC-priority maps.
func sonicMaps(db sonicDB, p Profile) {
	for d := range uint8(64) {
		tc := p.PriorityToTC[p.dscpPriority(d)]
		db.set("DSCP_TO_TC_MAP", sonicMap, strconv.Itoa(int(d)), strconv.Itoa(int(tc)))
	}
	for i := range NumPriorities {
		k := strconv.Itoa(i)
		db.set("TC_TO_PRIORITY_GROUP_MAP", sonicMap, k, k)
		db.set("TC_TO_QUEUE_MAP", sonicMap, k, k)
		db.set("MAP_PFC_PRIORITY_TO_QUEUE", sonicMap, k, k)
	}
}

// sonicSchedulers writes one scheduler per scheduled traffic class.
func sonicSchedulers(db sonicDB, p Profile) {
	for _, c := range p.scheduled() {
		name := fmt.Sprintf("INOF_TC%d", c.TC)
		if c.Scheduler == SchedulerStrict {
			db.set("SCHEDULER", name, "type", "STRICT")
			continue
		}
		db.set("SCHEDULER", name, "type", "DWRR")
		db.set("SCHEDULER", name, "weight", strconv.Itoa(int(c.Weight)))
	}
}

// sonicWRED writes an ECN-marking WRED profile with the same thresholds for
// every colour.
func sonicWRED(db sonicDB, name string, e ECNThresholds) {
	db.set("WRED_PROFILE", name, "ecn", "ecn_all")
	for _, color := range []string{"green", "yellow", "red"} {
		db.set("WRED_PROFILE", name, "wred_"+color+"_enable", "true")
		db.set("WRED_PROFILE", name, color+"_min_threshold", strconv.FormatUint(e.KminBytes, 10))
		db.set("WRED_PROFILE", name, color+"_max_threshold", strconv.FormatUint(e.KmaxBytes, 10))
		db.set("WRED_PROFILE", name, color+"_drop_probability", strconv.Itoa(int(e.PmaxPercent)))
	}
}

// joinUint8 joins numbers with sep.
func joinUint8(vs []uint8, sep string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, sep)
}
