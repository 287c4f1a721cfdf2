//go:build privileged

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
)

// failoverHost is one host guest of the failover benchmark and its policy.
type failoverHost struct {
	name, iopolicy string
	// keepAlive makes the agent leave the path to the kernel (failover
	// none, disconnect_on never): the baseline.
	keepAlive bool
}

var failoverHosts = []failoverHost{
	{name: "hrr", iopolicy: "round-robin"},
	{name: "hnuma", iopolicy: "numa"},
	{name: "hka", iopolicy: "round-robin", keepAlive: true},
}

func (h failoverHost) label() string {
	if h.keepAlive {
		return "keep-alive only, " + h.iopolicy
	}
	return "inof-host defaults, " + h.iopolicy
}

// BenchmarkPrivVMFailover: the whole fabric with real kernels in qemu
// guests (docs/realhost.md): a dual-homed target and three dual-homed
// hosts, each reading its multipath device in a loop; the target's leaf1
// link is cut and restored a number of times (BENCH_TRIALS, else 20; 3
// with -short) on each guest kernel (INOF_VM_KERNELS, as the path lab).
// Per host policy and kernel it writes the longest gap between completed
// reads per cut (p50/p99/max), the time until the cut path left live, and
// the time from link up until it was live again, beside the keep-alive
// host of the same run.
func BenchmarkPrivVMFailover(b *testing.B) {
	topo.RequireVM(b)
	requireSwitchRole(b)
	cuts := trials(b, 20, 3)
	var rows []result.Row
	for _, kernel := range labKernels() {
		name := kernel
		if name == "" {
			name = "default"
		}
		b.Run(name, func(b *testing.B) { rows = append(rows, runFailover(b, kernel, cuts)...) })
	}
	writeRows(b, "failover", rows)
}

