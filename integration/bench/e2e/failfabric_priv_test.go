//go:build privileged

package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// The fabric of the failover benchmarks (docs/realhost.md): a target guest
// with a NIC on leaf1 and one on leaf2, and host guests, each reading its
// multipath device in a loop. An outage takes one of the target's paths
// away in some way (a link cut, a NIC gone silent, a switch lost, a zone
// change) and gives it back; per host it measures the longest gap between
// completed reads, when the host's path to the target's leaf1 address left
// live, and when it was live again, and from the logs where the time went.

// failoverHost is one host guest of the failover benchmarks and its policy.
type failoverHost struct {
	name, iopolicy string
	// keepAlive makes the agent leave the path to the kernel (failover
	// none, disconnect_on never): the baseline.
	keepAlive bool
	// single gives the host one NIC, on leaf1: its path to the target's
	// leaf1 address is its last path.
	single bool
	// lastPath is the agent's failover.last_path ("" the default, wait).
	lastPath string
}

func (h failoverHost) label() string {
	switch {
	case h.keepAlive:
		return "keep-alive only, " + h.iopolicy
	case h.single && h.lastPath != "":
		return "last_path " + h.lastPath
	case h.single:
		return "last_path wait"
	}
	return "inof-host defaults, " + h.iopolicy
}

// fabHost is a booted host of a failover fabric.
type fabHost struct {
	failoverHost
	n     *topo.Node
	meter *vm.IOStall
	addrs []string // its NICs' addresses, leaf1 first
}

// failFabric is a running failover fabric.
type failFabric struct {
	b       *testing.B
	f       *topo.Fabric
	tgt     *topo.Node
	t0, t1  string // the target's leaf1 and leaf2 addresses
	hosts   []*fabHost
	release string // the guests' kernel
	zoned   bool
}

// perKernel runs fn as a sub-benchmark on each guest kernel (labKernels)
// and writes the rows it returns, between rows of the machine's load
// (labelled with what), to BENCH_OUT as file.
func perKernel(b *testing.B, what, file string, fn func(b *testing.B, kernel string) []result.Row) {
	rows := []result.Row{machineRow(b, what+", start")}
	for _, kernel := range vm.EnvKernels() {
		name := kernel
		if name == "" {
			name = "default"
		}
		b.Run(name, func(b *testing.B) { rows = append(rows, fn(b, kernel)...) })
	}
	rows = append(rows, machineRow(b, what+", end"))
	writeRows(b, file, rows)
}

