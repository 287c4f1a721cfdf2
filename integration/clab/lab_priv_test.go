//go:build privileged

package clab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
)

const (
	// wait bounds every wait for something the fabric should do at once;
	// generous, because two shared cores may be busy with other tests.
	wait = 30 * time.Second
	// buildTimeout bounds the image build alone: on a fresh clone it compiles
	// the binaries, ~12 s on a quiet machine and near 3 min under load.
	buildTimeout = 10 * time.Minute
	// deployTimeout bounds containerlab deploy, and destroy, each on its own.
	deployTimeout = 3 * time.Minute
)

// env is what every containerlab command runs with: no version check (it
// would try to reach the internet).
var env = append(os.Environ(), "CLAB_VERSION_CHECK=disable")

// running is a deployed lab: its rendered description and how to reach
// its containers.
type running struct {
	t   *testing.T
	lab *Lab
}

// exec runs a command in a node's container and returns its combined
// output.
func (r *running) exec(node string, args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"exec", r.lab.Container(node)}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker exec %s %s: %w: %s", node, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// log is a node's container log so far (the daemon's output).
func (r *running) log(node string) string {
	out, err := exec.Command("docker", "logs", r.lab.Container(node)).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("docker logs %s: %v: %s", node, err, out)
	}
	return string(out)
}

// waitLog waits until the node's log after byte offset since matches re.
func (r *running) waitLog(node string, since int, re string) (string, error) {
	rx := regexp.MustCompile(re)
	var m string
	err := topo.Poll(wait, func() (bool, error) {
		l := r.log(node)
		if since > len(l) {
			since = len(l)
		}
		m = rx.FindString(l[since:])
		return m != "", fmt.Errorf("%s logged no %q", node, re)
	})
	return m, err
}

// metric scrapes a node's /metrics from inside its container.
func (r *running) metric(node, listen, name string, labels ...string) (float64, error) {
	body, err := r.exec(node, "wget", "-q", "-O", "-", "http://"+listen+"/metrics")
	if err != nil {
		return 0, err
	}
	m, err := topo.ParseMetrics(body)
	if err != nil {
		return 0, err
	}
	v, _ := m.Sum(name, labels...)
	return v, nil
}

// waitMetric polls a metric until cond holds.
func (r *running) waitMetric(node, listen string, cond func(float64) bool, name string, labels ...string) error {
	return topo.Poll(wait, func() (bool, error) {
		v, err := r.metric(node, listen, name, labels...)
		if err != nil {
			return false, err
		}
		return cond(v), fmt.Errorf("%s: %s%v = %v", node, name, labels, v)
	})
}

