//go:build privileged

package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/gcheadroom"
	"github.com/openinof/inof/l2proto"
)

const (
	// churnNICs is the number of NICs of each churn probe device (topo's
	// maximum); two target devices on leaf1 give churnPorts access ports.
	churnNICs  = 8
	churnPorts = 2 * churnNICs
	// churnPerPort is how many target addresses each port registers:
	// the switch's registration bound per port.
	churnPerPort = l2proto.DefaultMaxEntriesPerPort
	// churnPool is every churning address; each event toggles the next one
	// in turn, so one address changes every churnPool/rate seconds.
	churnPool = churnPorts * churnPerPort
	// churnHold is how long the highest rate must be held.
	churnHold = 60 * time.Second
	// churnExplore is the length of the steps that look for it.
	churnExplore = 10 * time.Second
	// churnKeptUp is how soon after the last event its notification must
	// have arrived for a step to count as held: a pipeline that falls
	// behind at a rate ends a step with a backlog far longer than this.
	churnKeptUp = 2 * time.Second
	// churnQuiet ends the wait for stragglers: no notification for this
	// long means whatever is missing is lost.
	churnQuiet = 3 * time.Second
)

// churnAddr is address j of churning port g: 10.200.g.(j+1).
func churnAddr(g, j int) netip.Addr { return netip.AddrFrom4([4]byte{10, 200, byte(g), byte(j + 1)}) }

// churner sends the events: registrations and goodbyes (TTL 0) of
// churnPool target addresses spread over churnPorts NICs of leaf1. Its
// fields are owned by the benchmark goroutine, except sentAt, which the
// sinks read.
type churner struct {
	ports  []*topo.Probe
	frames [churnPool][2][]byte // register, goodbye
	index  map[netip.Addr]int   // read-only once built
	// sentAt is when each address was last sent into each state (0
	// active, 1 inactive), in Unix nanoseconds.
	sentAt [churnPool][2]atomic.Int64
	// pending is, per address, 1 + the state of its last event while
	// that event's notification has not arrived, else 0. The sink that
	// receives it swaps it to 0; an event sent while the previous one is
	// still pending overwrites it, and the previous one counts as lost:
	// coalesced by the switch, or so late that the address changed again
	// (its notification, if it comes, counts as extra).
	pending [churnPool]atomic.Int32
	// overwritten counts those lost events.
	overwritten int64
	// sent counts events since the start.
	sent int64
	k    int // events sent so far; event k toggles address k mod churnPool
}

// idx is the pool position of address j of port g; consecutive events
// walk across the ports, hence across zones and hosts.
func idx(g, j int) int { return j*churnPorts + g }

func newChurner(ports []*topo.Probe) (*churner, error) {
	c := &churner{ports: ports, index: map[netip.Addr]int{}}
	for g, p := range ports {
		for j := range churnPerPort {
			a := churnAddr(g, j)
			reg, bye, err := topo.TargetFrames(p.MAC(), a, fmt.Sprintf("churn_%d_%d", g, j), fmt.Sprintf("nqn.2014-08.org.example:churn:%d", idx(g, j)))
			if err != nil {
				return nil, err
			}
			c.frames[idx(g, j)] = [2][]byte{reg, bye}
			c.index[a] = idx(g, j)
		}
	}
	return c, nil
}

// inFlight counts events whose notification has not arrived.
func (c *churner) inFlight() int {
	n := 0
	for i := range c.pending {
		if c.pending[i].Load() != 0 {
			n++
		}
	}
	return n
}

// forget counts the events still in flight as lost: it clears them, so
// that a late notification counts as extra.
func (c *churner) forget() int64 {
	var n int64
	for i := range c.pending {
		if c.pending[i].Swap(0) != 0 {
			n++
		}
	}
	return n
}

// run sends events at rate for d and returns when the last went out.
func (c *churner) run(rate float64, d time.Duration) (time.Time, error) {
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	total, done := int(rate*d.Seconds()), 0
	var last time.Time
	for done < total {
		due := min(total, int(rate*time.Since(start).Seconds()))
		for ; done < due; done++ {
			i := c.k % churnPool
			st := (c.k / churnPool) % 2 // first pass registers, the next says goodbye, …
			g := i % churnPorts
			last = time.Now()
			c.sentAt[i][st].Store(last.UnixNano())
			if c.pending[i].Swap(int32(st)+1) != 0 {
				c.overwritten++
			}
			if err := c.ports[g].SendRaw(c.frames[i][st]); err != nil {
				return last, fmt.Errorf("churn event %d: %w", c.k, err)
			}
			c.sent++
			c.k++
		}
		<-tick.C
	}
	return last, nil
}

