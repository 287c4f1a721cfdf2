package deploy

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/hostagent"
	"github.com/openinof/inof/app/reflector"
	"github.com/openinof/inof/app/switchagent"
	"github.com/openinof/inof/l2proto"
)

// deployDir is docs/deploy, from this package's directory.
const deployDir = "../../docs/deploy"

// requireTool returns the path of a command the test needs. Without it the
// test skips, except under CI, where .ci/run installs it and its absence is
// a failure.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed (Debian package %s; .ci/run installs it)", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install %s)", name, pkg)
	}
	return p
}

// recorder registers collectors into a real registry and notes the name of
// every metric they describe.
type recorder struct {
	*prometheus.Registry
	names map[string]bool
}

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registry.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// daemonMetrics builds the three daemons from the example configurations
// (nothing started, nothing opened but in-memory links) and returns every
// metric they describe and what their registries gather now: each
// labelled series is present from the start, so the label values are there.
func daemonMetrics(t *testing.T) (map[string]bool, *recorder) {
	t.Helper()
	rec := &recorder{Registry: prometheus.NewRegistry(), names: map[string]bool{}}
	p, err := daemon.Setup(os.Stderr, "inofd", daemon.DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if _, err := p.Registry.Gather(); err != nil {
		t.Fatal(err)
	}
	rec.names["inof_build_info"], rec.names["up"] = true, true // up: Prometheus's own
	load := func(file string, o daemon.Validator) {
		if err := daemon.Load(daemon.LoadOptions{File: filepath.Join(deployDir, file)}, o); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	ro := reflector.DefaultOptions()
	load("inofd-reflector.yaml", &ro)
	if _, err := reflector.New(reflector.Config{Options: ro, Registry: rec}); err != nil {
		t.Fatal(err)
	}
	so := switchagent.DefaultOptions()
	load("inofd-switch.yaml", &so)
	so.Discovery.Enabled = true
	if _, err := switchagent.New(switchagent.Config{Options: so, Registry: rec}); err != nil {
		t.Fatal(err)
	}
	ho := hostagent.DefaultOptions()
	load("inof-host.yaml", &ho)
	ho.HostNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
	links := map[string]l2proto.Link{}
	for i := range ho.Interfaces {
		ho.Interfaces[i].Address = fmt.Sprintf("10.99.0.%d", i+1)
		a, _ := l2proto.NewMemPair(ho.Interfaces[i].Name, net.HardwareAddr{2, 0, 0, 0, 0, byte(i)}, "sw", net.HardwareAddr{2, 1, 0, 0, 0, byte(i)})
		links[ho.Interfaces[i].Name] = a
	}
	if _, err := hostagent.New(hostagent.Config{Options: ho, Registry: rec, Links: links}); err != nil {
		t.Fatal(err)
	}
	return rec.names, rec
}

var (
	metricRef = regexp.MustCompile(`\b((?:inof_[a-z0-9_]+)|up)\b(\{[^}]*\})?`)
	matcher   = regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

// checkExpr checks that every metric an expression names exists, and that
// each equality matcher on a label the metric has names a value it takes.
func checkExpr(t *testing.T, where, expr string, names map[string]bool, values map[string]map[string][]string) {
	t.Helper()
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		base := name
		for _, sfx := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, sfx); ok && names[b] {
				base = b
			}
		}
		if !names[base] {
			t.Errorf("%s: no daemon has the metric %s (in %s)", where, name, expr)
			continue
		}
		for _, mm := range matcher.FindAllStringSubmatch(m[2], -1) {
			label, op, val := mm[1], mm[2], mm[3]
			known, has := values[base][label]
			if op != "=" || !has || strings.Contains(val, "$") {
				continue
			}
			if !slices.Contains(known, val) {
				t.Errorf("%s: %s{%s=%q}: the daemons use %q", where, base, label, val, known)
			}
		}
	}
}

// labelValues lists, per metric and label, the values the gathered series
// carry.
func labelValues(t *testing.T, g prometheus.Gatherer) map[string]map[string][]string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for _, mf := range mfs {
		byLabel := map[string][]string{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if !slices.Contains(byLabel[lp.GetName()], lp.GetValue()) {
					byLabel[lp.GetName()] = append(byLabel[lp.GetName()], lp.GetValue())
				}
			}
		}
		out[mf.GetName()] = byLabel
	}
	return out
}

