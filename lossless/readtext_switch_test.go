package lossless

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// switchInput is what a render of the golden profile on a platform reads.
func switchInput(t *testing.T, target, platform string) (Profile, Rendering, renderInput) {
	t.Helper()
	p := goldenProfile(target)
	r, err := RenderDevice(p, target, RenderOptions{Platform: platform})
	if err != nil {
		t.Fatal(err)
	}
	q := p.ForPlatform(r.Platform)
	plans, err := Compute(q)
	if err != nil {
		t.Fatal(err)
	}
	return p, r, renderInput{p: q, pl: r.Platform, plans: plans}
}

// readBackCase is one edit of a rendering and the check aspects it must
// make differ (every other aspect keeps its status), or the error it must
// give (an edit of one interface of several).
type readBackCase struct {
	name    string
	edit    func(text string) string
	aspects []string
	err     string
}

const setDifferently = "set differently"

// replaceLine edits the first occurrence of from, failing when it is not
// in the text.
func replaceLine(t *testing.T, from, to string) func(string) string {
	return func(text string) string {
		if !strings.Contains(text, from) {
			t.Fatalf("the rendering has no %q", from)
		}
		return strings.Replace(text, from, to, 1)
	}
}

// replaceAll edits every occurrence of from.
func replaceAll(t *testing.T, from, to string) func(string) string {
	return func(text string) string {
		if !strings.Contains(text, from) {
			t.Fatalf("the rendering has no %q", from)
		}
		return strings.ReplaceAll(text, from, to)
	}
}

