//go:build privileged

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
)

// BenchmarkPrivVMFailoverReasons: the fabric of BenchmarkPrivVMFailover
// (failoverHosts, all in zone z1) on each guest kernel, and the other ways
// the target's leaf1 path dies, BENCH_TRIALS times each (else 3; 2 with
// -short):
//
//   - reason 6, the target's leaf1 NIC gone silent: set down inside the
//     target, so the switch keeps carrier and the registration ages out
//     after its TTL (4 s here); the agents fail the path over, remove it
//     after the restrain time (disconnect_on forced) and connect it again
//     when the NIC is back;
//   - reason 7, leaf1 lost: its agent SIGKILLed and its data plane
//     stopped; the reflector's BFD (300 ms × 10 in these fabrics) finds it,
//     and the hosts hear it through leaf2, on their other NIC;
//   - reason 4, the agent hosts' leaf1 addresses removed from the zone: the
//     path works until the agent removes it after the restrain time, and
//     comes back when they are added again (the keep-alive host,
//     disconnect_on never, is not removed and not measured);
//   - reason 6, the target hung: its guest paused, so every path of every
//     host goes (no stall figure: reads wait for it), and resumed.
//
// INOF_BENCH_OUTAGES picks some of them (reasonOutages).
// It writes the rows of group "failover reasons" with the machine's load.
func BenchmarkPrivVMFailoverReasons(b *testing.B) {
	topo.RequireVM(b)
	requireSwitchRole(b)
	n := trials(b, 3, 2)
	perKernel(b, "failover reasons", "failover-reasons", func(b *testing.B, kernel string) []result.Row {
		ff := startFailFabric(b, kernel, failoverHosts, true)
		var rows []result.Row
		for _, o := range ff.reasonOutages() {
			rows = append(rows, ff.run("failover reasons", o.name, o, n)...)
		}
		return rows
	})
}

// reasonOutages are the outages INOF_BENCH_OUTAGES names (comma-separated:
// nic, switch, zone, hung), else all, in that order.
func (ff *failFabric) reasonOutages() []outage {
	all := map[string]func() outage{"nic": ff.nicSilent, "switch": ff.switchLost, "zone": ff.zoneRemoved, "hung": ff.targetHung}
	names := []string{"nic", "switch", "zone", "hung"}
	if v := os.Getenv("INOF_BENCH_OUTAGES"); v != "" {
		names = strings.Split(v, ",")
	}
	var picked []outage
	for _, n := range names {
		f, ok := all[strings.TrimSpace(n)]
		if !ok {
			ff.b.Fatalf("INOF_BENCH_OUTAGES: no outage %q (nic, switch, zone, hung)", n)
		}
		picked = append(picked, f())
	}
	return picked
}

// guestSh runs a script in the target guest and fails the benchmark on
// error; it returns the time just before.
func (ff *failFabric) guestSh(script string) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	at := time.Now()
	if _, err := ff.tgt.Guest().Sh(ctx, script); err != nil {
		ff.b.Fatal(err)
	}
	return at
}

func all(failoverHost) bool { return true }

// nicSilent: reason 6 on the target's leaf1 address (see the benchmark).
func (ff *failFabric) nicSilent() outage {
	nic := ff.tgt.Links[0].IfName
	return outage{name: "reason 6, target NIC silent", broken: "NIC silent", mended: "NIC back", hits: all,
		brk:  func() time.Time { return ff.guestSh("ip link set " + nic + " down") },
		mend: func() time.Time { return ff.guestSh("ip link set " + nic + " up") }}
}

// switchLost: reason 7 for everything behind leaf1 (see the benchmark).
func (ff *failFabric) switchLost() outage {
	sw := ff.f.Node("leaf1")
	return outage{name: "reason 7, leaf1 lost", broken: "switch lost", mended: "switch back", hits: all,
		brk: func() time.Time {
			at, err := sw.Kill()
			if err != nil {
				ff.b.Fatal(err)
			}
			sw.NS.MustIP("link", "set", "dp0", "down")
			return at
		},
		mend: func() time.Time {
			at := time.Now()
			sw.NS.MustIP("link", "set", "dp0", "up")
			if err := sw.Start(); err != nil {
				ff.b.Fatal(err)
			}
			return at
		}}
}

// zoneRemoved: reason 4 for the agent hosts' leaf1 addresses (see the
// benchmark).
func (ff *failFabric) zoneRemoved() outage {
	hits := func(h failoverHost) bool { return !h.keepAlive }
	var addrs []string
	for _, h := range ff.hosts {
		if hits(h.failoverHost) {
			addrs = append(addrs, h.addrs[0])
		}
	}
	return outage{name: "reason 4, removed from the zone", broken: "zone change", mended: "added again", hits: hits,
		brk:  func() time.Time { return ff.zone(append([]string{"remove", "z1"}, addrs...)...) },
		mend: func() time.Time { return ff.zone(append([]string{"add", "z1"}, addrs...)...) }}
}

// targetHung: reason 6 on every target address (see the benchmark).
func (ff *failFabric) targetHung() outage {
	pause := func(p bool) time.Time {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		at, err := ff.tgt.Guest().Pause(ctx, p)
		if err != nil {
			ff.b.Fatal(fmt.Errorf("pause %v: %w", p, err))
		}
		return at
	}
	return outage{name: "reason 6, target hung", broken: "target hung", mended: "resumed", hits: all, allPaths: true,
		brk: func() time.Time { return pause(true) }, mend: func() time.Time { return pause(false) }}
}