// sink counts the notifications one host probe receives about its zone's
// churning targets, with their latency from the event, in its own
// goroutine.
type sink struct {
	p *topo.Probe
	c *churner

	mu      sync.Mutex
	got     int64 // notifications of pending events
	extra   int64 // fresh notifications no pending event asked for (a session reset's reason 7, a late one)
	dups    int64 // retransmissions (a sequence number seen before)
	foreign int64 // about a target outside the host's zone
	frames  int64 // frames carrying at least one of ours
	perMax  int   // most notifications in one frame
	last    time.Time
	lat     []time.Duration
}

// read counts until stop.
func (s *sink) read(stop <-chan struct{}, g int) {
	var seq [churnPool]uint32
	var seen [churnPool]bool
	for {
		select {
		case <-stop:
			return
		default:
		}
		r, ok := s.p.Next(100 * time.Millisecond)
		if !ok || r.Frame.Message == nil {
			continue
		}
		s.mu.Lock()
		mine := 0
		for _, n := range r.Frame.Message.Notifications {
			if n.Host != s.p.Addr() {
				continue
			}
			i, ok := s.c.index[n.Target]
			if !ok || i%churnPorts != g {
				s.foreign++
				continue
			}
			if seen[i] && seq[i] == n.Seq {
				s.dups++
				continue
			}
			seen[i], seq[i] = true, n.Seq
			st := 0
			if n.State != inof.StateActive {
				st = 1
			}
			mine++
			if !s.c.pending[i].CompareAndSwap(int32(st)+1, 0) {
				s.extra++
				continue
			}
			s.got++
			s.last = r.At
			s.lat = append(s.lat, r.At.Sub(time.Unix(0, s.c.sentAt[i][st].Load())))
		}
		if mine > 0 {
			s.frames++
			s.perMax = max(s.perMax, mine)
		}
		s.mu.Unlock()
	}
}

// churnStep is what one rate gave.
type churnStep struct {
	rate   float64
	d      time.Duration
	events int64
	lost   int64         // events whose notification never arrived
	drain  time.Duration // last event sent → last notification read
	lat    []time.Duration
}

func (s churnStep) held() bool { return s.lost == 0 && s.drain <= churnKeptUp }

func (s churnStep) String() string {
	r := result.Row{Unit: "ms"}
	r, _ = result.Durations(r, s.lat)
	return fmt.Sprintf("%.0f events/s for %v: %d events, %d lost, last notification %v after the last event, latency p50 %.1f ms p99 %.1f ms max %.1f ms, held %v",
		s.rate, s.d, s.events, s.lost, s.drain.Round(time.Millisecond), r.P50, r.P99, r.Max, s.held())
}

// churnBench holds the churn fabric's parts.
type churnBench struct {
	f     *topo.Fabric
	c     *churner
	sinks []*sink
}

// collect sums the sinks' newest notification and takes the latencies
// measured since the last call.
func (cb *churnBench) collect() (last time.Time, lat []time.Duration) {
	for _, s := range cb.sinks {
		s.mu.Lock()
		if s.last.After(last) {
			last = s.last
		}
		lat = append(lat, s.lat...)
		s.lat = s.lat[:0]
		s.mu.Unlock()
	}
	return last, lat
}

// step runs one rate for d, waits for the stragglers and reports.
func (cb *churnBench) step(b *testing.B, rate float64, d time.Duration) churnStep {
	b.Helper()
	cb.collect() // drop latencies of earlier stragglers
	before, overwritten := cb.c.sent, cb.c.overwritten
	lastSent, err := cb.c.run(rate, d)
	if err != nil {
		b.Fatal(err)
	}
	left := cb.c.inFlight()
	for progress := time.Now(); left > 0 && time.Since(progress) < churnQuiet; {
		time.Sleep(20 * time.Millisecond)
		if n := cb.c.inFlight(); n != left {
			left, progress = n, time.Now()
		}
	}
	last, lat := cb.collect()
	st := churnStep{rate: rate, d: d, events: cb.c.sent - before,
		lost: cb.c.overwritten - overwritten + cb.c.forget(), drain: last.Sub(lastSent), lat: lat}
	b.Log(st)
	// Overload may cost latency and, by the switch's design, coalesced
	// events, never the fabric itself: every session must still be up.
	if err := cb.f.WaitEstablished(0); err != nil {
		b.Errorf("after %v: the fabric lost a session: %v", st, err)
	}
	return st
}

