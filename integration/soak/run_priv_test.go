//go:build privileged

package soak

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/zones"
)

// Timing of the fabric the soak runs and of its checks.
const (
	// settleTimeout bounds a check after the step's last heal: the slowest
	// legitimate convergence is a restart (graceful-restart settle 10 s,
	// the agent's settle 10 s) plus a registration refresh (5 s).
	settleTimeout = 60 * time.Second
	// midTimeout bounds a check while faults still hold.
	midTimeout = 30 * time.Second
	// grSettle is how long a speaker holds the withdraws of a neighbor
	// that came back (GracefulRestart.SettleTime, the daemons' default),
	// plus a margin: a step whose sessions came back is watched that long.
	grSettle = 11 * time.Second
	// lldpTTL and lldpEvery are the probes' registration TTL and refresh
	// (nvme-snsd's 120 s and 30 s, scaled down so registrations lost with a
	// crashed agent come back within a check).
	lldpTTL   = 20 * time.Second
	lldpEvery = 5 * time.Second
	// ageOutTTL is the TTL of the last registration an AgeOut sends.
	ageOutTTL = 3 * time.Second
	// maxFailedSteps ends a run after that many steps with findings.
	maxFailedSteps = 5
)

// run is one soak run: the fabric, its model and what was seen.
type run struct {
	t      *testing.T
	seed   uint64
	lay    *Layout
	f      *topo.Fabric
	m      *Model
	rec    *Recorder
	hist   *History
	probes []*topo.Probe // per NIC, as Layout.NICs
	// needQuery marks host NICs whose zone query is still to be sent (it
	// registered while its link was down).
	needQuery []bool
	stores    map[string]string       // reflector → its store's file system (tmpfs)
	clocks    map[string]string       // reflector → its clock offset file (clockshift)
	impaired  map[string]func() error // node → removes its impairment
	log       *os.File                // soak.log in the fabric's directory

	stats  Stats
	step   int
	failed int             // steps with findings
	known  map[string]bool // divergences reported already (not counted again)
	// errs are the run's failures as reported, printed again once the
	// fabric's logs are out (errorf).
	errs []string

	// per step
	since      time.Time      // the step's last action
	marks      map[string]int // log offsets at the step's start
	restarted  map[string]int // switch → its log offset when it started again
	induced    map[string]bool
	sessions   map[string]string // reflector → its sessions at the step's start
	edited     bool              // a zoning edit was made: read back
	recorderWG sync.WaitGroup
	stop       chan struct{}
}

// Stats are a run's counts.
type Stats struct {
	Faults    map[Kind]int
	Steps     int
	Checks    int
	Settle    []time.Duration // fault (last action) → oracle agreeing, full checks
	MidSettle []time.Duration // the same while faults held
	// Whole is, for full checks, from the last action to the end of the
	// check's wait: the oracle agreeing and the fabric whole again.
	Whole []time.Duration
	// StepTime is each step's wall time, faults to the end of its check.
	StepTime    []time.Duration
	Findings    map[string]int
	Spontaneous int // BFD losses of a switch the harness did not cause
	Notices     int
}

