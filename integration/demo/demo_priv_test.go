//go:build privileged

package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/integration/topo"
)

// TestMain builds the daemons only for the demo: `make test` compiles this
// package too, and must not pay for a build it does not use.
func TestMain(m *testing.M) {
	if os.Getenv("INOF_DEMO") != "1" {
		os.Exit(m.Run())
	}
	os.Exit(topo.Main(m))
}

const (
	// wait bounds every wait for something the fabric should do at once;
	// generous, because two shared cores may be busy.
	wait = 30 * time.Second
)

// demoSpec is the demo fabric (topo.DemoSpec, which integration/clab also
// renders as a containerlab lab) with the fake nvme-cli's calls timed.
func demoSpec(t *testing.T) topo.Spec {
	s := topo.DemoSpec()
	s.HostConfig = func(_ string, cfg map[string]any) { timeNVMe(t, cfg) }
	return s
}

// timeNVMe puts a wrapper in front of the harness's fake nvme-cli that
// notes the time of each call in $FAKE_NVME_DIR/timed-calls, so that the
// story can place the commands among the log lines; then it runs the fake.
func timeNVMe(t *testing.T, cfg map[string]any) {
	nvme, ok := cfg["nvme"].(map[string]any)
	if !ok {
		t.Fatalf("inof-host configuration without nvme: %v", cfg)
	}
	fake, ok := nvme["path"].(string)
	if !ok || strings.Contains(fake, "'") {
		t.Fatalf("unexpected nvme.path %v", nvme["path"])
	}
	wrapper := filepath.Join(filepath.Dir(fake), "timed-nvme")
	script := "#!/bin/sh\n" +
		"printf '%s %s\\n' \"$(date +%s.%N)\" \"$*\" >>\"${FAKE_NVME_DIR:?}/timed-calls\"\n" +
		"exec '" + fake + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatalf("timing wrapper: %v", err)
	}
	nvme["path"] = wrapper
}