// startFailFabric boots the fabric on a guest kernel: one reflector, leaf1
// and leaf2 (BFD 300 ms × 10: the TCG guests keep the two cores busy),
// the target and the hosts; with zoned, all of them in zone z1 (else no
// zone: every host sees the target). It waits until every host has its
// paths live and reads its multipath device.
func startFailFabric(b *testing.B, kernel string, hosts []failoverHost, zoned bool) *failFabric {
	b.Helper()
	sws := []string{"leaf1", "leaf2"}
	tgt := topo.Device{Name: "tgt", VM: &topo.VM{Kernel: kernel}}
	for _, sw := range sws {
		tgt.NICs = append(tgt.NICs, topo.NIC{Switch: sw, Role: "target", Protocol: "tcp", Port: 4420, NQN: subNQN})
	}
	devs := []topo.Device{tgt}
	pol := map[string]failoverHost{}
	for _, h := range hosts {
		// ctrl_loss_tmo 60 s keeps a failed-over controller for its
		// return (the VM default of 5 s would have the kernel delete it
		// while the keep-alive host's outage lasts).
		d := topo.Device{Name: h.name, VM: &topo.VM{Kernel: kernel, CtrlLossTmo: 60}}
		for _, sw := range sws {
			d.NICs = append(d.NICs, topo.NIC{Switch: sw, Role: "host", Protocol: "tcp"})
			if h.single {
				break
			}
		}
		devs = append(devs, d)
		pol[h.name] = h
	}
	spec := withBFD(topo.Spec{Reflectors: []string{"rr1"}, Switches: sws, Devices: devs}, "300ms", 10, 0)
	spec.HostConfig = func(name string, cfg map[string]any) {
		cfg["registration_interval"] = "1s"
		cfg["registration_ttl"] = "4s"
		h := pol[name]
		switch {
		case h.keepAlive:
			cfg["disconnect_on"] = "never"
			cfg["failover"] = map[string]any{"method": "none"}
		case h.lastPath != "":
			cfg["failover"] = map[string]any{"last_path": h.lastPath}
		}
	}
	ff := &failFabric{b: b, f: topo.Start(b, spec), zoned: zoned}
	establish(b, ff.f)
	ff.tgt = ff.f.Node("tgt")
	ff.t0, ff.t1 = ff.tgt.Links[0].Addr().String(), ff.tgt.Links[1].Addr().String()
	if zoned {
		ok, err := topo.HasReflectorAPI()
		if err != nil || !ok {
			b.Skipf("reflector API not built (%v): zones cannot be defined", err)
		}
		args := []string{"create", "z1", ff.t0, ff.t1}
		for _, h := range hosts {
			for _, l := range ff.f.Node(h.name).Links {
				args = append(args, l.Addr().String())
			}
		}
		ff.zone(args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, h := range hosts {
		fh := &fabHost{failoverHost: h, n: ff.f.Node(h.name)}
		for _, l := range fh.n.Links {
			fh.addrs = append(fh.addrs, l.Addr().String())
		}
		ff.hosts = append(ff.hosts, fh)
		ff.startMeter(ctx, fh)
		if ff.release == "" {
			r, _ := fh.n.Guest().Sh(ctx, "uname -r")
			ff.release = strings.TrimSpace(r)
		}
	}
	b.Cleanup(func() {
		for _, h := range ff.hosts {
			stopMeter(h)
		}
	})
	return ff
}

// niceAgents sets the hosts' inof-host threads to the CPU priority
// INOF_BENCH_AGENT_NICE (a nice value; unset: leave them at 0).
func (ff *failFabric) niceAgents() {
	v := os.Getenv("INOF_BENCH_AGENT_NICE")
	if v == "" {
		return
	}
	if _, err := strconv.Atoi(v); err != nil {
		ff.b.Fatalf("INOF_BENCH_AGENT_NICE=%q: want a nice value", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, h := range ff.hosts {
		out, err := h.n.Guest().Sh(ctx, "for t in /proc/$(pidof inof-host)/task/*; do renice -n "+v+" -p ${t##*/}; done")
		if err != nil {
			ff.b.Fatalf("%s: renice: %v %s", h.name, err, out)
		}
	}
	ff.b.Logf("agents at nice %s", v)
}

// kern names the guests' kernel in row names and notes.
func (ff *failFabric) kern() string { return "Linux " + ff.release }

// paths are the target addresses a host has a path to.
func (ff *failFabric) paths(h *fabHost) []string {
	if h.single {
		return []string{ff.t0}
	}
	return []string{ff.t0, ff.t1}
}

// startMeter waits until the host's paths are live and starts its read
// loop on its multipath device (anew after an outage of every path: the
// agent may have removed the old device).
func (ff *failFabric) startMeter(ctx context.Context, h *fabHost) {
	b := ff.b
	b.Helper()
	for _, ta := range ff.paths(h) {
		if _, err := waitController(ctx, h.n.Guest(), ta, isLive); err != nil {
			b.Fatalf("%s: %v", h.name, err)
		}
	}
	nss, err := h.n.Guest().Namespaces(ctx)
	if err != nil || len(nss) != 1 {
		b.Fatalf("%s: namespaces %v (%v), want one multipath device", h.name, nss, err)
	}
	if _, err := h.n.Guest().Sh(ctx, "for p in /sys/class/nvme-subsystem/*/iopolicy; do echo "+h.iopolicy+" > $p; done"); err != nil {
		b.Fatal(err)
	}
	stopMeter(h)
	if h.meter, err = h.n.Guest().StartIOStall(ctx, "/dev/"+nss[0]); err != nil {
		b.Fatal(err)
	}
}

// stopMeter stops the host's read loop, waiting at most meterStop: a read
// stuck in the guest's kernel (no path, I/O queued) cannot be killed, and
// the loop is then left behind.
func stopMeter(h *fabHost) {
	if h.meter == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), meterStop)
	defer cancel()
	h.meter.Stop(ctx)
	h.meter = nil
}

const meterStop = 20 * time.Second

// zone runs inofctl zone ARGS... --yes and waits until every switch
// applied it.
func (ff *failFabric) zone(args ...string) time.Time {
	b := ff.b
	b.Helper()
	marks := map[*topo.Node]int{}
	for _, sw := range ff.f.Nodes(topo.KindSwitch) {
		marks[sw] = sw.LogSize()
	}
	at := time.Now()
	if _, err := ff.f.Node("rr1").Inofctl(append(append([]string{"zone"}, args...), "--yes")...); err != nil {
		b.Fatal(err)
	}
	for sw, mark := range marks {
		if _, err := sw.WaitLog(mark, `msg="zone configuration changed"`, wait); err != nil {
			b.Fatal(err)
		}
	}
	return at
}

// outage is one way to take the target's leaf1 path away and give it back.
type outage struct {
	name string
	// broken and mended name the break and the mend in row names
	// ("cut", "link up").
	broken, mended string
	// hits reports whether a host loses its path to the target's leaf1
	// address in this outage (the others are not measured).
	hits func(failoverHost) bool
	// allPaths: the outage takes every path of the host away, so reads
	// cannot go on until it is mended: the stall is not measured, and the
	// read errors are those until the path is live again (I/O fails fast
	// or waits, as the host's policy says).
	allPaths bool
	// exact: the path breaks at the time brk returns (the test cuts the
	// link itself); otherwise it breaks some time after (a command in a
	// guest, a switch's or a reflector's reaction).
	exact bool
	brk   func() time.Time
	mend  func() time.Time
}

// sample is what one host saw in one outage. The breakdown times are on
// the test's clock; zero when the logs do not say.
type sample struct {
	idle    time.Duration // the longest gap between completed reads in idleWindow before the outage
	stall   time.Duration // the gap between completed reads the outage caused (cutGap)
	window  time.Duration // the longest gap from the break until reads went on after the path left live
	errors  uint64
	notLive time.Duration // from the break until the leaf1 path was not live
	back    time.Duration // from the mend until it was live again
	broke   time.Time
	sent    time.Time // a switch sent the host its first inactive for t0
	heard   time.Time // the host's agent read that frame
	acted   time.Time // the agent's first action on the path (the TCP abort)
	resumed time.Time // the outage's gap ended
	mended  time.Time
	active  time.Time // a switch sent the host its first active for t0
	hurried time.Time // the agent began hurrying the kernel's reconnect (zero: it did not)
}

// idleWindow is how long each outage first watches the reads with nothing
// broken: the longest gap then is the machine's floor under the stall.
const idleWindow = 3 * time.Second

// slowStall: an outage whose stall is longer gets the host's kernel log in
// the benchmark's log.
const slowStall = time.Second

// The read meter lists every gap of minGap or more (its -record default);
// the gap an outage caused is the longest of them that ended after the
// break and began before break + atCut: the read on the broken path is in
// flight by then (one read at a time, each taking milliseconds). When the
// break's moment is not exact (outage.exact), it is the longest that began
// before the path left live (the read on it was sent while it was live).
// A later gap, which the machine's load alone causes as often (the
// floor), is not the outage's; the window row keeps those too.
const (
	minGap = 20 * time.Millisecond
	atCut  = 100 * time.Millisecond
)

// cutGap is the gap of r the outage that broke at (the test's clock)
// caused, the longest that ended after at and began before until, and
// when it ended; minGap and zero when none is listed (it was shorter).
// offset is the guest's clock ahead of the test's.
func cutGap(r vm.StallReport, at, until time.Time, offset time.Duration) (time.Duration, time.Time) {
	best, ended := minGap, time.Time{}
	for _, g := range r.Gaps {
		start, end := time.Unix(0, g.StartNS).Add(-offset), time.Unix(0, g.EndNS).Add(-offset)
		if end.After(at) && start.Before(until) && end.Sub(start) > best {
			best, ended = end.Sub(start), end
		}
	}
	return best, ended
}

// measure runs one outage and returns a sample per host (nil for the
// hosts it does not hit).
func (ff *failFabric) measure(o outage, i int) []*sample {
	b := ff.b
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	n := len(ff.hosts)
	out := make([]*sample, n)
	offsets := make([]time.Duration, n)
	marks, kmarks := make([]int, n), make([]int, n)
	// The floor: the longest gap between reads with nothing broken.
	for k, h := range ff.hosts {
		if o.hits(h.failoverHost) {
			out[k] = &sample{}
			if _, err := h.meter.Window(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	time.Sleep(idleWindow)
	for k, h := range ff.hosts {
		if out[k] == nil {
			continue
		}
		w, err := h.meter.Window(ctx)
		if err != nil {
			b.Fatal(err)
		}
		out[k].idle = time.Duration(w.MaxGapMS * float64(time.Millisecond))
		off, _, err := h.n.Guest().ClockOffset(ctx)
		if err != nil {
			b.Fatal(err)
		}
		offsets[k], marks[k], kmarks[k] = off, h.n.LogSize(), dmesgLines(ctx, h.n.Guest())
	}
	swMarks := map[*topo.Node]int{}
	for _, sw := range ff.f.Nodes(topo.KindSwitch) {
		swMarks[sw] = sw.LogSize()
	}
	at := o.brk()
	b.Logf("%s %d at %s", o.name, i, at.UTC().Format(time.RFC3339Nano))
	left := make([]time.Duration, n)
	before := make([]uint64, n)
	for done := 0; done < count(out); time.Sleep(20 * time.Millisecond) {
		for k, h := range ff.hosts {
			s := out[k]
			if s == nil || !s.broke.IsZero() {
				continue
			}
			p, err := controllerTo(ctx, h.n.Guest(), ff.t0)
			if err != nil {
				b.Fatal(err)
			}
			if o.allPaths {
				if p.State != "live" {
					s.broke, s.notLive = at, time.Since(at)
					done++
				}
				continue
			}
			r, err := h.meter.Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			switch {
			case left[k] == 0 && p.State != "live":
				left[k], before[k] = time.Since(at), r.Reads
			case left[k] != 0 && r.Reads > before[k]:
				w, err := h.meter.Window(ctx)
				if err != nil {
					b.Fatal(err)
				}
				s.broke, s.notLive = at, left[k]
				s.window, s.errors = time.Duration(w.MaxGapMS*float64(time.Millisecond)), w.Errors
				until := at.Add(atCut)
				if !o.exact {
					until = at.Add(s.notLive)
				}
				s.stall, s.resumed = cutGap(w, at, until, offsets[k])
				done++
			}
		}
		if time.Since(at) > 3*time.Minute {
			b.Fatalf("%s %d: the leaf1 path did not leave live, or reads did not go on, within 3 min on every host", o.name, i)
		}
	}
	up := o.mend()
	for _, s := range out {
		if s != nil {
			s.mended = up
		}
	}
	b.Logf("%s %d: mended at %s", o.name, i, up.UTC().Format(time.RFC3339Nano))
	seen := make([]bool, n)
	for waiting := count(out); waiting > 0; time.Sleep(20 * time.Millisecond) {
		for k, h := range ff.hosts {
			if out[k] == nil || seen[k] {
				continue
			}
			p, err := controllerTo(ctx, h.n.Guest(), ff.t0)
			if err != nil {
				b.Fatal(err)
			}
			if isLive(p) {
				seen[k], waiting = true, waiting-1
				out[k].back = time.Since(up)
				if o.allPaths {
					w, err := h.meter.Window(ctx)
					if err != nil {
						b.Fatal(err)
					}
					out[k].errors = w.Errors
				}
			}
		}
		if time.Since(up) > 3*time.Minute {
			b.Fatalf("%s %d: the leaf1 path not live on every host 3 min after the outage was mended", o.name, i)
		}
	}
	for k, h := range ff.hosts {
		s := out[k]
		if s == nil {
			continue
		}
		log := h.n.Log()[marks[k]:]
		s.heard, s.acted = agentTimes(log, ff.t0, h.addrs, offsets[k])
		s.hurried = hurriedTime(log, ff.t0, h.addrs, offsets[k])
		for sw, mark := range swMarks {
			if t, ok := notifyTime(sw.Log()[mark:], ff.t0, h.addrs, "inactive"); ok && (s.sent.IsZero() || t.Before(s.sent)) {
				s.sent = t
			}
			if t, ok := notifyTime(sw.Log()[mark:], ff.t0, h.addrs, "active"); ok && (s.active.IsZero() || t.Before(s.active)) {
				s.active = t
			}
		}
		if o.allPaths {
			ff.startMeter(ctx, h)
		}
	}
	// Where an outlier's time went: the host's kernel log of the outage
	// of an agent host (every outage of every host with INOF_LAB_DMESG).
	for k, h := range ff.hosts {
		if s := out[k]; s != nil && ((!h.keepAlive && s.stall > slowStall) || os.Getenv("INOF_LAB_DMESG") != "") {
			b.Logf("%s %d: %s: stall %s, kernel log (guest uptime):\n%s", o.name, i, h.name, ms(s.stall),
				dmesgSince(ctx, h.n.Guest(), kmarks[k], 80))
		}
	}
	var parts []string
	for k, h := range ff.hosts {
		if s := out[k]; s != nil {
			parts = append(parts, fmt.Sprintf("%s idle %s stall %s (window %s) not live %s back %s%s", h.name, ms(s.idle), ms(s.stall), ms(s.window), ms(s.notLive), ms(s.back), s.breakdown()))
		}
	}
	b.Logf("%s %d: %s", o.name, i, strings.Join(parts, "; "))
	return out
}

func count(s []*sample) int {
	n := 0
	for _, x := range s {
		if x != nil {
			n++
		}
	}
	return n
}

// breakdown says where a sample's stall and link-back time went, when the
// logs tell.
func (s *sample) breakdown() string {
	r := ""
	if !s.sent.IsZero() && !s.acted.IsZero() {
		r = fmt.Sprintf(" (switch sent +%s, agent read +%s, acted +%s", ms(s.sent.Sub(s.broke)), ms(s.heard.Sub(s.broke)), ms(s.acted.Sub(s.broke)))
		if !s.resumed.IsZero() {
			r += fmt.Sprintf(", reads went on +%s", ms(s.resumed.Sub(s.broke)))
		}
		r += ")"
	}
	if !s.active.IsZero() {
		r += fmt.Sprintf(" (back: switch sent active +%s", ms(s.active.Sub(s.mended)))
		if !s.hurried.IsZero() {
			r += fmt.Sprintf(", agent hurried the reconnect +%s", ms(s.hurried.Sub(s.mended)))
		}
		r += ")"
	}
	return r
}

var (
	failedOverLine = regexp.MustCompile(`time=(\S+) level=INFO msg="path failed over" path="tcp:([^:]+):\d+ from (\S+) [^"]*"[^\n]* notified_to_acted=(\S+) acted=(\S+) view=\S+ done=(\S+)`)
	notifyLine     = regexp.MustCompile(`time=(\S+) level=INFO msg=notify port=\S+ host=(\S+) target=(\S+) state=(\S+)`)
	pathBackLine   = regexp.MustCompile(`time=(\S+) level=INFO msg="path back: [^"]*" target=(\S+) host=(\S+) [^\n]* took=(\S+)`)
)

// hurriedTime is when the agent first began hurrying the kernel's
// reconnect of its path to target (Kernel.Rejoin), on the test's clock;
// zero when it did not.
func hurriedTime(log, target string, addrs []string, offset time.Duration) time.Time {
	for _, m := range pathBackLine.FindAllStringSubmatch(log, -1) {
		if m[2] != target || !slices.Contains(addrs, m[3]) {
			continue
		}
		end, err := time.Parse(time.RFC3339Nano, m[1])
		took, err1 := time.ParseDuration(m[4])
		if err == nil && err1 == nil {
			return end.Add(-took).Add(-offset)
		}
	}
	return time.Time{}
}

// agentTimes reads from an agent's log the first failover of its path to
// target (from any of its addresses): when the agent read the
// notification's frame and when it acted first, on the test's clock (the
// guest's clock is offset ahead).
func agentTimes(log, target string, addrs []string, offset time.Duration) (heard, acted time.Time) {
	for _, m := range failedOverLine.FindAllStringSubmatch(log, -1) {
		if m[2] != target || !slices.Contains(addrs, m[3]) {
			continue
		}
		end, err := time.Parse(time.RFC3339Nano, m[1])
		notified, err1 := time.ParseDuration(m[4])
		act, err2 := time.ParseDuration(m[5])
		done, err3 := time.ParseDuration(m[6])
		if err != nil || err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		// The line is written when the job is done: its start was done
		// before (the log time has millisecond resolution).
		acted = end.Add(-done + act).Add(-offset)
		return acted.Add(-notified), acted
	}
	return time.Time{}, time.Time{}
}

// notifyTime is when a switch's log first says it sent one of addrs a
// notification of state (active, inactive) for target.
func notifyTime(log, target string, addrs []string, state string) (time.Time, bool) {
	for _, m := range notifyLine.FindAllStringSubmatch(log, -1) {
		if m[3] == target && m[4] == state && slices.Contains(addrs, m[2]) {
			t, err := time.Parse(time.RFC3339Nano, m[1])
			return t, err == nil
		}
	}
	return time.Time{}, false
}

// outageRows turns the samples of one outage kind into the bench rows of
// group: per host policy the stall (unless every path went), the time
// until the path left live and until it was live again; for the agents,
// where the time went.
func (ff *failFabric) outageRows(group, what string, o outage, samples [][]*sample) []result.Row {
	b := ff.b
	var rows []result.Row
	kern := ff.kern()
	for k, h := range ff.hosts {
		var idle, stall, window, notLive, back, sent, heard, acted, resumed, active, hurried []time.Duration
		var errs uint64
		for _, s := range samples {
			x := s[k]
			if x == nil {
				continue
			}
			idle, stall, window = append(idle, x.idle), append(stall, x.stall), append(window, x.window)
			notLive, back = append(notLive, x.notLive), append(back, x.back)
			errs += x.errors
			if !x.active.IsZero() {
				active = append(active, x.active.Sub(x.mended))
				if !x.hurried.IsZero() {
					hurried = append(hurried, x.hurried.Sub(x.active))
				}
			}
			if !x.sent.IsZero() && !x.acted.IsZero() {
				sent, heard, acted = append(sent, x.sent.Sub(x.broke)), append(heard, x.heard.Sub(x.sent)), append(acted, x.acted.Sub(x.heard))
				if !x.resumed.IsZero() {
					resumed = append(resumed, x.resumed.Sub(x.acted))
				}
			}
		}
		if len(notLive) == 0 {
			continue
		}
		name := fmt.Sprintf("%s, %s (%s)", what, h.label(), kern)
		if !o.allPaths {
			began := "within " + atCut.String() + " of it"
			if !o.exact {
				began = "before the path left live"
			}
			rows = append(rows, durations(b, result.Row{Group: group, Name: name + ": longest gap between reads at the " + o.broken, Unit: "ms",
				Goal: "≤ 200 ms p99, 0 read errors", Note: fmt.Sprintf("%s; %d read errors in %d outages; the gap that ended after the %s and began %s (%s: none that long)",
					kern, errs, len(stall), o.broken, began, minGap)}, stall),
				durations(b, result.Row{Group: group, Name: name + ": longest gap between reads from the " + o.broken + " until reads went on after the path left live", Unit: "ms",
					Note: "the machine's own gaps in that time included (see the floor)"}, window),
				durations(b, result.Row{Group: group, Name: name + ": the floor, longest gap between reads in " + idleWindow.String() + " before it, nothing broken", Unit: "ms",
					Note: "what the machine alone costs the read loop (TCG guests on 2 shared cores)"}, idle))
		}
		note := kern
		if o.allPaths {
			note = fmt.Sprintf("%s; %d read errors in %d outages, until the path was live again", kern, errs, len(notLive))
		}
		rows = append(rows,
			durations(b, result.Row{Group: group, Name: name + ": " + o.broken + " → path not live", Unit: "ms", Goal: "≤ 1 s", Note: note}, notLive),
			durations(b, result.Row{Group: group, Name: name + ": " + o.mended + " → path live", Unit: "ms", Goal: "≤ 2 s", Note: kern}, back))
		if len(acted) > 0 {
			note := "from the switch's and the agent's logs and the read loop, guest clocks placed on the test's by a ping round trip (± a few ms)"
			rows = append(rows,
				durations(b, result.Row{Group: group, Name: name + ": of which " + o.broken + " → the switch sent the notification", Unit: "ms", Note: note}, sent),
				durations(b, result.Row{Group: group, Name: name + ": of which switch → the agent read it", Unit: "ms", Note: note}, heard),
				durations(b, result.Row{Group: group, Name: name + ": of which agent read → first action", Unit: "ms", Note: note}, acted))
			if len(resumed) > 0 {
				rows = append(rows, durations(b, result.Row{Group: group, Name: name + ": of which first action → reads went on", Unit: "ms", Note: note}, resumed))
			}
		}
		if len(active) > 0 {
			note := "from the switch's and the agent's logs, guest clocks placed on the test's by a ping round trip (± a few ms); the rest of the link-back time is the kernel's reconnect"
			rows = append(rows, durations(b, result.Row{Group: group, Name: name + ": of which " + o.mended + " → the switch sent active", Unit: "ms", Note: note}, active))
			if len(hurried) > 0 {
				rows = append(rows, durations(b, result.Row{Group: group, Name: name + ": of which active → the agent hurried the reconnect (outages where a connect was waiting)", Unit: "ms", Note: note}, hurried))
			}
		}
	}
	return rows
}