// BenchmarkPrivChurn measures sustained churn: leaf1's access ports carry
// two probe devices with 8 NICs each, every NIC registering and
// unregistering (TTL-0 LLDPDU) up to 128 target addresses, one event after
// the other across the ports at a fixed rate; 16 probe hosts on leaf2 and
// leaf3 each share one zone with one port's targets, so every event
// becomes one record through the reflector and one notification at one
// host. A rate is held when every event's notification arrives (0 lost)
// and the last within 2 s of the last event (no backlog). The search runs
// 10 s steps from 500/s, doubling while held or halving until one is,
// tries two rates between the last held and the first not held, then
// holds the best for 60 s (stepping down by a quarter if that fails).
// Last, one zone change owes one more host a notification per active
// target: the rate they arrive at is one notifier's pacing limit. The
// daemons' CPU over the search says which one binds. It writes
// $BENCH_OUT/churn.json.
func BenchmarkPrivChurn(b *testing.B) {
	requireSwitchRole(b)
	if ok, err := topo.HasReflectorAPI(); err != nil || !ok {
		b.Skipf("reflector API (api.socket) not built (%v): the churn zones are made with inofctl", err)
	}
	oneRate, err := churnRate()
	if err != nil {
		b.Fatal(err)
	}
	rows := []result.Row{machineRow(b, "churn, start")}
	// The probes run in this process: with the daemons' collector
	// headroom, its GC interrupts their reads less often.
	defer gcheadroom.Start(daemon.DefaultGCHeadroomMiB << 20).Stop()
	var devs []topo.Device
	for _, name := range []string{"tg1", "tg2"} {
		d := topo.Device{Name: name, Probe: true}
		for range churnNICs {
			d.NICs = append(d.NICs, topo.NIC{Switch: "leaf1"})
		}
		devs = append(devs, d)
	}
	for _, hs := range []struct{ name, sw string }{{"hs2", "leaf2"}, {"hs3", "leaf3"}} {
		d := topo.Device{Name: hs.name, Probe: true}
		for range churnNICs {
			d.NICs = append(d.NICs, topo.NIC{Switch: hs.sw})
		}
		devs = append(devs, d)
	}
	// hall is one more host, unzoned (so, with hard zoning, it sees
	// nothing) until the end, when one zone change shows it every
	// active churning target at once: a burst that one notifier paces.
	devs = append(devs, topo.Device{Name: "hall", Probe: true, NICs: []topo.NIC{{Switch: "leaf3"}}})
	// BFD at 3 × 300 ms (docs/reflector.md's choice for a busy
	// reflector): the churn saturates the CPU on purpose, and a false
	// BFD down would reset sessions mid-step.
	spec := withBFD(topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2", "leaf3"}, Devices: devs}, "300ms", 3, 0)
	bfd := spec.SwitchConfig
	spec.SwitchConfig = func(name string, cfg map[string]any) {
		bfd(name, cfg)
		// The churn ports register far faster than hosts do (20/s a port by
		// default): what is measured is the fabric, not the port's limit.
		cfg["access_limits"] = map[string]any{"registrations_per_second": 100000, "registration_burst": 100000}
	}
	f := topo.Start(b, spec)
	establish(b, f)
	var ports, hostPorts []*topo.Probe
	for k := range churnNICs * 2 {
		ports = append(ports, f.Node([]string{"tg1", "tg2"}[k/churnNICs]).Probe(k%churnNICs))
		hostPorts = append(hostPorts, f.Node([]string{"hs2", "hs3"}[k/churnNICs]).Probe(k%churnNICs))
	}
	// Zone g: port g's targets and host g.
	rr := f.Node("rr1")
	marks := map[string]int{"leaf2": f.Node("leaf2").LogSize(), "leaf3": f.Node("leaf3").LogSize()}
	for g := range churnPorts {
		pfx := netip.PrefixFrom(churnAddr(g, 0), 24).Masked()
		if _, err := rr.Inofctl("zone", "create", fmt.Sprintf("churn%02d", g), pfx.String(), hostPorts[g].Addr().String(), "--yes"); err != nil {
			b.Fatal(err)
		}
	}
	for sw, mark := range marks {
		if _, err := f.Node(sw).WaitLog(mark, fmt.Sprintf(`msg="zone configuration changed"[^\n]*churn%02d`, churnPorts-1), wait); err != nil {
			b.Fatal(err)
		}
	}
	c, err := newChurner(ports)
	if err != nil {
		b.Fatal(err)
	}
	cb := &churnBench{f: f, c: c}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	b.Cleanup(func() { close(stop); wg.Wait() })
	for g, p := range hostPorts {
		if err := p.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
			b.Fatal(err)
		}
		if err := p.Query(); err != nil {
			b.Fatal(err)
		}
		s := &sink{p: p, c: c}
		cb.sinks = append(cb.sinks, s)
		wg.Add(1)
		go func() { defer wg.Done(); s.read(stop, g) }()
	}
	hall := f.Node("hall").Probe(0)
	if err := hall.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		b.Fatal(err)
	}
	if err := hall.Query(); err != nil {
		b.Fatal(err)
	}
	// Warm-up: every address registers once, at a rate every earlier
	// run held.
	warm := cb.step(b, 1000, time.Duration(churnPool)*time.Second/1000)
	if warm.lost != 0 {
		b.Fatalf("warm-up lost %d of %d notifications", warm.lost, warm.events)
	}
	b.ResetTimer()
	cpu0, err := DaemonCPU(f.Dir)
	if err != nil {
		b.Fatal(err)
	}
	self0, events0 := selfCPU(b), cb.c.sent
	t0 := time.Now()

	var best churnStep
	var steps []churnStep
	if oneRate > 0 {
		// One rate, held as long as the search's last step: for comparing
		// two builds or settings at the same load.
		best = cb.step(b, oneRate, churnHold)
		steps = append(steps, best)
	} else if quick() {
		best = cb.step(b, 200, 3*time.Second)
		steps = append(steps, best)
	} else {
		// Up by doubling from 500/s while held, or down by halving
		// until one is.
		pass, fail := 0.0, 0.0
		for rate := 500.0; rate >= 50 && rate <= 32000; {
			s := cb.step(b, rate, churnExplore)
			steps = append(steps, s)
			if s.held() {
				pass = rate
				if fail > 0 {
					break
				}
				rate *= 2
			} else {
				fail = rate
				if pass > 0 {
					break
				}
				rate /= 2
			}
		}
		for range 2 {
			if fail == 0 || pass == 0 {
				break
			}
			mid := float64(int((pass+fail)/2/10) * 10)
			if mid <= pass || mid >= fail {
				break
			}
			s := cb.step(b, mid, churnExplore)
			steps = append(steps, s)
			if s.held() {
				pass = mid
			} else {
				fail = mid
			}
		}
		for rate, try := pass, 0; rate > 0 && try < 3; rate, try = float64(int(rate*0.75/10)*10), try+1 {
			s := cb.step(b, rate, churnHold)
			steps = append(steps, s)
			if s.held() {
				best = s
				break
			}
		}
	}
	cpu1, err := DaemonCPU(f.Dir)
	if err != nil {
		b.Fatal(err)
	}
	wall := time.Since(t0)
	events := float64(cb.c.sent - events0)
	var cpu, per string
	var total time.Duration
	for _, n := range []string{"leaf1", "rr1", "leaf2", "leaf3"} {
		used := cpu1[n] - cpu0[n]
		total += used
		cpu += fmt.Sprintf("%s %.0f%%, ", n, 100*used.Seconds()/wall.Seconds())
		per += fmt.Sprintf("%s %.0f, ", n, float64(used.Microseconds())/events)
	}
	cpu = "daemons' CPU over the run (% of one core): " + strings.TrimSuffix(cpu, ", ")
	b.Log(cpu)
	perEvent := float64(total.Microseconds()) / events
	bench := float64((selfCPU(b) - self0).Microseconds()) / events
	cost := result.Row{Group: "churn", Name: "CPU per event, the four daemons together", Unit: "µs", Value: perEvent,
		Note: fmt.Sprintf("over %.0f events: %s; the benchmark's own probes %.0f µs; so two cores held by the daemons alone would carry at most %.0f events/s",
			events, strings.TrimSuffix(per, ", "), bench, 2e6/perEvent)}
	b.Log(cost.Note)
	burst := pacedBurst(b, rr, hall, c)
	b.StopTimer()

	var dups, foreign, frames, notes, extra int64
	perMax := 0
	for _, s := range cb.sinks {
		s.mu.Lock()
		dups, foreign, frames, notes, extra = dups+s.dups, foreign+s.foreign, frames+s.frames, notes+s.got, extra+s.extra
		perMax = max(perMax, s.perMax)
		s.mu.Unlock()
	}
	var outcomes []string
	for _, sw := range []string{"leaf2", "leaf3"} {
		m, err := f.Node(sw).Metrics()
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range []string{"sent", "acked", "retransmitted", "gave-up", "superseded"} {
			v, _ := m.Sum("inof_switch_notifications_total", "outcome", o)
			outcomes = append(outcomes, fmt.Sprintf("%s %s %.0f", sw, o, v))
		}
	}
	b.Logf("switch notifier outcomes: %v", outcomes)
	b.Logf("hosts: %d notifications of events and %d extra in %d frames (at most %d in one), %d retransmitted copies, %d outside the zone, probe frames dropped %d",
		notes, extra, frames, perMax, dups, foreign, probeLost(hostPorts))
	sort.Slice(steps, func(i, j int) bool { return steps[i].rate < steps[j].rate })
	var tried string
	for _, s := range steps {
		tried += fmt.Sprintf("%.0f/s %v: %d lost, drain %v; ", s.rate, s.d, s.lost, s.drain.Round(time.Millisecond))
	}
	name := "highest rate held 60 s, 0 lost (16 hosts, one zone each)"
	if quick() {
		name = "quick: 200 events/s for 3 s, 0 lost?"
	}
	if oneRate > 0 {
		name = fmt.Sprintf("one rate (BENCH_CHURN_RATE): %.0f events/s for %v, 0 lost?", best.rate, best.d)
	}
	held := result.Row{Group: "churn", Name: name, Unit: "events/s", Goal: "≥ 10000/s, 0 lost", Note: "steps: " + tried + cpu}
	if best.held() {
		held.Value = best.rate
	}
	lat := durations(b, result.Row{Group: "churn", Name: "event → notification at the host, at that rate", Unit: "ms",
		Note: fmt.Sprintf("whole run: %d notifications of events and %d extra in %d frames, at most %d per frame; %d retransmitted copies", notes, extra, frames, perMax, dups)}, best.lat)
	b.ReportMetric(held.Value, "events/s")
	rows = append(rows, held, lat, cost, burst, machineRow(b, "churn, end"))
	writeRows(b, "churn", rows)
}