// TestDemo is `make demo`. It is not a regression test: it runs only with
// INOF_DEMO=1, and prints a narrative of the fabric's life on stdout.
func TestDemo(t *testing.T) {
	if os.Getenv("INOF_DEMO") != "1" {
		t.Skip("the demo runs only with INOF_DEMO=1 (sudo make demo); it is not part of make test")
	}
	begin := time.Now()
	var nsNames []string
	// Registered before the fabric, so it runs after the fabric's teardown.
	t.Cleanup(func() { tornDown(t, nsNames, begin) })

	fmt.Printf("iNOF demo: two route reflectors, three leaf switch agents, two storage targets and four\n" +
		"hosts, each in its own network namespace, running the real inofd and inof-host. The hosts'\n" +
		"nvme-cli is a fake that records each command instead of touching NVMe: \"inof-host ran: nvme ...\"\n" +
		"below is the command line inof-host ran, with the node of the address it names after \"#\".\n")
	fmt.Printf("\n== 1. Fabric up (targets still off)\n")
	// leaf1 reads its port health from a SONiC COUNTERS_DB: a redis-server
	// the demo writes as the switch's syncd and PFC watchdog would.
	db := topo.StartCountersDB(t)
	spec := demoSpec(t)
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		if name == "leaf1" {
			cfg["port_health"] = map[string]any{"source": "sonic", "redis": db.Sock}
		}
	}
	f := topo.Start(t, spec)
	db.AddSwitch(f.Node("leaf1"))
	for _, k := range []topo.Kind{topo.KindReflector, topo.KindSwitch, topo.KindHost} {
		for _, n := range f.Nodes(k) {
			nsNames = append(nsNames, n.NS.Name)
		}
	}
	describe(t, f)
	s := newStory(f, begin)
	defer s.close()
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	rr1, rr2 := f.Node("rr1"), f.Node("rr2")
	s.printf("   live from here: `inofctl events --follow` on rr1 (lines \"rr1 event\"), and what the agents\n" +
		"   log and run; times are seconds since the demo began. `nvme list-subsys`, which inof-host runs\n" +
		"   before every action, is left out of the stream (the per-host summaries count it).\n")
	s.printf("   inofctl runs as printed in a shell of this machine while the demo runs, after\n"+
		"     export INOF_SERVER=unix://%s\n   (rr1's API socket; rr2's is named with --server).\n", rr1.APISocket())
	s.follow(t, rr1)
	if _, err := s.waitEvent(wait, 0, "session", "reflector", "established"); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	s.inofctl(t, rr1, "session", "list")

	s.step("2. Zones, defined with inofctl on rr1: red = tgtA (both NICs) + h1 + h2, blue = tgtB + h3 + h4")
	s.note("hard zoning is on by default: a host sees only the targets of its zones.")
	addr := func(node string, nic int) string { return f.Node(node).Links[nic].Addr().String() }
	createZone(t, s, f, "red", addr("tgtA", 0), addr("tgtA", 1), addr("h1", 0), addr("h2", 0))
	createZone(t, s, f, "blue", addr("tgtB", 0), addr("h3", 0), addr("h4", 0))
	s.note("the second reflector (same cluster-id) holds the same zones, replicated over BGP:")
	var zl string
	if err := topo.Poll(wait, func() (bool, error) {
		out, err := rr2.Inofctl("zone", "list")
		zl = out
		return err == nil && strings.Contains(out, "red") && strings.Contains(out, "blue"), err
	}); err != nil {
		t.Fatalf("rr2 never listed both zones: %v\n%s", err, zl)
	}
	s.printf("\n   $ %s\n%s", s.inofctlLine(rr2, "zone", "list"), indent(zl, "     "))

	s.step("3. The targets start: they register with their leaves, the leaves publish them, hosts are told and connect")
	tgtA, tgtB := f.Node("tgtA"), f.Node("tgtB")
	for _, n := range []*topo.Node{tgtA, tgtB} {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]*topo.Link{"h1": tgtA.Links, "h2": tgtA.Links, "h3": tgtB.Links, "h4": tgtB.Links}
	for h, links := range want {
		hn := f.Node(h)
		for _, l := range links {
			if _, err := hn.WaitNVMe(wait, "connect -t tcp -a "+l.Addr().String()+" "); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, l := range append(append([]*topo.Link{}, tgtA.Links...), tgtB.Links...) {
		if _, err := s.waitEvent(wait, 0, "record", "device joined", s.label[l.Addr().String()]+"(", "active"); err != nil {
			t.Fatal(err)
		}
	}
	s.flush()
	hostSummary(t, s, f, nil)
	s.inofctl(t, rr1, "device", "list")
	s.inofctl(t, rr1, "device", "why", addr("h3", 0), addr("tgtA", 0))

	s.step("4. Cut: tgtA's cable at leaf1 goes down (its leaf2 path stays up)")
	cut := tgtA.Links[0]
	calls, ev := callMarks(f), s.eventMark()
	hmarks := logMarks([]*topo.Node{f.Node("h1"), f.Node("h2")})
	s.note("setting port %s of leaf1 down (netlink, inside leaf1's namespace: both ends lose carrier)", cut.Port)
	cut.Cut(t)
	for h, m := range hmarks {
		if _, err := h.WaitLog(m, `msg="target inactive; [^\n]*target=`+cut.Addr().String()+` [^\n]*reason=link-down`, wait); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.waitEvent(wait, ev, "record", s.label[cut.Addr().String()]+"(", "inactive"); err != nil {
		t.Fatal(err)
	}
	other := tgtA.Links[1].Addr().String()
	for h, m := range hmarks {
		if strings.Contains(h.Log()[m:], "="+other+" ") || strings.Contains(h.Log()[m:], ":"+other+":") {
			t.Errorf("%s logged something about the leaf2 path %s after the cut:\n%s", h.Name, other, h.Log()[m:])
		}
	}
	s.note("reason 1 (link-down) is not a forced reason under disconnect_on: forced (docs/host-agent.md):")
	s.note("h1 and h2 keep the controller of that path; neither logged anything about the leaf2 path.")
	hostSummary(t, s, f, calls)

	s.step("5. Restore: the cable is back; tgtA registers again on leaf1 and the hosts are told it is active")
	calls, ev = callMarks(f), s.eventMark()
	hmarks = logMarks([]*topo.Node{f.Node("h1"), f.Node("h2")})
	s.note("setting port %s of leaf1 up; tgtA's inof-host reads carrier every second (carrier_poll)", cut.Port)
	cut.Restore(t)
	for h, m := range hmarks {
		if _, err := h.WaitLog(m, `msg="(controller exists; not connecting again|connected)" path="tcp:`+cut.Addr().String()+`:`, wait); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.waitEvent(wait, ev, "record", s.label[cut.Addr().String()]+"(", "device active"); err != nil {
		t.Fatal(err)
	}
	s.flush()
	hostSummary(t, s, f, calls)
	s.inofctl(t, rr1, "device", "list", "--zone", "red")

	s.step("6. PFC storm: leaf1's PFC watchdog reports tgtA's port stormed; the hosts fail that path over (reason 2)")
	calls, ev = callMarks(f), s.eventMark()
	hmarks = logMarks([]*topo.Node{f.Node("h1"), f.Node("h2")})
	s.note("leaf1 reads SONiC's COUNTERS_DB every 200 ms (port_health.source: sonic); writing PFC_WD_STATUS = stormed")
	s.note("on the queue of lossless priority 3 of port %s, as the watchdog does", cut.Port)
	db.SetStormed(cut.Port, true)
	for h, m := range hmarks {
		if _, err := h.WaitLog(m, `msg="target inactive; [^\n]*target=`+cut.Addr().String()+` [^\n]*reason=pfc-storm`, wait); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.waitEvent(wait, ev, "record", s.label[cut.Addr().String()]+"(", "inactive"); err != nil {
		t.Fatal(err)
	}
	for h, m := range hmarks {
		if strings.Contains(h.Log()[m:], "="+other+" ") || strings.Contains(h.Log()[m:], ":"+other+":") {
			t.Errorf("%s logged something about the leaf2 path %s during the storm:\n%s", h.Name, other, h.Log()[m:])
		}
	}
	s.note("the target stays registered (no hold-down): its record is inactive with reason pfc-storm; inof-host's")
	s.note("policy for reasons 2 and 3 is to fail I/O over onto a live sibling path, here leaf2's (docs/host-agent.md).")
	hostSummary(t, s, f, calls)
	calls, ev = callMarks(f), s.eventMark()
	s.note("the storm ends (PFC_WD_STATUS = operational); after the 200 ms recovery the path is active again")
	db.SetStormed(cut.Port, false)
	if _, err := s.waitEvent(wait, ev, "record", s.label[cut.Addr().String()]+"(", "active"); err != nil {
		t.Fatal(err)
	}
	s.flush()
	hostSummary(t, s, f, calls)

	s.step("7. Teardown: every daemon is stopped and every namespace (with its links) deleted")
	s.close()
}

// revision finds the revision in inofctl's "committed: revision R, …".
var revision = regexp.MustCompile(`committed: revision ([0-9a-f]+)`)

// createZone creates a zone with inofctl on rr1 and waits until the
// reflector's feed shows the commit and every switch applied it.
func createZone(t *testing.T, s *story, f *topo.Fabric, name string, members ...string) {
	t.Helper()
	marks := logMarks(f.Nodes(topo.KindSwitch))
	out := s.inofctl(t, f.Node("rr1"), append(append([]string{"zone", "create", name}, members...), "--yes")...)
	m := revision.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("inofctl zone create %s: no revision in %q", name, out)
	}
	if _, err := s.waitEvent(wait, 0, "zoning", m[1]); err != nil {
		t.Fatal(err)
	}
	for _, sw := range f.Nodes(topo.KindSwitch) {
		if _, err := sw.WaitLog(marks[sw], `msg="zone configuration changed" object="zone `+name+`"`, wait); err != nil {
			t.Fatal(err)
		}
	}
	s.flush()
}

// describe prints the fabric's nodes, addresses and cabling.
func describe(t *testing.T, f *topo.Fabric) {
	t.Helper()
	for _, r := range f.Nodes(topo.KindReflector) {
		b, err := os.ReadFile(r.ConfigPath())
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ClusterID string `yaml:"cluster_id"`
		}
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			t.Fatalf("%s configuration: %v", r.Name, err)
		}
		fmt.Printf("   %-6s route reflector   %s  cluster-id %s\n", r.Name, r.Addr, cfg.ClusterID)
	}
	for _, sw := range f.Nodes(topo.KindSwitch) {
		var ports []string
		for _, l := range sw.Links {
			ports = append(ports, l.Port+"→"+l.Device.Name)
		}
		fmt.Printf("   %-6s leaf switch agent %s  BGP+BFD to both reflectors; access ports %s\n", sw.Name, sw.Addr, strings.Join(ports, " "))
	}
	for _, d := range f.Nodes(topo.KindHost) {
		var nics []string
		for _, l := range d.Links {
			nics = append(nics, fmt.Sprintf("%s %s on %s:%s", l.IfName, l.Addr(), l.Switch.Name, l.Port))
		}
		role := "host  " + d.HostNQN()
		if l := d.Links[0]; l.Spec.Role == "target" {
			role = fmt.Sprintf("target %s (NVMe/TCP port %d)", l.Spec.NQN, l.Spec.Port)
		}
		fmt.Printf("   %-6s %s\n          %s\n", d.Name, role, strings.Join(nics, "; "))
	}
}

// waitRegistered waits until each switch holds a registration for every
// running inof-host cabled to it.
func waitRegistered(t *testing.T, f *topo.Fabric) {
	t.Helper()
	for _, sw := range f.Nodes(topo.KindSwitch) {
		want := 0
		for _, l := range sw.Links {
			if l.Device.Running() {
				want++
			}
		}
		if _, err := sw.WaitMetric(wait, func(v float64) bool { return v >= float64(want) }, "inof_switch_registrations"); err != nil {
			t.Fatal(err)
		}
	}
}

// logMarks is the current end of each node's log.
func logMarks(nodes []*topo.Node) map[*topo.Node]int {
	m := map[*topo.Node]int{}
	for _, n := range nodes {
		m[n] = n.LogSize()
	}
	return m
}

// hosts are the demo's hosts (not the targets), in order.
var hosts = []string{"h1", "h2", "h3", "h4"}

// callMarks is how many nvme commands each host ran so far.
func callMarks(f *topo.Fabric) map[string]int {
	m := map[string]int{}
	for _, h := range hosts {
		m[h] = len(f.Node(h).NVMeCalls())
	}
	return m
}

// hostSummary prints, per host, the notifications it counted (its own
// metrics) and the nvme commands it ran since since (all when nil).
func hostSummary(t *testing.T, s *story, f *topo.Fabric, since map[string]int) {
	t.Helper()
	s.printf("\n   per host (inof-host metrics; nvme commands %s):\n", map[bool]string{true: "in this step", false: "so far"}[since != nil])
	for _, h := range hosts {
		n := f.Node(h)
		act, err := n.Notifications("active")
		if err != nil {
			t.Fatal(err)
		}
		inact, err := n.Notifications("inactive")
		if err != nil {
			t.Fatal(err)
		}
		calls := n.NVMeCalls()
		calls = calls[min(since[h], len(calls)):]
		var ops []string
		for _, c := range calls {
			ops = append(ops, strings.Fields(c)[0])
		}
		ran := "none"
		if len(ops) > 0 {
			ran = strings.Join(ops, ", ")
		}
		s.printf("     %-3s notifications received: %v active, %v inactive; nvme commands: %s\n", h, act, inact, ran)
	}
}

// tornDown runs after the fabric's own cleanup: it checks that none of the
// demo's namespaces is left and prints the wall time.
func tornDown(t *testing.T, names []string, begin time.Time) {
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Errorf("ip netns list: %v: %s", err, out)
		return
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed[f[0]] = true
		}
	}
	var left []string
	for _, n := range names {
		if listed[n] {
			left = append(left, n)
		}
	}
	if len(left) > 0 {
		t.Errorf("namespaces left after teardown: %v", left)
		return
	}
	fmt.Printf("   all %d node namespaces are gone (ip netns list).\n\nThe demo took %.1fs.\n", len(names), time.Since(begin).Seconds())
}
