//go:build privileged

package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

const (
	// wait bounds every wait for something the fabric should do at once;
	// generous, because the two shared cores may be busy.
	wait = 30 * time.Second
	// subNQN is the probe target's subsystem NQN.
	subNQN = "nqn.2014-08.org.example:nvme:array1"
	// keepAliveNotice is the kernel's own detection of a dead path with
	// the default keep-alive timeout (kato 5 s): the first "timeout
	// request ... type 4" at about 7 s (/work/shared/spec/realhost.md,
	// measured in qemu guests).
	keepAliveNotice = 7 * time.Second
	// keepAliveRemove is when the kernel removed the controller with
	// -k 2 -c 1 -l 5, the same source.
	keepAliveRemove = 27 * time.Second
	// keepAliveBaseline names that source in the table.
	keepAliveBaseline = "NVMe keep-alive (realhost.md)"
)

// withBFD sets every switch's and reflector's BFD to interval × mult and,
// when settle is not 0, the reflector's graceful-restart settle time.
func withBFD(spec topo.Spec, interval string, mult int, settle time.Duration) topo.Spec {
	spec.SwitchConfig = func(_ string, cfg map[string]any) {
		cfg["bfd"] = map[string]any{"enabled": true, "min_tx": interval, "min_rx": interval, "multiplier": mult}
	}
	spec.ReflectorConfig = func(_ string, cfg map[string]any) {
		cfg["bfd"] = map[string]any{"enabled": true, "desired_min_tx": interval, "required_min_rx": interval, "detect_mult": mult}
		if settle != 0 {
			cfg["graceful_restart"] = map[string]any{"settle_time": settle.String()}
		}
	}
	return spec
}

// establish waits until every switch's session is up. On a loaded
// machine a false BFD down at start costs a reconnect, so it allows three
// times the usual wait.
func establish(b *testing.B, f *topo.Fabric) {
	b.Helper()
	if err := f.WaitEstablished(3 * wait); err != nil {
		b.Fatal(err)
	}
}

// trials is how many trials a figure gets: BENCH_TRIALS when set, quick
// with -short, else full.
func trials(b *testing.B, full, quick int) int {
	b.Helper()
	if s := os.Getenv("BENCH_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("BENCH_TRIALS=%q: want a positive number", s)
		}
		return n
	}
	if testing.Short() {
		return quick
	}
	return full
}

// quick reports whether the run is a smoke run (-short or BENCH_TRIALS).
func quick() bool { return testing.Short() || os.Getenv("BENCH_TRIALS") != "" }

// requireSwitchRole skips when the built inofd has no switch role.
func requireSwitchRole(b *testing.B) {
	b.Helper()
	ok, err := topo.HasSwitchRole()
	if err != nil {
		b.Fatal(err)
	}
	if !ok {
		b.Skip("switch role not built: inofd has no --role switch")
	}
}

// machineRow reads the machine's load now as a row.
func machineRow(b *testing.B, when string) result.Row {
	b.Helper()
	m, err := ReadMachine()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %s", when, m.Row(when).Note)
	return m.Row(when)
}

// writeRows stores rows as $BENCH_OUT/NAME.json and logs them as a table.
func writeRows(b *testing.B, name string, rows []result.Row) {
	b.Helper()
	if err := result.Write(result.Dir(), name, rows); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	if err := result.Table(&sb, rows); err != nil {
		b.Fatal(err)
	}
	b.Logf("rows written to %s/%s.json:\n%s", result.Dir(), name, sb.String())
}

// durations fills a distribution row from samples in milliseconds.
func durations(b *testing.B, r result.Row, samples []time.Duration) result.Row {
	b.Helper()
	r, err := result.Durations(r, samples)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// notice is one notification a host probe received.
type notice struct {
	host int // index in hosts.probes
	at   time.Time
	n    l2proto.Notification
}

// hosts reads the notifications addressed to a set of probe host NICs,
// one goroutine per probe, onto one channel, and lets the benchmark wait
// for fresh ones: a notification whose sequence number was already seen at
// that host (a retransmission) is never returned twice.
type hosts struct {
	probes []*topo.Probe
	ch     chan notice
	stop   chan struct{}
	// Owned by the benchmark goroutine: sequence numbers seen and the
	// last state heard about each target, per host.
	seen  []map[uint32]bool
	state []map[netip.Addr]inof.State
	dups  int
}

// listen registers every probe as an NVMe/TCP host, sends its zone query
// and starts reading; it stops when the benchmark ends.
func listen(b *testing.B, probes ...*topo.Probe) *hosts {
	b.Helper()
	h := &hosts{probes: probes, ch: make(chan notice, 4096), stop: make(chan struct{})}
	for range probes {
		h.seen = append(h.seen, map[uint32]bool{})
		h.state = append(h.state, map[netip.Addr]inof.State{})
	}
	for _, p := range probes {
		if err := p.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
			b.Fatal(err)
		}
		if err := p.Query(); err != nil {
			b.Fatal(err)
		}
	}
	for i, p := range probes {
		go h.read(i, p)
	}
	b.Cleanup(func() { close(h.stop) })
	return h
}

// read forwards probe i's notifications for its own address until stop.
func (h *hosts) read(i int, p *topo.Probe) {
	for {
		select {
		case <-h.stop:
			return
		default:
		}
		r, ok := p.Next(100 * time.Millisecond)
		if !ok || r.Frame.Message == nil {
			continue
		}
		for _, n := range r.Frame.Message.Notifications {
			if n.Host != p.Addr() {
				continue
			}
			select {
			case h.ch <- notice{host: i, at: r.At, n: n}:
			case <-h.stop:
				return
			}
		}
	}
}

// awaitAll waits until each host in want received a fresh notification
// about target in state, read at or after since, and returns when each
// arrived (indexed like want) and the notifications. Other notifications
// are dropped.
func (h *hosts) awaitAll(want []int, target netip.Addr, state inof.State, since time.Time, timeout time.Duration) ([]time.Time, []l2proto.Notification, error) {
	at := make([]time.Time, len(want))
	ns := make([]l2proto.Notification, len(want))
	pos := map[int]int{}
	for k, i := range want {
		pos[i] = k
	}
	left := len(want)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for left > 0 {
		select {
		case nt := <-h.ch:
			if !h.fresh(nt) {
				continue
			}
			k, ok := pos[nt.host]
			if !ok || nt.n.Target != target || nt.n.State != state || nt.at.Before(since) || !at[k].IsZero() {
				continue
			}
			at[k], ns[k] = nt.at, nt.n
			left--
		case <-deadline.C:
			return nil, nil, fmt.Errorf("%d of %d hosts got no %v notification about %s within %v", left, len(want), state, target, timeout)
		}
	}
	return at, ns, nil
}

// fresh records a notification and reports whether it is new (not a
// retransmission of one seen before).
func (h *hosts) fresh(nt notice) bool {
	if h.seen[nt.host][nt.n.Seq] {
		h.dups++
		return false
	}
	h.seen[nt.host][nt.n.Seq] = true
	h.state[nt.host][nt.n.Target] = nt.n.State
	return true
}

// drain takes every notification already queued, so that state is
// current.
func (h *hosts) drain() {
	for {
		select {
		case nt := <-h.ch:
			h.fresh(nt)
		default:
			return
		}
	}
}

// lost sums the frames the probes read but could not queue.
func (h *hosts) lost() int64 {
	var n int64
	for _, p := range h.probes {
		n += p.Lost()
	}
	return n
}