// testReadBack: the unedited rendering reads back as the renderer reports
// it and checks without a difference; each edit shows as ≠ in its aspects
// and nowhere else.
func testReadBack(t *testing.T, target, platform string, read func([]byte, renderInput) (Effective, error), cases []readBackCase) {
	t.Helper()
	p, r, in := switchInput(t, target, platform)
	e, err := read(r.Text, in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, r.Effective) {
		t.Fatalf("read back %+v, rendering reports %+v", e, r.Effective)
	}
	base := editedRows(t, p, r, e)
	for aspect, st := range base {
		if st == Differs {
			t.Fatalf("unedited: %s differs", aspect)
		}
	}
	for _, c := range cases {
		e, err := read([]byte(c.edit(string(r.Text))), in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := editedRows(t, p, r, e)
		for aspect, st := range got {
			want := base[aspect]
			for _, a := range c.aspects {
				if a == aspect {
					want = Differs
				}
			}
			if st != want {
				t.Errorf("%s: %s is %s, want %s", c.name, aspect, st, want)
			}
		}
	}
}

// editJSON changes one config_db field ("" deletes it); key "*" is every
// key that has the field.
func editJSON(t *testing.T, table, key, field, value string) func(string) string {
	return func(text string) string {
		var db sonicDB
		if err := json.Unmarshal([]byte(text), &db); err != nil {
			t.Fatal(err)
		}
		keys := []string{key}
		if key == "*" {
			keys = nil
			for k, fields := range db[table] {
				if _, ok := fields[field]; ok {
					keys = append(keys, k)
				}
			}
		}
		for _, k := range keys {
			if _, ok := db[table][k][field]; !ok {
				t.Fatalf("the rendering has no %s %s %s", table, k, field)
			}
			if value == "" {
				delete(db[table][k], field)
			} else {
				db[table][k][field] = value
			}
		}
		out, err := json.Marshal(db)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
}

var allECN = []string{"ECN server (100G)", "ECN leaf (100G)", "ECN spine (100G)"}

// TestSONiCReadBack: a wrong field in config_db shows in the check.
func TestSONiCReadBack(t *testing.T) {
	testReadBack(t, TargetSONiC, "", readSONiC, []readBackCase{
		{"DSCP 24 to TC 0", editJSON(t, "DSCP_TO_TC_MAP", "INOF", "24", "0"), []string{"DSCP → TC"}, ""},
		{"TC 6 to queue 0", editJSON(t, "TC_TO_QUEUE_MAP", "INOF", "6", "0"), []string{"DSCP → TC", "CNP"}, ""},
		{"no PFC on Ethernet4", editJSON(t, "PORT_QOS_MAP", "Ethernet4", "pfc_enable", ""), nil, setDifferently},
		{"no PFC", editJSON(t, "PORT_QOS_MAP", "*", "pfc_enable", ""), []string{"lossless priorities", "PFC watchdog"}, ""},
		{"PFC on 4 too", editJSON(t, "PORT_QOS_MAP", "*", "pfc_enable", "3,4"), []string{"lossless priorities", "PFC watchdog"}, ""},
		{"wrong Kmin", editJSON(t, "WRED_PROFILE", "INOF_LOSSLESS_100000", "green_min_threshold", "40000"), allECN, ""},
		{"no ECN", editJSON(t, "WRED_PROFILE", "INOF_LOSSLESS_100000", "ecn", "ecn_none"), allECN, ""},
		{"no WRED on Ethernet4", editJSON(t, "QUEUE", "Ethernet4|3", "wred_profile", ""), nil, setDifferently},
		{"no WRED on Ethernet48", editJSON(t, "QUEUE", "Ethernet48|3", "wred_profile", ""), []string{"ECN leaf (100G)"}, ""},
		{"DWRR weight", editJSON(t, "SCHEDULER", "INOF_TC3", "weight", "30"), []string{"ETS"}, ""},
		{"TC6 not strict", editJSON(t, "SCHEDULER", "INOF_TC6", "type", "DWRR"), []string{"ETS", "CNP"}, ""},
		{"detection on Ethernet48", editJSON(t, "PFC_WD", "*", "detection_time", "400"), []string{"PFC watchdog"}, ""},
		{"poll interval", editJSON(t, "PFC_WD", "GLOBAL", "POLL_INTERVAL", "300"), []string{"PFC watchdog"}, ""},
		{"watchdog action", editJSON(t, "PFC_WD", "*", "action", "alert"), []string{"PFC watchdog"}, ""},
		{"spine headroom", editJSON(t, "BUFFER_PROFILE", "pg_lossless_100000_300m_profile", "size", "100000"), []string{"headroom spine"}, ""},
		{"lossless PG", editJSON(t, "TC_TO_PRIORITY_GROUP_MAP", "INOF", "3", "0"), []string{"headroom server", "headroom leaf", "headroom spine"}, ""},
	})
}

// TestSONiCBroadcomReadBack: Broadcom's xoff is the headroom read back.
func TestSONiCBroadcomReadBack(t *testing.T) {
	testReadBack(t, TargetSONiC, "broadcom", readSONiC, []readBackCase{
		{"leaf xoff", editJSON(t, "BUFFER_PROFILE", "pg_lossless_100000_40m_profile", "xoff", "30000"), []string{"headroom leaf"}, ""},
	})
}

// TestHuaweiReadBack: a wrong CloudEngine command shows in the check.
func TestHuaweiReadBack(t *testing.T) {
	testReadBack(t, TargetHuawei, "", readHuawei, []readBackCase{
		{"DSCP 24 to be", replaceLine(t, "ip-dscp-inbound 24 phb af3 green", "ip-dscp-inbound 24 phb be green"), []string{"DSCP → TC"}, ""},
		{"no PFC priority", replaceLine(t, " priority 3\n", " priority 4\n"), []string{"lossless priorities", "PFC watchdog"}, ""},
		{"no PFC on an interface", replaceLine(t, "dcb pfc enable mode manual", "undo dcb pfc enable"), nil, setDifferently},
		{"no PFC on the interfaces", replaceAll(t, "dcb pfc enable mode manual", "undo dcb pfc enable"), []string{"lossless priorities"}, ""},
		{"wrong Kmin", replaceLine(t, "low-limit 400000", "low-limit 40000"), allECN, ""},
		{"no ECN on 100GE1/0/2", replaceLine(t, " qos queue 3 ecn\n quit\ninterface 100GE1/0/25", " quit\ninterface 100GE1/0/25"), nil, setDifferently},
		{"no ECN", replaceAll(t, " qos queue 3 ecn\n", ""), allECN, ""},
		{"DRR weight", replaceAll(t, "qos queue 3 drr weight 50", "qos queue 3 drr weight 20"), []string{"ETS"}, ""},
		{"TC6 not strict", replaceAll(t, "qos pq 6", "qos pq 5"), []string{"ETS", "CNP"}, ""},
		{"detect time", replaceLine(t, "priority 3 deadlock-detect time 2", "priority 3 deadlock-detect time 3"), []string{"PFC watchdog"}, ""},
		{"recovery behavior", replaceLine(t, "recovery-behavior discard", "recovery-behavior forwarding"), []string{"PFC watchdog"}, ""},
		{"spine hdrm", replaceLine(t, "dcb pfc buffer 3 hdrm 135 kbytes", "dcb pfc buffer 3 hdrm 100 kbytes"), []string{"headroom spine"}, ""},
	})
}

// TestHuaweiTimerReadBack: the CE6866 family's global deadlock timers.
func TestHuaweiTimerReadBack(t *testing.T) {
	testReadBack(t, TargetHuawei, "ce6866", readHuawei, []readBackCase{
		{"recovery timer", replaceLine(t, "dcb pfc deadlock-recovery timer 200", "dcb pfc deadlock-recovery timer 20"), []string{"PFC watchdog"}, ""},
		{"trust 802.1p", replaceAll(t, " trust dscp", " trust 8021p outer"), []string{"DSCP → TC", "CNP"}, ""},
	})
}

// TestComwareReadBack: a wrong Comware command shows in the check, even
// where the unit is unconfirmed.
func TestComwareReadBack(t *testing.T) {
	testReadBack(t, TargetComware, "", readComware, []readBackCase{
		{"DSCP 24 to 802.1p 0", replaceLine(t, " import 24 export 3", " import 24 export 0"), []string{"DSCP → TC"}, ""},
		{"802.1p 3 to LP 0", replaceLine(t, " import 3 export 3", " import 3 export 0"), []string{"DSCP → TC"}, ""},
		{"no no-drop on HundredGigE1/0/1", replaceLine(t, " priority-flow-control no-drop dot1p 3\n", ""), nil, setDifferently},
		{"no no-drop", replaceAll(t, " priority-flow-control no-drop dot1p 3\n", ""),
			[]string{"lossless priorities", "PFC watchdog", "headroom server", "headroom leaf", "headroom spine"}, ""},
		{"wrong low limit", replaceLine(t, "drop-level 0 low-limit 2778", "drop-level 0 low-limit 277"), allECN, ""},
		{"no ECN", replaceLine(t, " queue 3 ecn\n", ""), allECN, ""},
		{"WFQ weight", replaceAll(t, "qos wfq 3 group 1 byte-count 1", "qos wfq 3 group 1 byte-count 3"), []string{"ETS"}, ""},
		{"TC6 in WFQ", replaceAll(t, "qos wfq 6 group sp", "qos wfq 6 group 1 byte-count 1"), []string{"ETS", "CNP"}, ""},
		{"deadlock interval", replaceLine(t, "deadlock cos 3 interval 2", "deadlock cos 3 interval 5"), []string{"PFC watchdog"}, ""},
		{"deadlock precision", replaceLine(t, "deadlock precision normal", "deadlock precision high"), []string{"PFC watchdog"}, ""},
		{"no deadlock detection", replaceAll(t, " priority-flow-control deadlock enable\n", ""), []string{"PFC watchdog"}, ""},
		{"leaf headroom", replaceLine(t, "priority-flow-control dot1p 3 headroom 569", "priority-flow-control dot1p 3 headroom 300"), []string{"headroom leaf"}, ""},
	})
}

// Text that is not a rendering gives an error naming what is wrong.
func TestSwitchReadBackErrors(t *testing.T) {
	for _, c := range []struct {
		target string
		read   func([]byte, renderInput) (Effective, error)
		text   string
		want   string
	}{
		{TargetSONiC, readSONiC, "{", "unexpected end"},
		{TargetSONiC, readSONiC, `{"PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,x"}}}`, "pfc_enable"},
		{TargetSONiC, readSONiC, `{"PORT_QOS_MAP": {"Ethernet0": {"dscp_to_tc_map": "M"}}, "DSCP_TO_TC_MAP": {"M": {"1": "9"}}}`, "DSCP_TO_TC_MAP"},
		{TargetSONiC, readSONiC, `{"PFC_WD": {"GLOBAL": {"POLL_INTERVAL": "0"}}}`, "POLL_INTERVAL"},
		{TargetHuawei, readHuawei, "dcb pfc\n priority 3\n", "not closed"},
		{TargetHuawei, readHuawei, "dcb pfc deadlock-detect interval 100\ndiffserv domain default\n ip-dscp-inbound 24 phb gold green\n quit\n", "phb gold"},
		{TargetHuawei, readHuawei, "system-view\n", "deadlock-detect interval"},
		{TargetComware, readComware, "qos map-table dot1p-lp\n import 3 export 9\n quit\n", "dot1p-lp"},
		{TargetComware, readComware, "priority-flow-control deadlock precision fast\n", "precision"},
		{TargetComware, readComware, "interface HundredGigE1/0/1\n priority-flow-control dot1p 3 headroom many\n quit\npriority-flow-control deadlock precision normal\n", "headroom many"},
	} {
		_, _, in := switchInput(t, c.target, "")
		_, err := c.read([]byte(c.text), in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want one with %q", c.target, c.text, err, c.want)
		}
	}
}

// FuzzReadSwitch: no text makes a reader panic.
func FuzzReadSwitch(f *testing.F) {
	for _, target := range []string{TargetSONiC, TargetHuawei, TargetComware} {
		r, err := RenderDevice(goldenProfile(target), target, RenderOptions{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(r.Text)
	}
	f.Add([]byte(`{"PFC_WD": {"GLOBAL": {"POLL_INTERVAL": "4294967295"}, "Ethernet0": {"detection_time": "18446744073709551615"}}}`))
	f.Add([]byte("interface 100GE1/0/1\n qos drr 0 3\n qos queue 3 drr weight 4294967295\n quit\n"))
	var ins []renderInput
	readers := []func([]byte, renderInput) (Effective, error){readSONiC, readHuawei, readComware}
	for _, target := range []string{TargetSONiC, TargetHuawei, TargetComware} {
		p := goldenProfile(target)
		pl, err := p.platformFor(target, "")
		if err != nil {
			f.Fatal(err)
		}
		q := p.ForPlatform(pl)
		plans, err := Compute(q)
		if err != nil {
			f.Fatal(err)
		}
		ins = append(ins, renderInput{p: q, pl: pl, plans: plans})
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		for i, read := range readers {
			if e, err := read(text, ins[i]); err == nil && len(e.ECN) != len(ins[i].plans) {
				t.Fatalf("%d port classes read as %d", len(ins[i].plans), len(e.ECN))
			}
		}
	})
}
