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

var failoverHosts = []failoverHost{
	{name: "hrr", iopolicy: "round-robin"},
	{name: "hnuma", iopolicy: "numa"},
	{name: "hka", iopolicy: "round-robin", keepAlive: true},
}

// BenchmarkPrivVMFailover: the whole fabric with real kernels in qemu
// guests (docs/realhost.md): a dual-homed target and three dual-homed
// hosts (failoverHosts), each reading its multipath device in a loop; the
// target's leaf1 link is cut and restored a number of times (BENCH_TRIALS,
// else 20; 3 with -short) on each guest kernel (INOF_VM_KERNELS, as the
// path lab). Per host policy and kernel it writes the longest gap between
// completed reads per cut (p50/p99/max), the time until the cut path left
// live, the time from link up until it was live again, beside the
// keep-alive host of the same run, and for the agents where the time
// went (switch, delivery, agent, kernel), with the machine's load at the
// start and the end.
func BenchmarkPrivVMFailover(b *testing.B) {
	topo.RequireVM(b)
	requireSwitchRole(b)
	cuts := trials(b, 20, 3)
	perKernel(b, "failover", "failover", func(b *testing.B, kernel string) []result.Row {
		ff := startFailFabric(b, kernel, failoverHosts, false)
		ff.niceAgents()
		return ff.run("failover", "dual path", ff.linkCut(), cuts)
	})
}

// linkCut cuts the target's leaf1 link at the switch port (the guest
// loses carrier too): reason 1 at every host.
func (ff *failFabric) linkCut() outage {
	l := ff.tgt.Links[0]
	return outage{name: "cut", broken: "cut", mended: "link up", hits: func(failoverHost) bool { return true }, exact: true,
		brk: func() time.Time { return l.Cut(ff.b) }, mend: func() time.Time { return l.Restore(ff.b) }}
}

// run measures o n times and returns its rows; the agents' logs of what
// they did go to the benchmark's log.
func (ff *failFabric) run(group, what string, o outage, n int) []result.Row {
	var samples [][]*sample
	for i := range n {
		samples = append(samples, ff.measure(o, i))
	}
	for _, h := range ff.hosts {
		ff.b.Logf("%s: what its agent did:\n%s", h.name, agentActions(h.n.Log()))
	}
	ff.b.Logf("tgt: its links:\n%s", grepLines(ff.tgt.Log(), "link up", "link down"))
	for _, sw := range ff.f.Nodes(topo.KindSwitch) {
		ff.b.Logf("%s: what it told about %s:\n%s", sw.Name, ff.t0, grepLines(sw.Log(), "target="+ff.t0+" "))
	}
	return ff.outageRows(group, what, o, samples)
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
	return grepLines(log, "failed over", "target inactive", "path back", "disconnected", "connected", "connect failed",
		"active within", "controller exists", "failover")
}

// grepLines keeps the lines of log that contain any of ms, indented.
func grepLines(log string, ms ...string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, m := range ms {
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