// nvmeCalls are a device's fake nvme invocations so far.
func (r *running) nvmeCalls(node string) []string {
	out, err := r.exec(node, "cat", NVMeCalls)
	if err != nil || strings.TrimSpace(out) == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// waitNVMe waits until a device ran nvme with arguments starting with
// prefix.
func (r *running) waitNVMe(node, prefix string) error {
	return topo.Poll(wait, func() (bool, error) {
		calls := r.nvmeCalls(node)
		return count(calls, prefix) > 0, fmt.Errorf("%s: no nvme %q; calls so far: %q", node, prefix, calls)
	})
}

// count returns how many calls start with prefix.
func count(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// keptLine matches inof-host's log line for an inactive notification it
// keeps the controller for (as integration/fabric's scenarios).
func keptLine(target, reason string) string {
	return `msg="target inactive; controller kept for multipath and keep-alive"[^\n]* target=` +
		regexp.QuoteMeta(target) + ` [^\n]*reason=` + reason
}

// TestPrivClabLab deploys LabSpec (the checked-in lab) with containerlab on Docker and
// runs, inside the containers, what integration/fabric asserts in
// namespaces: the BGP sessions come up; zones defined with inofctl on rr1
// reach every switch (and rr2); the targets start and the hosts of their
// zone connect to every path, once, while the hosts of the other zone hear
// nothing of them; tgtA's cable at leaf1 is cut and the red hosts are told
// reason 1 (link-down) for that path only and keep the controller (no
// disconnect, as docs/host-agent.md says for disconnect_on: forced);
// restored, they are told it is active again. The lab is destroyed at the
// end, also on failure, when the containers' logs are printed first.
//
// It needs docker (Debian's docker.io) and containerlab; when `docker info`
// fails it starts dockerd itself and stops it (by pid) at the end. Starting
// dockerd sets the root namespace's iptables FORWARD policy to DROP and
// turns on br_netfilter; stopping it does not undo that, which the
// namespace tests do not mind (their bridges are in their own namespaces).
func TestPrivClabLab(t *testing.T) {
	netns.RequireRoot(t)
	for _, bin := range []struct{ name, how string }{
		{"docker", "apt-get install docker.io"},
		{"containerlab", "xz -dc ../shared/tools/containerlab/containerlab.xz > /usr/local/bin/containerlab"},
	} {
		if _, err := exec.LookPath(bin.name); err != nil {
			t.Fatalf("%s not found (%v); install it: %s", bin.name, err, bin.how)
		}
	}
	begin := time.Now()
	EnsureDocker(t)
	tag := fmt.Sprintf("inof-lab:test-%d", os.Getpid())
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), buildTimeout)
	err := BuildImage(buildCtx, ImageOptions{Tag: tag})
	cancelBuild()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", "-f", tag).CombinedOutput(); err != nil {
			t.Errorf("docker rmi %s: %v: %s", tag, err, out)
		}
	})
	t.Logf("image %s built in %v", tag, time.Since(begin).Round(time.Millisecond))

	spec := LabSpec()
	lab, err := Render(spec, Options{Name: fmt.Sprintf("inof-t%d", os.Getpid()), Image: tag})
	if err != nil {
		t.Fatal(err)
	}
	file, err := lab.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &running{t: t, lab: lab}
	t.Cleanup(func() { r.destroy(file) })
	deployed := time.Now()
	deployCtx, cancelDeploy := context.WithTimeout(context.Background(), deployTimeout)
	out, err := clab(deployCtx, "deploy", "-t", file)
	cancelDeploy()
	if err != nil {
		t.Fatalf("containerlab deploy: %v\n%s", err, out)
	}
	t.Logf("containerlab deploy of %d nodes and %d links took %v", len(lab.Nodes), len(lab.Nodes)-1+len(lab.Links),
		time.Since(deployed).Round(time.Millisecond))

	// Sessions: every reflector has every switch as an established client.
	for _, rr := range spec.Reflectors {
		if err := r.waitMetric(rr, InofdMetrics, func(v float64) bool { return v == float64(len(spec.Switches)) },
			"inof_reflector_sessions", "kind", "client", "state", "established"); err != nil {
			t.Fatal(err)
		}
	}
	// Registrations: each switch holds one for every running host on it.
	for _, sw := range spec.Switches {
		want := 0
		for _, l := range lab.Links {
			if l.Switch == sw && !nodePassive(lab, l.Device) {
				want++
			}
		}
		if err := r.waitMetric(sw, InofdMetrics, func(v float64) bool { return v >= float64(want) }, "inof_switch_registrations"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("sessions established and hosts registered %v after deploy", time.Since(deployed).Round(time.Millisecond))

	addr := func(dev string, k int) string { return lab.Link(dev, k).Prefix.Addr().String() }
	zones := map[string][]string{
		"red":  {addr("tgtA", 0), addr("tgtA", 1), addr("h1", 0), addr("h2", 0)},
		"blue": {addr("tgtB", 0), addr("h3", 0), addr("h4", 0)},
	}
	marks := map[string]int{}
	for _, sw := range spec.Switches {
		marks[sw] = len(r.log(sw))
	}
	for _, z := range []string{"red", "blue"} {
		if out, err := r.exec("rr1", append([]string{"inofctl", "zone", "create", z}, append(zones[z], "--yes")...)...); err != nil {
			t.Fatal(err)
		} else {
			t.Logf("rr1$ inofctl zone create %s %s --yes\n%s", z, strings.Join(zones[z], " "), out)
		}
	}
	for _, sw := range spec.Switches {
		for _, z := range []string{"red", "blue"} {
			if _, err := r.waitLog(sw, marks[sw], `msg="zone configuration changed"[^\n]*`+z); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := topo.Poll(wait, func() (bool, error) {
		out, err := r.exec("rr2", "inofctl", "zone", "list")
		return err == nil && strings.Contains(out, "red") && strings.Contains(out, "blue"), fmt.Errorf("rr2 zone list: %v %s", err, out)
	}); err != nil {
		t.Fatal(err)
	}

	// Discovery: the passive targets start; each host connects to every
	// path of its zone's target, once.
	for _, tgt := range []string{"tgtA", "tgtB"} {
		if _, err := r.exec(tgt, "touch", StartFile); err != nil {
			t.Fatal(err)
		}
	}
	started := time.Now()
	zoneTargets := map[string][]string{
		"h1": {addr("tgtA", 0), addr("tgtA", 1)}, "h2": {addr("tgtA", 0), addr("tgtA", 1)},
		"h3": {addr("tgtB", 0)}, "h4": {addr("tgtB", 0)},
	}
	otherTargets := map[string][]string{"h1": zoneTargets["h3"], "h2": zoneTargets["h3"], "h3": zoneTargets["h1"], "h4": zoneTargets["h1"]}
	nqn := map[string]string{"h1": topo.DemoRedNQN, "h2": topo.DemoRedNQN, "h3": topo.DemoBlueNQN, "h4": topo.DemoBlueNQN}
	connect := func(h, target string) string {
		return fmt.Sprintf("connect -t tcp -a %s -s 4420 -w %s -n %s -q %s", target, addr(h, 0), nqn[h],
			topo.DeviceHostNQN(device(spec, h)))
	}
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		for _, tg := range zoneTargets[h] {
			if err := r.waitNVMe(h, connect(h, tg)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("every host connected to its zone's target paths %v after the targets started", time.Since(started).Round(time.Millisecond))
	for _, h := range []string{"h1", "h2", "h3", "h4"} {
		calls := r.nvmeCalls(h)
		for _, tg := range zoneTargets[h] {
			if n := count(calls, connect(h, tg)); n != 1 {
				t.Errorf("%s ran nvme connect to %s %d times, want 1: %q", h, tg, n, calls)
			}
		}
		if n, err := r.metric(h, HostMetrics, "inof_host_notifications_received_total", "state", "active"); err != nil || n < float64(len(zoneTargets[h])) {
			t.Errorf("%s: %v active notifications (%v), want at least %d", h, n, err, len(zoneTargets[h]))
		}
	}
	isolated := func(when string) {
		for _, h := range []string{"h1", "h2", "h3", "h4"} {
			log, calls := r.log(h), strings.Join(r.nvmeCalls(h), "\n")
			for _, tg := range otherTargets[h] {
				if strings.Contains(log, "="+tg+" ") || strings.Contains(log, ":"+tg+":") || strings.Contains(calls, " "+tg+" ") {
					t.Errorf("%s: %s heard of %s, a target of another zone:\n%s\n%s", when, h, tg, log, calls)
				}
			}
		}
	}
	isolated("after discovery")

	// Link cut: tgtA's cable at leaf1 goes down at the switch's access
	// port. h1 and h2 hear reason 1 for that path only and keep the
	// controller.
	cut, other := lab.Link("tgtA", 0), addr("tgtA", 1)
	hmarks := map[string]int{"h1": len(r.log("h1")), "h2": len(r.log("h2"))}
	inactive := map[string]float64{}
	for h := range hmarks {
		if inactive[h], err = r.metric(h, HostMetrics, "inof_host_notifications_received_total", "state", "inactive"); err != nil {
			t.Fatal(err)
		}
	}
	cutAt := time.Now()
	if _, err := r.exec(cut.Switch, "ip", "link", "set", cut.Port, "down"); err != nil {
		t.Fatal(err)
	}
	for h, m := range hmarks {
		line, err := r.waitLog(h, m, keptLine(cut.Prefix.Addr().String(), "link-down"))
		if err != nil {
			t.Fatal(err)
		}
		if at, err := logTime(r.lineOf(h, line)); err == nil {
			t.Logf("%s told of the cut (reason 1, link-down) %v after the port went down", h, at.Sub(cutAt).Round(time.Millisecond))
		}
	}
	// h3 shares leaf2 (tgtA's other path) and h4 leaf1 with the red hosts:
	// once those heard of the cut, the switches have decided for them too.
	for h, m := range hmarks {
		calls := r.nvmeCalls(h)
		if n := count(calls, "disconnect"); n != 0 {
			t.Errorf("%s ran nvme disconnect after reason 1: %q", h, calls)
		}
		if n, err := r.metric(h, HostMetrics, "inof_host_notifications_received_total", "state", "inactive"); err != nil || n != inactive[h]+1 {
			t.Errorf("%s: %v inactive notifications (%v), want %v", h, n, err, inactive[h]+1)
		}
		if l := r.log(h)[m:]; strings.Contains(l, "="+other+" ") || strings.Contains(l, ":"+other+":") {
			t.Errorf("%s logged something about the leaf2 path %s after the cut:\n%s", h, other, l)
		}
	}
	isolated("after the cut")

	// Restore: the cable is back; tgtA registers again on leaf1 and the red
	// hosts act on the active notification (their controller exists).
	for h := range hmarks {
		hmarks[h] = len(r.log(h))
	}
	if _, err := r.exec(cut.Switch, "ip", "link", "set", cut.Port, "up"); err != nil {
		t.Fatal(err)
	}
	for h, m := range hmarks {
		if _, err := r.waitLog(h, m, `msg="(controller exists; not connecting again|connected)" path="tcp:`+regexp.QuoteMeta(cut.Prefix.Addr().String())+`:`); err != nil {
			t.Fatal(err)
		}
	}
	isolated("after the restore")
	t.Logf("lab scenario done %v after the test began", time.Since(begin).Round(time.Millisecond))
}

// lineOf returns the whole log line of node that contains match.
func (r *running) lineOf(node, match string) string {
	for _, l := range strings.Split(r.log(node), "\n") {
		if strings.Contains(l, match) {
			return l
		}
	}
	return ""
}

// timeRE is slog's time= field.
var timeRE = regexp.MustCompile(`(?:^| )time=(\S+)`)

// logTime returns when a daemon logged a line.
func logTime(line string) (time.Time, error) {
	m := timeRE.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, fmt.Errorf("no time= in %q", line)
	}
	return time.Parse(time.RFC3339Nano, m[1])
}

// device returns the Spec's device of that name.
func device(spec topo.Spec, name string) topo.Device {
	for _, d := range spec.Devices {
		if d.Name == name {
			return d
		}
	}
	return topo.Device{}
}

// nodePassive reports whether a lab node waits to be started.
func nodePassive(lab *Lab, name string) bool {
	for _, n := range lab.Nodes {
		if n.Name == name {
			return n.Passive
		}
	}
	return false
}

// clab runs a containerlab command.
func clab(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "containerlab", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// destroy prints every container's log and the hosts' nvme calls when the
// test failed, then destroys the lab (containers, links, lab directory).
func (r *running) destroy(file string) {
	if r.t.Failed() {
		for _, n := range r.lab.Nodes {
			l := strings.Split(strings.TrimRight(r.log(n.Name), "\n"), "\n")
			if len(l) > 80 {
				l = append([]string{fmt.Sprintf("… %d lines before", len(l)-80)}, l[len(l)-80:]...)
			}
			r.t.Logf("clab: log of %s:\n%s", r.lab.Container(n.Name), strings.Join(l, "\n"))
			if n.Role == RoleDevice {
				r.t.Logf("clab: nvme calls of %s:\n%s", n.Name, strings.Join(r.nvmeCalls(n.Name), "\n"))
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout)
	defer cancel()
	if out, err := clab(ctx, "destroy", "-t", file, "--cleanup"); err != nil {
		r.t.Errorf("containerlab destroy: %v\n%s", err, out)
	}
}