// TestLabelValuesConsistent: every enumerated label value of the daemons'
// metrics is spelled one way, lowercase words joined by hyphens, as the
// API and the logs spell them (BFD "admin-down", drop reason
// "not-access-port", outcome "gave-up"); not_peer and gave_up were not.
func TestLabelValuesConsistent(t *testing.T) {
	_, rec := daemonMetrics(t)
	word := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := 0
	for name, labels := range labelValues(t, rec) {
		for label, vals := range labels {
			switch label {
			case "state", "reason", "outcome", "kind", "where", "deleted", "phase", "op", "result":
			default:
				continue // names of things: interfaces, addresses
			}
			for _, v := range vals {
				seen++
				if !word.MatchString(v) {
					t.Errorf("%s{%s=%q}: not a hyphenated lowercase word", name, label, v)
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d enumerated label values gathered: the series are not there from the start", seen)
	}
}

// TestAlertRules: promtool checks the rules and runs their unit tests
// (docs/deploy/prometheus/inof-alerts.test.yml); every metric and label
// value they use is one the daemons have.
func TestAlertRules(t *testing.T) {
	promtool := requireTool(t, "promtool", "prometheus")
	dir := filepath.Join(deployDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "inof-alerts.yml"}, {"test", "rules", "inof-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	names, rec := daemonMetrics(t)
	values := labelValues(t, rec)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr string
			}
		}
	}
	if err := readYAML(filepath.Join(dir, "inof-alerts.yml"), &rules); err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			checkExpr(t, "alert "+r.Alert, r.Expr, names, values)
		}
	}
	for _, want := range []string{"InofSwitchDown", "InofBFDFlapping", "InofNotificationsGivenUp", "InofReflectorAlone",
		"InofReplicationRefused", "InofStoreErrors", "InofHostFailoverErrors", "InofHostLastPathLost", "InofHostFailoverSlow",
		"InofHostNVMeFailures", "InofHostNVMeStuck", "InofDiscoveryConnectionsRefused", "InofDiscoveryRegistrationsRefused", "InofReflectorClockAhead"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
	// Every alert has a test case where it fires and one where it does not.
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	if err := readYAML(filepath.Join(dir, "inof-alerts.test.yml"), &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a] || !quiet[a] {
			t.Errorf("alert %s: a test case where it fires %v, one where it does not %v", a, fires[a], quiet[a])
		}
	}
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDashboard: the Grafana dashboard is valid JSON of a dashboard (ids,
// layout on the 24-column grid without overlaps, a query per panel on the
// dashboard's data source variable), its queries are valid PromQL
// (promtool, given them as recording rules), name only metrics and label
// values the daemons have, and cover what an operator watches.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "inof-fabric.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 || len(d.Panels) == 0 {
		t.Fatalf("dashboard header: title %q uid %q schema %d, %d panels", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	names, rec := daemonMetrics(t)
	values := labelValues(t, rec)
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			checkExpr(t, "variable "+v.Name, v.Definition, names, values)
		}
	}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]int{}
	var exprs []string
	used := map[string]bool{}
	for _, p := range d.Panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] || p.ID == 0 || p.Title == "" {
			t.Errorf("%s: id taken, zero or no title", where)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("%s: gridPos %+v off the 24-column grid", where, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if o, ok := taken[cell{x, y}]; ok {
					t.Errorf("%s overlaps panel %d at (%d, %d)", where, o, x, y)
				}
				taken[cell{x, y}] = p.ID
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || !vars["datasource"] {
			t.Errorf("%s: not on the dashboard's data source variable", where)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" {
				t.Errorf("%s: empty query", where)
				continue
			}
			checkExpr(t, where, q.Expr, names, values)
			exprs = append(exprs, q.Expr)
			for _, m := range metricRef.FindAllStringSubmatch(q.Expr, -1) {
				used[m[1]] = true
			}
		}
	}
	for _, want := range []string{"inof_switch_bgp_sessions", "inof_switch_bfd_sessions", "inof_switch_registrations",
		"inof_switch_notifications_total", "inof_switch_notification_ack_seconds_bucket", "inof_switch_device_records",
		"inof_reflector_config_commit_seconds_bucket", "inof_reflector_config_parts_refused_total",
		"inof_switch_device_records_refused_total", "inof_host_failovers_total", "inof_host_nvme_operations_total",
		"inof_host_failover_action_seconds_bucket",
		"inof_host_nvme_stuck", "inof_host_nvme_stuck_total", "inof_discovery_connections",
		"inof_discovery_registrations_total", "inof_discovery_connections_refused_total"} {
		if !used[want] {
			t.Errorf("the dashboard shows no %s", want)
		}
	}
	promtool := requireTool(t, "promtool", "prometheus")
	// promtool parses PromQL in rule files: each query becomes a recording
	// rule, Grafana's variables replaced by what they stand for.
	vr := strings.NewReplacer("$__rate_interval", "5m", "$switch", ".*", "$reflector", ".*", "$host", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(vr.Replace(e))
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("dashboard queries: %v\n%s", err, out)
	}
}
