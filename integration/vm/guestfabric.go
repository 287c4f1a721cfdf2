package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
	"github.com/openinof/inof/internal/syncbuf"
)

// The parts every fabric built inside one guest shares: PathFabric here,
// and a topo.Spec realised whole in one guest (topo.Spec.InGuest), which
// builds any spec's nodes as namespaces with them.

// DaemonScript is a guest sh script that starts argv detached (setsid) in
// network namespace ns ("" is the guest's init namespace), writing the
// daemon's own pid to pidFile (sh execs ip, which execs argv) and appending
// its output to logFile. argv's words must not need quoting.
func DaemonScript(ns, pidFile, logFile string, argv ...string) string {
	cmd := strings.Join(argv, " ")
	if ns != "" {
		cmd = fmt.Sprintf("%s netns exec %s %s", GuestIP, ns, cmd)
	}
	return fmt.Sprintf("setsid sh -c 'echo $$ >%s; exec %s' </dev/null >>%s 2>&1 &\n", pidFile, cmd, logFile)
}

// A LinkScript is a guest sh script that cables a fabric in one guest:
// namespaces, veth pairs, and any lines the caller adds. It starts with
// set -e and $IP set to iproute2's ip (GuestIP).
type LinkScript struct {
	strings.Builder
	veths int
}

// NewLinkScript starts a LinkScript.
func NewLinkScript() *LinkScript {
	s := &LinkScript{}
	fmt.Fprintf(s, "set -e\nIP=%s\n", GuestIP)
	return s
}

// Namespace adds network namespace ns with its loopback up.
func (s *LinkScript) Namespace(ns string) {
	fmt.Fprintf(s, "$IP netns add %[1]s\n$IP -n %[1]s link set lo up\n", ns)
}

// Veth cables interface ifA of namespace nsA to ifB of nsB ("" is the
// init namespace), both up: a veth pair made in the init namespace under
// passing names, then moved and renamed.
func (s *LinkScript) Veth(nsA, ifA, nsB, ifB string) {
	s.veths++
	a, b := fmt.Sprintf("va%d", s.veths), fmt.Sprintf("vb%d", s.veths)
	fmt.Fprintf(s, "$IP link add dev %s type veth peer name %s\n", a, b)
	for _, e := range [][3]string{{a, nsA, ifA}, {b, nsB, ifB}} {
		if e[1] != "" {
			fmt.Fprintf(s, "$IP link set dev %s netns %s\n", e[0], e[1])
		}
		fmt.Fprintf(s, "%[1]s link set dev %[2]s name %[3]s\n%[1]s link set dev %[3]s up\n", IPIn(e[1]), e[0], e[2])
	}
}

// IPIn is the LinkScript command that runs ip in namespace ns ("" the
// init namespace).
func IPIn(ns string) string {
	if ns == "" {
		return "$IP"
	}
	return "$IP -n " + ns
}

// FabricStart is the order the daemons of a fabric in one guest start in,
// each entry a guest sh line that starts one in the background: the
// reflectors, the zone made on them (Zone, a ZoneCreateScript fragment),
// the switches, and once every one of SwitchLogs holds its ready line (a
// switch agent's start; with reflectors, the zone the reflector gave it)
// and a second more of guest time, the targets' agents and last the
// host's. A host agent's zone query that no switch hears is not repeated,
// and a switch tells a host that registers after a target nothing until it
// is asked: started together, the host never heard of the target on one
// leaf in 3 of 16 guests (docs/realhost.md, finding 6).
type FabricStart struct {
	Reflectors []string
	Zone       string
	Switches   []string
	SwitchLogs []string
	Targets    []string
	Host       string
}

// Script is the guest sh script that starts the fabric in that order.
func (f FabricStart) Script() string {
	var s strings.Builder
	fmt.Fprintf(&s, "set -e\nIP=%s\n", GuestIP)
	for _, l := range f.Reflectors {
		s.WriteString(l + "\n")
	}
	s.WriteString(f.Zone)
	for _, l := range f.Switches {
		s.WriteString(l + "\n")
	}
	ready := "switch agent starting"
	if len(f.Reflectors) > 0 {
		ready = "zone configuration changed"
	}
	if len(f.SwitchLogs) > 0 {
		s.WriteString(WaitLinesScript("switches did not start", ready, 450, f.SwitchLogs...) + "sleep 1\n")
	}
	for _, l := range f.Targets {
		s.WriteString(l + "\n")
	}
	if f.Host != "" {
		s.WriteString(f.Host + "\n")
	}
	return s.String()
}