// startRun brings the fabric up, registers the probes, applies the
// layout's zoning and waits until every host was told what the oracle
// says.
func startRun(t *testing.T, seed uint64) *run {
	t.Helper()
	netns.RequireRoot(t)
	if ok, err := topo.HasSwitchRole(); err != nil || !ok {
		t.Fatalf("inofd has no switch role (%v)", err)
	}
	if ok, err := topo.HasReflectorAPI(); err != nil || !ok {
		t.Fatalf("reflector has no API (%v)", err)
	}
	netns.RequireTool(t, "iptables")
	lay := DefaultLayout()
	r := &run{t: t, seed: seed, lay: lay, m: NewModel(lay), rec: NewRecorder(), hist: NewHistory(zones.NewConfig(zones.DefaultSettings())),
		stores: map[string]string{}, clocks: map[string]string{}, impaired: map[string]func() error{},
		known: map[string]bool{}, stop: make(chan struct{}),
		stats: Stats{Faults: map[Kind]int{}, Findings: map[string]int{}}}
	// Registered first, so it runs last: after the fabric printed the tail
	// of every log, a reader of the output's end (CI keeps only that) sees
	// the findings and the seed.
	t.Cleanup(r.repeatErrors)
	spec := lay.Spec()
	// Stores on their own small file systems (DiskFull), mounted before
	// the fabric starts so that they are unmounted after it is gone.
	for _, name := range lay.Reflectors {
		r.stores[name] = mountStore(t, name)
	}
	wrap := clockWrapper(t)
	spec.ReflectorConfig = func(name string, cfg map[string]any) {
		cfg["state_dir"] = filepath.Join(r.stores[name], "state")
		cfg["bfd"] = soakBFD
	}
	spec.SwitchConfig = func(name string, cfg map[string]any) { cfg["bfd"] = soakBFD }
	if wrap != nil {
		for _, name := range lay.Reflectors {
			r.clocks[name] = filepath.Join(t.TempDir(), name+".offset")
			if err := os.WriteFile(r.clocks[name], []byte("0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		spec.Wrap = func(name string) []string {
			if f, ok := r.clocks[name]; ok {
				return wrap(f)
			}
			return nil
		}
	}
	r.f = topo.Start(t, spec)
	var err error
	if r.log, err = os.Create(filepath.Join(r.f.Dir, "soak.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.log.Close() })
	r.logf("seed %d; fabric in %s", seed, r.f.Dir)
	if err := r.f.WaitEstablished(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	r.openProbes()
	r.applyLayoutZoning()
	r.beginStep()
	r.since = time.Now()
	r.check(true)
	return r
}

// soakBFD: 300 ms × 5, a loss is seen in 1.5 s; the daemons' 100 ms × 3
// takes a machine stall of a third of a second for a dead switch, and the
// soak shares two cores with other tests.
var soakBFD = map[string]any{"enabled": true, "desired_min_tx": "300ms", "required_min_rx": "300ms", "detect_mult": 5}

// openProbes starts a recorder on every NIC and registers the NICs the
// layout starts registered (hosts also send their zone query).
func (r *run) openProbes() {
	r.needQuery = make([]bool, len(r.lay.NICs))
	for i, s := range r.lay.NICs {
		p := r.f.Node(s.Device).Probe(s.Index)
		r.probes = append(r.probes, p)
		if err := p.SetLLDP(lldpTTL, lldpEvery); err != nil {
			r.t.Fatal(err)
		}
		r.recorderWG.Add(1)
		go r.record(p)
		if r.m.NICs[i].Registered {
			if err := r.register(i); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	r.t.Cleanup(func() { close(r.stop); r.recorderWG.Wait() })
}

// record feeds what probe p reads to the recorder until the run ends.
func (r *run) record(p *topo.Probe) {
	defer r.recorderWG.Done()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		got, ok := p.Next(200 * time.Millisecond)
		if !ok || got.Frame.Message == nil {
			continue
		}
		for _, n := range got.Frame.Message.Notifications {
			r.rec.Record(p.Addr(), n, got.At)
		}
	}
}

// register sends NIC i's registration (a host also its zone query) and
// stamps it afresh.
func (r *run) register(i int) error {
	n, p := r.m.NICs[i], r.probes[i]
	if err := p.SetLLDP(lldpTTL, lldpEvery); err != nil {
		return err
	}
	if err := p.Register(n.Role, n.Protocol, n.Port, n.NQN); err != nil {
		if !n.LinkUp {
			r.needQuery[i] = n.Role.IsHost()
			return nil // sent again when the link comes back
		}
		return err
	}
	if n.Role.IsHost() {
		r.rec.Clear(n.Addr)
		r.hist.Reset(n.Addr)
		if err := p.Query(); err != nil {
			return err
		}
	}
	return nil
}

// applyLayoutZoning creates the layout's aliases and zones on rr1, one
// edit at a time (each configuration on the way is one the hosts may be
// told about).
func (r *run) applyLayoutZoning() {
	rr := r.f.Node(r.lay.Reflectors[0])
	c := r.lay.Config
	cur := r.m.Config.Clone()
	for _, name := range sortedKeys(c.Aliases) {
		r.inofctl(rr, append([]string{"alias", "create", name}, memberArgs(c.Aliases[name].Members)...)...)
		cur.Aliases[name] = c.Aliases[name]
		r.hist.Config(cur.Clone())
	}
	for _, name := range sortedKeys(c.Zones) {
		r.inofctl(rr, append([]string{"zone", "create", name}, memberArgs(c.Zones[name].Members)...)...)
		cur.Zones[name] = c.Zones[name]
		r.hist.Config(cur.Clone())
	}
	r.m.SetConfig(c.Clone())
	r.edited = true
}

// inofctl runs a zoning change on a reflector and fails the test on error.
func (r *run) inofctl(rr *topo.Node, args ...string) {
	r.t.Helper()
	if _, err := rr.Inofctl(append(args, "--yes")...); err != nil {
		r.t.Fatal(err)
	}
}

// readZoning reads the zoning a reflector holds.
func (r *run) readZoning(name string) (*zones.Config, error) {
	out, err := r.f.Node(name).Inofctl("-o", "json", "zoning", "show")
	if err != nil {
		return nil, err
	}
	return ParseZoning([]byte(out))
}

// sessionSnapshot is a reflector's sessions (peer, state, since), as one
// comparable string; established reports whether all of them are.
func (r *run) sessionSnapshot(name string) (snap string, established bool, err error) {
	out, err := r.f.Node(name).Inofctl("-o", "json", "session", "list")
	if err != nil {
		return "", false, err
	}
	var list struct {
		Items []struct {
			Peer  string `json:"peer"`
			State string `json:"state"`
			Since string `json:"since"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return "", false, fmt.Errorf("session list: %w", err)
	}
	ss := list.Items
	want := len(r.lay.Switches) + len(r.lay.Reflectors) - 1
	established = len(ss) == want
	var parts []string
	for _, s := range ss {
		established = established && s.State == "established"
		parts = append(parts, s.Peer+"="+s.State+"@"+s.Since)
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), established, nil
}

// logf writes a line to soak.log (and the test log).
func (r *run) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	r.t.Log(line)
	if r.log != nil {
		fmt.Fprintf(r.log, "%s %s\n", time.Now().Format("15:04:05.000"), line)
	}
}

// beginStep marks where the step starts: log offsets, session states.
func (r *run) beginStep() {
	r.marks = map[string]int{}
	for _, n := range r.f.Nodes(topo.KindReflector) {
		r.marks[n.Name] = n.LogSize()
	}
	r.restarted = map[string]int{}
	r.induced = map[string]bool{}
	r.sessions = map[string]string{}
	for _, name := range r.lay.Reflectors {
		if snap, _, err := r.sessionSnapshot(name); err == nil {
			r.sessions[name] = snap
		}
	}
}

// runStep applies one step: its faults, the hold, the heals and the
// checks.
func (r *run) runStep(st Step) {
	r.step = st.N
	r.stats.Steps++
	began := time.Now()
	defer func() { r.stats.StepTime = append(r.stats.StepTime, time.Since(began)) }()
	r.hist.Begin(st.N, r.m.Config)
	for _, c := range r.m.Candidates {
		r.hist.Config(c) // concurrent edits not read back yet
	}
	r.rec.SetStep(st.N)
	r.beginStep()
	r.logf("%s", st.Describe(r.lay))
	heals := make([]func(), len(st.Faults))
	for i, f := range st.Faults {
		time.Sleep(f.After)
		heal, applied := r.inject(f)
		heals[i] = heal
		if applied {
			r.stats.Faults[f.Kind]++
		}
		r.since = time.Now()
	}
	time.Sleep(st.Hold)
	if st.MidCheck {
		r.check(false)
	}
	for j, i := range st.Heal {
		if heals[i] == nil {
			continue
		}
		if j > 0 {
			time.Sleep(st.HealGap)
		}
		heals[i]()
		r.since = time.Now()
	}
	r.check(true)
}

// giveUp reports whether the run has found enough (INOF_SOAK_MAXFAIL
// steps with findings; 5 by default).
func (r *run) giveUp() bool {
	limit := maxFailedSteps
	if s := os.Getenv("INOF_SOAK_MAXFAIL"); s != "" {
		fmt.Sscan(s, &limit)
	}
	return r.failed >= limit
}

// bfdGone matches a reflector logging that BFD lost a switch (slog text:
// the router_id attribute comes between the message and the neighbor).
var bfdGone = regexp.MustCompile(`msg="BFD down: switch gone, shutting its session"[^\n]*? neighbor=(\S+)`)

// scanSpontaneous finds BFD losses of switches the step did not cause (a
// stalled machine) in the reflectors' logs.
func (r *run) scanSpontaneous() {
	for _, rr := range r.lay.Reflectors {
		n := r.f.Node(rr)
		text := n.LogSince(r.marks[rr])
		r.marks[rr] += len(text)
		for _, m := range bfdGone.FindAllStringSubmatch(text, -1) {
			sw := r.switchAt(m[1])
			if sw == "" || r.induced[sw] {
				continue
			}
			r.stats.Spontaneous++
			r.hist.Spontaneous(sw)
			for _, nic := range r.m.NICsOn(sw) {
				r.hist.Cause(nic.Addr, inof.ReasonBFDDown)
			}
			r.logf("  %s lost %s by BFD without a fault of the harness (machine stall?)", rr, sw)
		}
	}
}

func (r *run) switchAt(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	for _, n := range r.f.Nodes(topo.KindSwitch) {
		if n.Addr == a {
			return n.Name
		}
	}
	return ""
}

// check waits until the probes agree with the oracle (full: and the fabric
// is whole again, restarted agents settled, sessions that came back past
// their settle time, the reflectors agreeing on the zoning), then judges
// the notifications received.
func (r *run) check(full bool) {
	r.stats.Checks++
	timeout := midTimeout
	if !full {
		r.resolveZoning(false)
	} else {
		timeout = settleTimeout
	}
	deadline := r.since.Add(timeout)
	var agreeFrom, healthyAt time.Time
	var ds []Divergence
	changed := map[string]time.Time{} // reflector → when its sessions were first seen as they are now
	lastSnap := map[string]string{}
	healthy, zoning := !full, !full
	nextPoll := time.Time{}
	for {
		now := time.Now()
		if full && !now.Before(nextPoll) {
			nextPoll = now.Add(500 * time.Millisecond)
			r.m.Touch() // a reflector's writes may be taken again (Model.Wrote)
			healthy = r.healthy(now, changed, lastSnap)
			if healthy && healthyAt.IsZero() {
				healthyAt = now
			}
			if !zoning {
				zoning = r.resolveZoning(!now.Before(deadline))
			}
		}
		ds = r.fresh(Diverged(r.m, r.rec, r.since))
		if len(ds) == 0 {
			if agreeFrom.IsZero() {
				agreeFrom = now
			}
			if healthy && zoning {
				break
			}
		} else {
			agreeFrom = time.Time{}
		}
		if now.After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if full {
		r.stats.Whole = append(r.stats.Whole, time.Since(r.since))
	}
	r.scanSpontaneous()
	var findings []Finding
	if full && !healthy {
		findings = append(findings, Finding{"unhealthy", "the fabric did not come whole again within " + timeout.String()})
	}
	if full && !zoning {
		r.resolveZoning(true) // log what each holds
		r.logReplication()
		findings = append(findings, Finding{"zoning", "the reflectors did not agree on the zoning the edits made"})
	}
	for _, d := range ds {
		kind := "divergence"
		if d.Lost {
			kind = "lost"
		}
		findings = append(findings, Finding{kind, d.String()})
		r.known[d.key()] = true
	}
	ns := r.rec.Drain()
	r.stats.Notices += len(ns)
	findings = append(findings, r.hist.Judge(r.m, ns)...)
	what := "check"
	if !full {
		what = "mid-check"
	}
	if len(ds) == 0 {
		settle := agreeFrom.Sub(r.since)
		if full {
			r.stats.Settle = append(r.stats.Settle, settle)
		} else {
			r.stats.MidSettle = append(r.stats.MidSettle, settle)
		}
		r.logf("  %s: oracle agreed %s after the last action; %d notifications", what, settle.Round(time.Millisecond), len(ns))
	}
	if len(findings) > 0 {
		r.failed++
		var b strings.Builder
		for _, f := range findings {
			r.stats.Findings[f.Kind]++
			fmt.Fprintf(&b, "\n  %s: %s", f.Kind, f.Detail)
		}
		r.logf("  %s FAILED:%s", what, b.String())
		r.errorf("%s:%s", what, b.String())
		r.t.Logf("notifications of the window:\n%s", noticeLines(ns))
	}
}

// errorf fails the test with a finding of the current step and keeps it
// for repeatErrors.
func (r *run) errorf(format string, args ...any) {
	msg := fmt.Sprintf("seed %d step %d ", r.seed, r.step) + fmt.Sprintf(format, args...)
	r.errs = append(r.errs, msg)
	r.t.Error(msg)
}

// repeatErrors prints the run's failures again, with the command that
// replays the run.
func (r *run) repeatErrors() {
	if len(r.errs) == 0 {
		return
	}
	r.t.Logf("soak: %d failures (rerun: make soak SEED=%d), repeated after the logs:\n%s",
		len(r.errs), r.seed, strings.Join(r.errs, "\n"))
}

func noticeLines(ns []Notice) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	return b.String()
}

func (d Divergence) key() string {
	return fmt.Sprintf("%s/%s/%s/%s", d.Host.ID(), d.Host.Addr, d.Addr, d.Want)
}

// fresh drops divergences already reported by an earlier check.
func (r *run) fresh(ds []Divergence) []Divergence {
	return slices.DeleteFunc(ds, func(d Divergence) bool { return r.known[d.key()] })
}

// healthy reports whether every session is established again, every
// restarted agent settled and every session that came back during the step
// is past its settle time.
func (r *run) healthy(now time.Time, changed map[string]time.Time, last map[string]string) bool {
	if !r.m.Healthy() {
		return false
	}
	ok := true
	for _, rr := range r.lay.Reflectors {
		snap, est, err := r.sessionSnapshot(rr)
		if err != nil || !est {
			ok = false
			continue
		}
		if snap != last[rr] {
			last[rr], changed[rr] = snap, now
		}
		if snap != r.sessions[rr] && now.Sub(changed[rr]) < grSettle {
			ok = false // sessions came back: watch past their settle time
		}
	}
	for sw, mark := range r.restarted {
		if !strings.Contains(r.f.Node(sw).LogSince(mark), "fabric view settled") {
			ok = false
		}
	}
	for _, sw := range r.f.Nodes(topo.KindSwitch) {
		if v, err := sw.Metric("inof_switch_bgp_sessions", "state", "established"); err != nil || int(v) != len(r.lay.Reflectors) {
			ok = false
		}
	}
	return ok
}

// resolveZoning reads the zoning back after edits: both running reflectors
// must hold the same configuration, the model's or one of its candidates
// (which it then adopts). It reports whether they do; at the deadline
// (last) it logs what they hold.
func (r *run) resolveZoning(last bool) bool {
	caught := r.m.AheadEnded()
	if !r.edited && r.m.Candidates == nil && !caught {
		return true
	}
	var got []*zones.Config
	var read []string
	for _, name := range r.lay.Reflectors {
		if !r.m.Reflectors[name].Running {
			continue
		}
		if r.m.Lags(name) {
			if last {
				r.logf("  zoning of %s not read: it refuses the other's edits as too far ahead", name)
			}
			continue
		}
		c, err := r.readZoning(name)
		if err != nil {
			if last {
				r.logf("  zoning of %s: %v", name, err)
			}
			return false
		}
		got, read = append(got, c), append(read, name)
	}
	if len(got) == 0 {
		return true
	}
	if r.m.Unmerged() && len(got) < len(r.lay.Reflectors) {
		// Each holds its own of the concurrent edits: one alone may
		// match a candidate the merge does not make.
		if last {
			r.logf("  zoning read from %v only, while the reflectors hold each its own of the concurrent edits", read)
		}
		return false
	}
	for _, c := range got[1:] {
		if !SameConfig(c, got[0]) {
			if last {
				r.logf("  the reflectors disagree on the zoning:\n%s---\n%s", ConfigString(got[0]), ConfigString(c))
			}
			return false
		}
	}
	want := r.m.Possible()
	for _, c := range want {
		if SameConfig(c, got[0]) {
			if r.m.Candidates != nil || !SameConfig(c, r.m.Config) {
				r.m.SetConfig(c, read...)
				r.hist.Config(c)
			} else {
				r.m.ReadBack(read...)
			}
			r.m.Candidates = nil
			r.edited = false
			if caught {
				r.m.ForgetAhead()
			}
			return true
		}
	}
	if last {
		r.logf("  the reflectors hold a zoning the edits cannot have made:\n%s", ConfigString(got[0]))
		for i, c := range want {
			r.logf("  the model's zoning %d of %d (- it only, + the reflectors only):\n%s", i+1, len(want), ConfigDiff(c, got[0]))
		}
	}
	return false
}

// logReplication logs, for a zoning the reflectors disagree on, each
// one's sessions (records received per neighbor) and what its replication
// adopted and refused.
func (r *run) logReplication() {
	for _, name := range r.lay.Reflectors {
		n := r.f.Node(name)
		if out, err := n.Inofctl("session", "list"); err == nil {
			r.logf("  sessions of %s:\n%s", name, out)
		}
		var parts []string
		for _, m := range []struct{ name, label, value string }{
			{"inof_reflector_config_parts_adopted_total", "", ""},
			{"inof_reflector_config_parts_refused_total", "reason", "future"},
			{"inof_reflector_config_parts_refused_total", "reason", "expired"},
			{"inof_reflector_config_parts_refused_total", "reason", "not-peer"},
		} {
			var v float64
			var err error
			if m.label == "" {
				v, err = n.Metric(m.name)
			} else {
				v, err = n.Metric(m.name, m.label, m.value)
			}
			if err == nil && m.label == "" {
				parts = append(parts, fmt.Sprintf("%s=%v", m.name, v))
			} else if err == nil {
				parts = append(parts, fmt.Sprintf("%s{%s=%q}=%v", m.name, m.label, m.value, v))
			}
		}
		r.logf("  replication of %s: %s", name, strings.Join(parts, " "))
	}
}

// report logs the run's counts and settle times.
func (r *run) report() {
	s := r.stats
	total := 0
	var parts []string
	for _, k := range Kinds() {
		total += s.Faults[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, s.Faults[k]))
	}
	settle := slices.Sorted(slices.Values(s.Settle))
	mid := slices.Sorted(slices.Values(s.MidSettle))
	retrans, stale := r.rec.Counts()
	r.logf("soak seed %d: %d steps, %d faults (%s)", r.seed, s.Steps, total, strings.Join(parts, ", "))
	r.logf("soak seed %d: settle after the last action p50 %s p99 %s max %s (n=%d); while held p50 %s p99 %s (n=%d)",
		r.seed, topo.Percentile(settle, 0.5).Round(time.Millisecond), topo.Percentile(settle, 0.99).Round(time.Millisecond),
		maxDur(settle).Round(time.Millisecond), len(settle),
		topo.Percentile(mid, 0.5).Round(time.Millisecond), topo.Percentile(mid, 0.99).Round(time.Millisecond), len(mid))
	steps, whole := slices.Sorted(slices.Values(s.StepTime)), slices.Sorted(slices.Values(s.Whole))
	var busy time.Duration
	for _, d := range steps {
		busy += d
	}
	stepsPerMin, faultsPerMin := 0.0, 0.0
	if busy > 0 {
		stepsPerMin, faultsPerMin = float64(len(steps))/busy.Minutes(), float64(total)/busy.Minutes()
	}
	r.logf("soak seed %d: a step took p50 %s p99 %s (%.1f steps, %.1f faults a minute); a full check waited p50 %s p99 %s after the last action for the oracle and a whole fabric",
		r.seed, topo.Percentile(steps, 0.5).Round(time.Millisecond), topo.Percentile(steps, 0.99).Round(time.Millisecond),
		stepsPerMin, faultsPerMin,
		topo.Percentile(whole, 0.5).Round(time.Millisecond), topo.Percentile(whole, 0.99).Round(time.Millisecond))
	r.logf("soak seed %d: %d notifications, %d retransmissions, %d to a dropped address, %d spontaneous BFD losses; findings %v",
		r.seed, s.Notices, retrans, stale, s.Spontaneous, s.Findings)
}

func maxDur(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)-1]
}

// mountStore mounts a small tmpfs for a reflector's store and unmounts it
// when the test ends (after the fabric is gone: it is mounted first).
func mountStore(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "inof-soak-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+storeFS, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
		os.Remove(dir)
	})
	return dir
}

// storeFS is the size of a reflector's store file system.
const storeFS = "16m"

// clockWrapper builds the clock tracer (clockshift) and checks that it
// moves a program's clock here; it returns the command prefix that runs a
// daemon under it with an offset file, or nil (ClockStep faults then do
// nothing, which the report shows) where ptrace or seccomp is refused.
func clockWrapper(t *testing.T) func(offsetFile string) []string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "clockshift")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/openinof/inof/integration/soak/clockshift").CombinedOutput(); err != nil {
		t.Fatalf("build clockshift: %v\n%s", err, out)
	}
	off := filepath.Join(dir, "probe.offset")
	if err := os.WriteFile(off, []byte("3600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, off, "date", "+%s").Output()
	shifted, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || perr != nil || shifted-time.Now().Unix() < 3500 {
		t.Logf("soak: clockshift cannot move a clock here (%v, %q): no clock steps", err, out)
		return nil
	}
	return func(offsetFile string) []string { return []string{bin, offsetFile} }
}