// churnRate is BENCH_CHURN_RATE, the one rate to run instead of the
// search (0: unset).
func churnRate() (float64, error) {
	v := os.Getenv("BENCH_CHURN_RATE")
	if v == "" {
		return 0, nil
	}
	rate, err := strconv.ParseFloat(v, 64)
	if err != nil || rate <= 0 || rate > 1e6 {
		return 0, fmt.Errorf("BENCH_CHURN_RATE=%q: want events a second, a number above 0", v)
	}
	return rate, nil
}

// selfCPU is the CPU time the benchmark process has used (its probes'
// senders and readers).
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// active counts the churning addresses whose last event registered them.
func (c *churner) active() int {
	n := 0
	for i := range churnPool {
		events := c.k / churnPool
		if i < c.k%churnPool {
			events++
		}
		n += events % 2
	}
	return n
}

// pacedBurst measures one host's notifier at its pacing limit: a zone
// change (every churning target and the unzoned host hall) makes leaf3
// owe hall one active notification per active churning target at once.
// The row is the rate they arrive at, from the first to the last.
func pacedBurst(b *testing.B, rr *topo.Node, hall *topo.Probe, c *churner) result.Row {
	b.Helper()
	want := c.active()
	at := time.Now()
	if _, err := rr.Inofctl("zone", "create", "churnall", "10.200.0.0/16", hall.Addr().String(), "--yes"); err != nil {
		b.Fatal(err)
	}
	seen := map[netip.Addr]bool{}
	var first, last time.Time
	frames, perMax := 0, 0
	deadline := time.Now().Add(wait)
	for len(seen) < want && time.Now().Before(deadline) {
		r, ok := hall.Next(time.Until(deadline))
		if !ok || r.Frame.Message == nil {
			continue
		}
		k := 0
		for _, n := range r.Frame.Message.Notifications {
			if _, ours := c.index[n.Target]; ours && n.Host == hall.Addr() && n.State == inof.StateActive && !seen[n.Target] {
				seen[n.Target] = true
				k++
			}
		}
		if k == 0 {
			continue
		}
		if first.IsZero() {
			first = r.At
		}
		last, frames, perMax = r.At, frames+1, max(perMax, k)
	}
	row := result.Row{Group: "churn", Name: fmt.Sprintf("one host's notifier, burst of %d (zone change): notifications/s", want), Unit: "events/s",
		Note: fmt.Sprintf("%d of %d received in %d frames over %v (at most %d per frame), first %v after inofctl started; pacing 100 frames/s, burst 10",
			len(seen), want, frames, last.Sub(first).Round(time.Millisecond), perMax, first.Sub(at).Round(time.Millisecond))}
	if len(seen) == want && last.After(first) {
		row.Value = float64(want-1) / last.Sub(first).Seconds()
	}
	b.Log(row.Note)
	return row
}

// probeLost sums the frames the probes read but could not queue.
func probeLost(ps []*topo.Probe) int64 {
	var n int64
	for _, p := range ps {
		n += p.Lost()
	}
	return n
}