func runFailover(b *testing.B, kernel string, cuts int) []result.Row {
	sws := []string{"leaf1", "leaf2"}
	tgt := topo.Device{Name: "tgt", VM: &topo.VM{Kernel: kernel}}
	for _, sw := range sws {
		tgt.NICs = append(tgt.NICs, topo.NIC{Switch: sw, Role: "target", Protocol: "tcp", Port: 4420, NQN: subNQN})
	}
	devs := []topo.Device{tgt}
	pol := map[string]failoverHost{}
	for _, h := range failoverHosts {
		// ctrl_loss_tmo 60 s keeps a failed-over controller for its
		// return (the VM default of 5 s would have the kernel delete it
		// while the keep-alive host's cut lasts).
		d := topo.Device{Name: h.name, VM: &topo.VM{Kernel: kernel, CtrlLossTmo: 60}}
		for _, sw := range sws {
			d.NICs = append(d.NICs, topo.NIC{Switch: sw, Role: "host", Protocol: "tcp"})
		}
		devs = append(devs, d)
		pol[h.name] = h
	}
	// BFD at 300 ms × 10: four TCG guests keep the two cores busy.
	spec := withBFD(topo.Spec{Reflectors: []string{"rr1"}, Switches: sws, Devices: devs}, "300ms", 10, 0)
	spec.HostConfig = func(name string, cfg map[string]any) {
		cfg["registration_interval"] = "1s"
		cfg["registration_ttl"] = "4s"
		if pol[name].keepAlive {
			cfg["disconnect_on"] = "never"
			cfg["failover"] = map[string]any{"method": "none"}
		}
	}
	f := topo.Start(b, spec)
	establish(b, f)
	t := f.Node("tgt")
	t0, t1 := t.Links[0].Addr().String(), t.Links[1].Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cuts)*3*time.Minute+5*time.Minute)
	defer cancel()
	hosts := make([]*topo.Node, len(failoverHosts))
	meters := make([]*vm.IOStall, len(failoverHosts))
	var release string
	for i, fh := range failoverHosts {
		h := f.Node(fh.name)
		hosts[i] = h
		for _, ta := range []string{t0, t1} {
			if _, err := waitController(ctx, h.Guest(), ta, isLive); err != nil {
				b.Fatalf("%s: %v", h.Name, err)
			}
		}
		nss, err := h.Guest().Namespaces(ctx)
		if err != nil || len(nss) != 1 {
			b.Fatalf("%s: namespaces %v (%v), want one multipath device", h.Name, nss, err)
		}
		if _, err := h.Guest().Sh(ctx, "for p in /sys/class/nvme-subsystem/*/iopolicy; do echo "+fh.iopolicy+" > $p; done"); err != nil {
			b.Fatal(err)
		}
		if meters[i], err = h.Guest().StartIOStall(ctx, "/dev/"+nss[0]); err != nil {
			b.Fatal(err)
		}
		defer meters[i].Stop(context.Background())
		if release == "" {
			release, _ = h.Guest().Sh(ctx, "uname -r")
		}
	}
	n := len(failoverHosts)
	stalls, notLive, back := make([][]time.Duration, n), make([][]time.Duration, n), make([][]time.Duration, n)
	readErrors := make([]uint64, n)
	for c := range cuts {
		time.Sleep(time.Second)
		for i := range hosts {
			if _, err := meters[i].Window(ctx); err != nil {
				b.Fatal(err)
			}
		}
		cut := t.Links[0].Cut(b)
		b.Logf("cut %d at %s", c, cut.UTC().Format(time.RFC3339Nano))
		// Each host's stall is over once its cut path has left live and
		// reads went on after that.
		left := make([]time.Duration, n)
		before := make([]uint64, n)
		done := 0
		for done < n {
			for i, h := range hosts {
				if stalls[i] != nil && len(stalls[i]) > c {
					continue
				}
				p, err := controllerTo(ctx, h.Guest(), t0)
				if err != nil {
					b.Fatal(err)
				}
				r, err := meters[i].Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				switch {
				case left[i] == 0 && p.State != "live":
					left[i], before[i] = time.Since(cut), r.Reads
				case left[i] != 0 && r.Reads > before[i]:
					w, err := meters[i].Window(ctx)
					if err != nil {
						b.Fatal(err)
					}
					stalls[i] = append(stalls[i], time.Duration(w.MaxGapMS*float64(time.Millisecond)))
					notLive[i] = append(notLive[i], left[i])
					readErrors[i] += w.Errors
					done++
				}
			}
			if time.Since(cut) > 2*time.Minute {
				b.Fatalf("cut %d: reads did not go on within 2 min on every host", c)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Every host is polled in turn, so one slow host does not delay
		// another's figure.
		up := t.Links[0].Restore(b)
		seen := make([]bool, n)
		for left := n; left > 0; time.Sleep(20 * time.Millisecond) {
			for i, h := range hosts {
				if seen[i] {
					continue
				}
				p, err := controllerTo(ctx, h.Guest(), t0)
				if err != nil {
					b.Fatal(err)
				}
				if isLive(p) {
					seen[i], left = true, left-1
					back[i] = append(back[i], time.Since(up))
				}
			}
			if time.Since(up) > 2*time.Minute {
				b.Fatalf("cut %d: the leaf1 path not live on every host 2 min after the link came back", c)
			}
		}
		b.Logf("cut %d: stalls %v %v %v, not live after %v %v %v, live again %v %v %v", c,
			ms(stalls[0][c]), ms(stalls[1][c]), ms(stalls[2][c]), ms(notLive[0][c]), ms(notLive[1][c]), ms(notLive[2][c]),
			ms(back[0][c]), ms(back[1][c]), ms(back[2][c]))
	}
	for _, h := range hosts {
		b.Logf("%s: what its agent did:\n%s", h.Name, agentActions(h.Log()))
	}
	kern := "Linux " + trimNL(release)
	var rows []result.Row
	for i, fh := range failoverHosts {
		note := fmt.Sprintf("%s; %d read errors in %d cuts", kern, readErrors[i], cuts)
		rows = append(rows,
			durations(b, result.Row{Group: "failover", Name: fmt.Sprintf("dual path, %s (%s): longest gap between reads", fh.label(), kern),
				Unit: "ms", Goal: "≤ 200 ms p99, 0 read errors", Note: note}, stalls[i]),
			durations(b, result.Row{Group: "failover", Name: fmt.Sprintf("dual path, %s (%s): cut → path not live", fh.label(), kern),
				Unit: "ms", Goal: "≤ 1 s", Note: kern}, notLive[i]),
			durations(b, result.Row{Group: "failover", Name: fmt.Sprintf("dual path, %s (%s): link up → path live", fh.label(), kern),
				Unit: "ms", Goal: "≤ 2 s", Note: kern}, back[i]))
	}
	return rows
}

// controllerTo returns the guest's controller to traddr (zero when none).
func controllerTo(ctx context.Context, g *vm.Guest, traddr string) (vm.Controller, error) {
	cs, err := g.Controllers(ctx)
	if err != nil {
		return vm.Controller{}, err
	}
	for _, c := range cs {
		if c.TrAddr == traddr {
			return c, nil
		}
	}
	return vm.Controller{}, nil
}

// waitController polls the guest's controller to traddr until ok holds
// and returns when it first did.
func waitController(ctx context.Context, g *vm.Guest, traddr string, ok func(vm.Controller) bool) (time.Time, error) {
	for {
		c, err := controllerTo(ctx, g, traddr)
		if err != nil {
			return time.Time{}, err
		}
		if ok(c) {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("path to %s: %+v: %w", traddr, c, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// agentActions keeps an agent log's lines about notifications and
// failovers.
func agentActions(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, m := range []string{"failed over", "target inactive", "rejoined", "replaced", "connect failed", "active within", "controller exists", "failover"} {
			if strings.Contains(l, m) {
				out = append(out, "  "+l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func isLive(c vm.Controller) bool { return c.State == "live" }

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}