// WaitLinesScript is a guest sh fragment that waits, in guest time, until
// every one of files holds a line containing text, and exits 1 saying what
// after tries × 0.1 s.
func WaitLinesScript(what, text string, tries int, files ...string) string {
	var conds []string
	for _, f := range files {
		conds = append(conds, fmt.Sprintf("grep -q '%s' %s", text, f))
	}
	return fmt.Sprintf("i=0; until %s; do\n  i=$((i+1)); [ $i -lt %d ] || { echo %s; exit 1; }; sleep 0.1\ndone\n",
		strings.Join(conds, " && "), tries, what)
}

// ZoneCreateScript is a guest sh fragment that creates zone (the
// members' addresses) with inofctl on the API socket api, retrying every
// 0.5 s of guest time until the API answers (45 s), as an admin would once
// the reflector runs.
func ZoneCreateScript(api, zone string, members []string) string {
	return fmt.Sprintf("i=0; until %s --server unix://%s zone create %s %s --yes >/tmp/inofctl.out 2>&1; do\n",
		GuestInofctl, api, zone, strings.Join(members, " ")) +
		"  i=$((i+1)); [ $i -lt 90 ] || { cat /tmp/inofctl.out; echo reflector API did not answer; exit 1; }; sleep 0.5\ndone\n"
}

// SetupTargetIn is SetupTarget inside network namespace ns, where nvmet
// then listens (ip netns exec mounts a fresh sysfs, without configfs: the
// script mounts it first).
func (g *Guest) SetupTargetIn(ctx context.Context, ns string, t Target) error {
	script, err := targetScript(t)
	if err != nil {
		return err
	}
	if _, err := g.Run(ctx, GuestIP, "netns", "exec", ns, "sh", "-c",
		"mount -t configfs none /sys/kernel/config && "+script); err != nil {
		return fmt.Errorf("vm: %s: target in %s: %w", g.Name, ns, err)
	}
	return nil
}

// A CutPlan is what the guest's cut runner (GuestCuts) does at each cut of
// the host's first path and at its restore.
type CutPlan struct {
	// Paths are the target addresses of the host's paths; the first is
	// the one cut. The runner waits until each has a live controller.
	Paths []netip.Addr
	// Links are switch ports, NETNS/IF, that the cut sets down and the
	// restore sets up again.
	Links []string
	// Kill is a pid file: the cut also SIGKILLs that process, after the
	// links are down.
	Kill string
	// CutSh is a shell command the cut runs after the links and the kill;
	// Restart one the restore runs once the links are up.
	CutSh, Restart string
	// UntilGone ends a cut's window when the path's controller is removed
	// (not when it leaves live); the restore waits for a new one.
	UntilGone bool
	// Notify are the logs of the host's agent, the switches and the
	// reflectors: each cut reports when the host was told.
	Notify []string
	// Rejoin, FILE:TEXT, makes the restore also wait for a new line of
	// FILE holding TEXT (CutReport.RejoinMS).
	Rejoin string
}

