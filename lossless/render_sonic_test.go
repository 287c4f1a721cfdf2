package lossless

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The rules of sonic-buildimage's sonic-yang-models that the tables we
// render must meet, transcribed from the modules (sonic-dscp-tc-map,
// sonic-dot1p-tc-map, sonic-tc-priority-group-map, sonic-tc-queue-map,
// sonic-pfc-priority-queue-map, sonic-port-qos-map, sonic-buffer-profile,
// sonic-buffer-pg, sonic-queue, sonic-scheduler, sonic-wred-profile,
// sonic-cable-length, sonic-pfcwd): patterns, ranges, enumerations,
// mandatory leaves, leafrefs and must-statements. PORT, BUFFER_POOL and
// the lossy profile come from the switch's own config (platform); a
// leafref may point there.
var (
	yangMapName  = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}$`)
	yangDSCP     = regexp.MustCompile(`^(6[0-3]|[1-5][0-9]?|[0-9]?)$`)
	yangPG       = regexp.MustCompile(`^[0-7]?$`)
	yangPGNum    = regexp.MustCompile(`^[0-7](-[0-7])?$`)
	yangPFCList  = regexp.MustCompile(`^([0-7](,[0-7])*)?$`)
	yangCableLen = regexp.MustCompile(`^([0-9]+m|None)$`)
)

// sonicPlatformObjects are the objects a SONiC switch's buffers.json
// defines, which the rendered fragment refers to.
var sonicPlatformObjects = map[string][]string{
	"BUFFER_POOL":    {sonicLosslessPool, "egress_lossless_pool", "egress_lossy_pool"},
	"BUFFER_PROFILE": {sonicLossyProfile},
}

// yangProblems lists every rule the fragment breaks once merged with a
// PORT table of ports and the platform objects.
func yangProblems(db sonicDB, ports []string) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	isPort := func(name string) bool {
		for _, p := range ports {
			if p == name {
				return true
			}
		}
		return false
	}
	exists := func(table, name string) bool {
		if _, ok := db[table][name]; ok {
			return true
		}
		for _, o := range sonicPlatformObjects[table] {
			if o == name {
				return true
			}
		}
		return false
	}
	num := func(v string, lo, hi int64) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n >= lo && n <= hi
	}
	// Maps: names, keys and values.
	for table, key := range map[string]*regexp.Regexp{"DSCP_TO_TC_MAP": yangDSCP, "DOT1P_TO_TC_MAP": regexp.MustCompile(`^[0-7]$`),
		"TC_TO_PRIORITY_GROUP_MAP": regexp.MustCompile(`^[0-9]|1[0-5]$`), "TC_TO_QUEUE_MAP": regexp.MustCompile(`^[0-9]|1[0-5]$`),
		"MAP_PFC_PRIORITY_TO_QUEUE": regexp.MustCompile(`^[0-7]$`)} {
		for name, entries := range db[table] {
			if !yangMapName.MatchString(name) {
				bad("%s name %q", table, name)
			}
			for k, v := range entries {
				if !key.MatchString(k) {
					bad("%s|%s key %q", table, name, k)
				}
				switch table {
				case "TC_TO_PRIORITY_GROUP_MAP":
					if !yangPG.MatchString(v) {
						bad("%s|%s pg %q", table, name, v)
					}
				case "MAP_PFC_PRIORITY_TO_QUEUE", "TC_TO_QUEUE_MAP":
					if !num(v, 0, 7) {
						bad("%s|%s queue %q", table, name, v)
					}
				default: // tc_type 0..15
					if !num(v, 0, 15) {
						bad("%s|%s tc %q", table, name, v)
					}
				}
			}
		}
	}
	refs := map[string]string{"dscp_to_tc_map": "DSCP_TO_TC_MAP", "dot1p_to_tc_map": "DOT1P_TO_TC_MAP", "tc_to_pg_map": "TC_TO_PRIORITY_GROUP_MAP",
		"tc_to_queue_map": "TC_TO_QUEUE_MAP", "pfc_to_queue_map": "MAP_PFC_PRIORITY_TO_QUEUE"}
	for port, f := range db["PORT_QOS_MAP"] {
		if port != "global" && !isPort(port) {
			bad("PORT_QOS_MAP|%s: no such PORT", port)
		}
		for field, v := range f {
			switch field {
			case "pfc_enable", "pfcwd_sw_enable":
				if !yangPFCList.MatchString(v) {
					bad("PORT_QOS_MAP|%s %s %q", port, field, v)
				}
			default:
				if t, ok := refs[field]; !ok {
					bad("PORT_QOS_MAP|%s: unknown leaf %s", port, field)
				} else if !exists(t, v) {
					bad("PORT_QOS_MAP|%s %s → %s|%s does not exist", port, field, t, v)
				}
			}
		}
	}
	for name, f := range db["BUFFER_PROFILE"] {
		if _, ok := f["size"]; !ok {
			bad("BUFFER_PROFILE|%s: size is mandatory", name)
		}
		if !exists("BUFFER_POOL", f["pool"]) {
			bad("BUFFER_PROFILE|%s pool %q does not exist", name, f["pool"])
		}
		if v, ok := f["dynamic_th"]; ok && !num(v, -8, 7) {
			bad("BUFFER_PROFILE|%s dynamic_th %q outside -8..7", name, v)
		}
		for _, leaf := range []string{"size", "xon", "xoff", "xon_offset", "static_th"} {
			if v, ok := f[leaf]; ok && !num(v, 0, 1<<62) {
				bad("BUFFER_PROFILE|%s %s %q is no uint64", name, leaf, v)
			}
		}
	}
	for key, f := range db["BUFFER_PG"] {
		port, pg, _ := strings.Cut(key, "|")
		if !isPort(port) || !yangPGNum.MatchString(pg) {
			bad("BUFFER_PG|%s: bad key", key)
		}
		if v := f["profile"]; v != "NULL" && !exists("BUFFER_PROFILE", v) {
			bad("BUFFER_PG|%s profile %q does not exist", key, v)
		}
	}
	for name, f := range db["SCHEDULER"] {
		switch f["type"] {
		case "DWRR", "WRR", "STRICT":
		default:
			bad("SCHEDULER|%s type %q", name, f["type"])
		}
		if v, ok := f["weight"]; ok && !num(v, 1, 100) {
			bad("SCHEDULER|%s weight %q outside 1..100", name, v)
		}
	}
	for key, f := range db["QUEUE"] {
		port, _, _ := strings.Cut(key, "|")
		if !isPort(port) {
			bad("QUEUE|%s: no such PORT", key)
		}
		if v, ok := f["scheduler"]; ok && !exists("SCHEDULER", v) {
			bad("QUEUE|%s scheduler %q does not exist", key, v)
		}
		if v, ok := f["wred_profile"]; ok && !exists("WRED_PROFILE", v) {
			bad("QUEUE|%s wred_profile %q does not exist", key, v)
		}
	}
	for name, f := range db["WRED_PROFILE"] {
		if !yangMapName.MatchString(name) {
			bad("WRED_PROFILE name %q", name)
		}
		switch f["ecn"] {
		case "ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow", "ecn_green_red", "ecn_yellow_red", "ecn_all":
		default:
			bad("WRED_PROFILE|%s ecn %q", name, f["ecn"])
		}
		for _, c := range []string{"green", "yellow", "red"} {
			lo, _ := strconv.ParseUint(f[c+"_min_threshold"], 10, 64)
			hi, _ := strconv.ParseUint(f[c+"_max_threshold"], 10, 64)
			if hi < lo {
				bad("WRED_PROFILE|%s %s max below min", name, c)
			}
			if v, ok := f[c+"_drop_probability"]; ok && !num(v, 0, 100) {
				bad("WRED_PROFILE|%s %s_drop_probability %q", name, c, v)
			}
		}
	}
	for list, entries := range db["CABLE_LENGTH"] {
		if !yangMapName.MatchString(list) {
			bad("CABLE_LENGTH name %q", list)
		}
		for port, l := range entries {
			if !isPort(port) || !yangCableLen.MatchString(l) {
				bad("CABLE_LENGTH|%s|%s = %q", list, port, l)
			}
		}
	}
	poll, hasPoll := db["PFC_WD"]["GLOBAL"]["POLL_INTERVAL"]
	for name, f := range db["PFC_WD"] {
		if name == "GLOBAL" {
			if len(f) != 1 || !num(poll, 100, 1000) {
				bad("PFC_WD|GLOBAL: only POLL_INTERVAL, 100..1000 (%v)", f)
			}
			continue
		}
		if !isPort(name) {
			bad("PFC_WD|%s: no such PORT", name)
		}
		switch f["action"] {
		case "drop", "forward", "alert":
		default:
			bad("PFC_WD|%s action %q", name, f["action"])
		}
		d, r, pv := f["detection_time"], f["restoration_time"], atoiOr(poll, 0)
		if !num(d, 100, 5000) || !num(r, 100, 60000) {
			bad("PFC_WD|%s times %s/%s out of range", name, d, r)
		}
		if hasPoll && (atoiOr(d, 0) < pv || atoiOr(r, 0) < pv) {
			bad("PFC_WD|%s: detection_time and restoration_time must be >= POLL_INTERVAL %d", name, pv)
		}
	}
	// Every TC traffic is classified into must reach a priority group that
	// has a buffer profile on each port (a PG without one has no buffer).
	for port := range db["PORT_QOS_MAP"] {
		q := db["PORT_QOS_MAP"][port]
		classify := db["DSCP_TO_TC_MAP"][q["dscp_to_tc_map"]]
		if q["dot1p_to_tc_map"] != "" {
			classify = db["DOT1P_TO_TC_MAP"][q["dot1p_to_tc_map"]]
		}
		for _, tc := range classify {
			pg := db["TC_TO_PRIORITY_GROUP_MAP"][q["tc_to_pg_map"]][tc]
			if _, ok := db["BUFFER_PG"][port+"|"+pg]; !ok {
				bad("%s: TC %s lands in PG %s, which has no BUFFER_PG profile", port, tc, pg)
			}
		}
	}
	return out
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func sonicOf(t *testing.T, p Profile, o RenderOptions) (sonicDB, []string) {
	t.Helper()
	r, err := RenderDevice(p, TargetSONiC, o)
	if err != nil {
		t.Fatal(err)
	}
	var db sonicDB
	if err := json.Unmarshal(r.Text, &db); err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, port := range p.Ports {
		ports = append(ports, port.Interfaces...)
	}
	return db, ports
}

// Every rendering meets the YANG rules: the default on each SONiC platform,
// the seed profiles, trust pcp.
func TestSONiCMeetsYANG(t *testing.T) {
	profiles := ruleProfiles(t, TargetSONiC)
	for name, p := range profiles {
		for _, pl := range Platforms(TargetSONiC) {
			db, ports := sonicOf(t, p, RenderOptions{Platform: pl.Name})
			for _, problem := range yangProblems(db, ports) {
				t.Errorf("%s on %s: %s", name, pl.Name, problem)
			}
		}
	}
}

// The checker finds what the old renderer did wrong, so a pass means
// something: an identity TC→PG map left CNP (TC 6) in PG 6 without a
// profile, and SONiC's YANG refuses restoration below the poll interval
// and a 2000 ms poll.
func TestSONiCYANGCheckerCatchesOldFindings(t *testing.T) {
	db, ports := sonicOf(t, goldenProfile(TargetSONiC), RenderOptions{})
	for k := range db["TC_TO_PRIORITY_GROUP_MAP"][sonicMap] {
		db["TC_TO_PRIORITY_GROUP_MAP"][sonicMap][k] = k
	}
	db["PFC_WD"]["GLOBAL"]["POLL_INTERVAL"] = "2000"
	db["PFC_WD"]["Ethernet0"]["restoration_time"] = "150"
	got := strings.Join(yangProblems(db, ports), "\n")
	for _, want := range []string{"TC 6 lands in PG 6, which has no BUFFER_PG profile", "PFC_WD|GLOBAL: only POLL_INTERVAL, 100..1000",
		"PFC_WD|Ethernet0: detection_time and restoration_time must be >= POLL_INTERVAL"} {
		if !strings.Contains(got, want) {
			t.Errorf("checker misses %q; found:\n%s", want, got)
		}
	}
}

// Mellanox semantics: size = xon + xoff; Broadcom: size is a small
// guaranteed buffer and xoff the headroom, with an xon_offset.
func TestSONiCBufferProfileSemantics(t *testing.T) {
	db, _ := sonicOf(t, goldenProfile(TargetSONiC), RenderOptions{Platform: "spectrum-2"})
	for name, f := range db["BUFFER_PROFILE"] {
		if atoiOr(f["size"], 0) != atoiOr(f["xon"], -1)+atoiOr(f["xoff"], -1) {
			t.Errorf("mellanox %s: size %s != xon %s + xoff %s", name, f["size"], f["xon"], f["xoff"])
		}
	}
	db, _ = sonicOf(t, goldenProfile(TargetSONiC), RenderOptions{Platform: "broadcom"})
	for name, f := range db["BUFFER_PROFILE"] {
		if f["xon"] != "0" || f["xon_offset"] == "" || atoiOr(f["size"], 0) >= atoiOr(f["xoff"], 0) {
			t.Errorf("broadcom %s: %v", name, f)
		}
	}
}