// Cuts runs the guest's cut runner with plan: it waits (in guest time)
// until every path is live, then makes o.N cuts (o.Outage is PathFabric's
// and not read here), measuring each in guest time. ctx is only a safety
// net in wall time (a deterministic guest runs at a few percent of real
// time: allow minutes per cut). It returns the reports and the runner's
// output.
func (g *Guest) Cuts(ctx context.Context, plan CutPlan, o CutOptions) ([]CutReport, string, error) {
	var paths []string
	for _, a := range plan.Paths {
		paths = append(paths, a.String())
	}
	argv := []string{GuestCuts, "-n", strconv.Itoa(o.N), "-paths", strings.Join(paths, ",")}
	for _, f := range []struct{ flag, v string }{{"-link", strings.Join(plan.Links, ",")}, {"-kill", plan.Kill},
		{"-cut-sh", plan.CutSh}, {"-restart", plan.Restart}, {"-notify", strings.Join(plan.Notify, ",")},
		{"-rejoin", plan.Rejoin}, {"-iopolicy", o.IOPolicy}} {
		if f.v != "" {
			argv = append(argv, f.flag, f.v)
		}
	}
	if plan.UntilGone {
		argv = append(argv, "-until-gone")
	}
	if o.Write {
		argv = append(argv, "-write")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"-settle", o.Settle}, {"-after", o.After}, {"-hold", o.Hold}, {"-back", o.Back}, {"-ready", o.Ready}} {
		if d.v > 0 {
			argv = append(argv, d.flag, d.v.String())
		}
	}
	out := &syncbuf.Buffer{}
	proc, err := g.Start(ctx, argv, out)
	if err != nil {
		return nil, "", err
	}
	// Wait for the runner; a kernel oops on the console ends the wait
	// (the runner may never finish then).
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-proc.Done():
			done = true
		case <-ctx.Done():
			proc.Signal(context.Background(), syscall.SIGKILL)
			return nil, out.String(), fmt.Errorf("vm: %s: cuts: %w", g.Name, ctx.Err())
		case <-tick.C:
			if oops := KernelOops(g.Console()); oops != "" {
				return nil, out.String(), fmt.Errorf("vm: %s: kernel oops during the cuts:\n%s", g.Name, oops)
			}
		}
	}
	code, err := proc.Wait(ctx)
	if err != nil {
		return nil, out.String(), fmt.Errorf("vm: %s: cuts: %w", g.Name, err)
	}
	var reps []CutReport
	for _, l := range strings.Split(out.String(), "\n") {
		if j, ok := strings.CutPrefix(l, ctlproto.CutLinePrefix); ok {
			var r CutReport
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				return reps, out.String(), fmt.Errorf("vm: cuts: %q: %w", l, err)
			}
			reps = append(reps, r)
		}
	}
	if code != 0 || !strings.Contains(out.String(), ctlproto.CutsDone) {
		return reps, out.String(), fmt.Errorf("vm: %s: cuts exited %d:\n%s", g.Name, code, truncate(out.String(), 2000))
	}
	return reps, out.String(), nil
}

// KernelOops returns the console from the first kernel oops or BUG line
// on (at most 40 lines), "" when there is none.
func KernelOops(console string) string {
	i := strings.Index(console, "BUG: ")
	if j := strings.Index(console, "Oops: "); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return ""
	}
	l := strings.Split(console[i:], "\n")
	if len(l) > 40 {
		l = l[:40]
	}
	return strings.Join(l, "\n")
}

// Grep counts the lines of a guest file (a daemon's log) that contain s.
func (g *Guest) Grep(ctx context.Context, file, s string) (int, error) {
	r, err := g.Run(ctx, "grep", "-c", "-F", s, file)
	if err != nil {
		return 0, err
	}
	if r.Code > 1 {
		return 0, fmt.Errorf("vm: grep %s: exit %d: %s", file, r.Code, bytes.TrimSpace(r.Stderr))
	}
	return strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
}

// Diagnose is the end of each of files (the daemons' logs in the guest)
// and of the console, for a failure's message.
func (g *Guest) Diagnose(ctx context.Context, files ...string) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "--- %s:\n%s", f, g.Tail(ctx, f, 25))
	}
	l := strings.Split(strings.TrimRight(g.Console(), "\n"), "\n")
	if len(l) > 30 {
		l = l[len(l)-30:]
	}
	fmt.Fprintf(&b, "--- console:\n%s\n", strings.Join(l, "\n"))
	return b.String()
}

// Tail is the end of a guest file (a daemon's log).
func (g *Guest) Tail(ctx context.Context, file string, lines int) string {
	r, err := g.Run(ctx, "tail", "-n", strconv.Itoa(lines), file)
	if err != nil {
		return err.Error()
	}
	return string(r.Stdout)
}
