//go:build privileged

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
	"github.com/openinof/inof/internal/netns"
)

// The path lab: one target guest and one host guest, each with a NIC on
// two bridges of a namespace, the host with a controller over each NIC
// under one native multipath device and a read loop on it. A cut takes
// the target's first NIC away (tap down and QMP carrier off, as a switch
// port going down), and at once does to the host what one failover
// mechanism does: what inof-host could do the moment the fabric's
// notification arrives (2–4 ms after the cut, docs/performance.md). It
// measures, per cut, the longest gap between completed reads, read
// errors, when the path left `live`, and, after the link is restored,
// when the path was live again. No switch agent is involved: this
// isolates the kernel's behaviour (docs/realhost.md, "Failover
// mechanisms").

// mechanism is what is done to the host the moment the path is cut.
type mechanism struct {
	name string
	// setup runs for each path's new controller C (nvme-cli 2.3 has no
	// fast_io_fail_tmo option: sysfs sets it).
	setup string
	// act runs in the host guest right after the cut, for the cut path's
	// controller C from SRC to DST:4420; it must not block (a blocking
	// sysfs write or nvme-cli call goes to the background).
	act string
	// rejoin runs after the link is restored (a deleted path is
	// connected again); empty leaves reconnecting to the kernel.
	rejoin bool
	// up runs in the host guest right after the link is restored, for the
	// same C, SRC and DST: what inof-host could do when the fabric says
	// the target is active again.
	up string
}

// abortReset is inof-host's default failover (failover.method both).
const abortReset = `sockkill $SRC $DST 4420 >/dev/null; (echo 1 > /sys/class/nvme/$C/reset_controller) >/dev/null 2>&1 &`

var mechanisms = []mechanism{
	{name: "keep-alive only"},
	{name: "sysfs reset_controller", act: `(echo 1 > /sys/class/nvme/$C/reset_controller) >/dev/null 2>&1 &`},
	{name: "inet_diag SOCK_DESTROY", act: `sockkill $SRC $DST 4420 >/dev/null`},
	{name: "SOCK_DESTROY + reset_controller", act: abortReset},
	{name: "nvme disconnect of the live path", act: `(nvme disconnect -d $C) >/dev/null 2>&1 &`, rejoin: true},
	{name: "fast_io_fail_tmo 0 (keep-alive only)", setup: `echo 0 > /sys/class/nvme/$C/fast_io_fail_tmo`},
	// Link back: the reconnect attempt begun while the link was down
	// (SYN_SENT) is aborted, so the kernel's next one goes over the live
	// link after reconnect_delay (1 s)...
	{name: "SOCK_DESTROY + reset_controller, link up: abort the waiting connect", act: abortReset,
		up: `sockkill -syn $SRC $DST 4420`},
	// ... or at once: reconnect_delay 0 while the failed attempt is
	// requeued, then back to 1 s.
	{name: "SOCK_DESTROY + reset_controller, link up: reconnect_delay 0, abort the waiting connect", act: abortReset,
		up: `R=/sys/class/nvme/$C/reconnect_delay; echo 0 > $R; sockkill -syn $SRC $DST 4420; (sleep 0.5; echo 1 > $R) >/dev/null 2>&1 &`},
}

// labMechanisms are the mechanisms INOF_LAB_MECHANISMS names (a
// comma-separated list of indexes into mechanisms), else all.
func labMechanisms(b *testing.B) []mechanism {
	s := os.Getenv("INOF_LAB_MECHANISMS")
	if s == "" {
		return mechanisms
	}
	var ms []mechanism
	for _, f := range strings.Split(s, ",") {
		var i int
		if _, err := fmt.Sscan(f, &i); err != nil || i < 0 || i >= len(mechanisms) {
			b.Fatalf("INOF_LAB_MECHANISMS=%q: want indexes 0..%d", s, len(mechanisms)-1)
		}
		ms = append(ms, mechanisms[i])
	}
	return ms
}

// BenchmarkPrivVMPathLab runs every mechanism for a number of cuts
// (BENCH_TRIALS, else 5; 2 with -short: six mechanisms, one of them
// 35 s a cut on 6.1) on each guest kernel, and writes
// per kernel and mechanism the stall, the time the path left live and
// the link-back time as rows of the "failover lab" group.
func BenchmarkPrivVMPathLab(b *testing.B) {
	topo.RequireVM(b)
	cuts := trials(b, 5, 2)
	var rows []result.Row
	for _, kernel := range vm.EnvKernels() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		img, err := vm.BuildImage(ctx, vm.ImageOptions{KernelPackage: kernel, Log: b.Logf})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range labMechanisms(b) {
			b.Run(img.KernelRelease+"/"+m.name, func(b *testing.B) {
				rows = append(rows, runLab(b, img, m, cuts)...)
			})
		}
	}
	writeRows(b, "failover-lab", rows)
}

// labAddr is the address of a lab guest (1 target, 2 host) on bridge k.
func labAddr(k, guest int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(70 + k), 0, byte(10 * guest)})
}

// lab is one booted pair of guests.
type lab struct {
	ns       *netns.NS
	tgt, hst *vm.Guest
	tgtTaps  []*vm.Tap
}

func startLab(b *testing.B, img vm.Image) *lab {
	b.Helper()
	l := &lab{ns: netns.New(b, "lab")}
	for k := range 2 {
		br := fmt.Sprintf("br%d", k)
		l.ns.MustIP("link", "add", br, "type", "bridge")
		l.ns.MustIP("link", "set", br, "up")
	}
	dir := b.TempDir()
	var nics [2][]vm.NIC
	for g, role := range []string{"t", "h"} {
		for k := range 2 {
			tp, err := vm.CreateTap(l.ns, fmt.Sprintf("%s%d", role, k))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { tp.Close() })
			l.ns.MustIP("link", "set", tp.Name, "master", fmt.Sprintf("br%d", k))
			nics[g] = append(nics[g], vm.NIC{Tap: tp, MAC: vm.MAC(0x70, byte(g), byte(k))})
			if g == 0 {
				l.tgtTaps = append(l.tgtTaps, tp)
			}
		}
	}
	var wg sync.WaitGroup
	guests := make([]*vm.Guest, 2)
	errs := make([]error, 2)
	for g, name := range []string{"tgt", "hst"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			guests[g], errs[g] = vm.Boot(ctx, vm.Config{Name: name, Dir: dir, Image: img, NICs: nics[g]})
		}()
	}
	wg.Wait()
	for g := range guests {
		if guests[g] != nil {
			b.Cleanup(func() { guests[g].Close() })
		}
		if errs[g] != nil {
			b.Fatal(errs[g])
		}
	}
	l.tgt, l.hst = guests[0], guests[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for g, gu := range guests {
		var s strings.Builder
		for k := range 2 {
			fmt.Fprintf(&s, "ip addr add %s/24 dev eth%d && ip link set eth%d up && ", labAddr(k, g+1), k, k)
		}
		s.WriteString("echo 1 > /proc/sys/kernel/sysrq")
		if _, err := gu.Sh(ctx, s.String()); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.tgt.SetupTarget(ctx, vm.Target{NQN: subNQN, Addrs: []netip.Addr{labAddr(0, 1), labAddr(1, 1)}}); err != nil {
		b.Fatal(err)
	}
	return l
}

// connect connects the host's path k and runs the mechanism's setup on
// the new controller.
func (l *lab) connect(ctx context.Context, k int, setup string) error {
	_, err := l.hst.Sh(ctx, fmt.Sprintf("nvme connect -t tcp -a %s -s 4420 -w %s -n %s -k 2 -c 1 -l 30 >/dev/null",
		labAddr(k, 1), labAddr(k, 2), subNQN))
	if err != nil || setup == "" {
		return err
	}
	if _, err := l.waitLive(ctx, k); err != nil {
		return err
	}
	p, err := l.path(ctx, k)
	if err != nil {
		return err
	}
	_, err = l.hst.Sh(ctx, fmt.Sprintf("C=%s; %s", p.Name, setup))
	return err
}

// path returns the host's controller on path k (zero when none).
func (l *lab) path(ctx context.Context, k int) (vm.Controller, error) {
	return controllerTo(ctx, l.hst, labAddr(k, 1).String())
}

// waitLive waits until path k is live and returns when it first was.
func (l *lab) waitLive(ctx context.Context, k int) (time.Time, error) {
	return waitController(ctx, l.hst, labAddr(k, 1).String(), isLive)
}

// setLink cuts or restores the target's NIC 0: tap and guest carrier.
func (l *lab) setLink(ctx context.Context, up bool) (time.Time, error) {
	at := time.Now()
	if err := l.tgtTaps[0].SetUp(up); err != nil {
		return at, err
	}
	_, err := l.tgt.SetLink(ctx, 0, up)
	return at, err
}

// runLab boots a fresh pair for mechanism m and cuts path 0 cuts times.
func runLab(b *testing.B, img vm.Image, m mechanism, cuts int) []result.Row {
	l := startLab(b, img)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cuts)*3*time.Minute)
	defer cancel()
	for k := range 2 {
		if err := l.connect(ctx, k, m.setup); err != nil {
			b.Fatal(err)
		}
	}
	for k := range 2 {
		if _, err := l.waitLive(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	nss, err := l.hst.Namespaces(ctx)
	if err != nil || len(nss) != 1 {
		b.Fatalf("namespaces %v (%v), want one multipath device", nss, err)
	}
	if _, err := l.hst.Sh(ctx, "for p in /sys/class/nvme-subsystem/*/iopolicy; do echo round-robin > $p; done"); err != nil {
		b.Fatal(err)
	}
	meter, err := l.hst.StartIOStall(ctx, "/dev/"+nss[0])
	if err != nil {
		b.Fatal(err)
	}
	defer meter.Stop(context.Background())
	var stalls, notLive, back []time.Duration
	var readErrors uint64
	for i := range cuts {
		time.Sleep(time.Second)
		if _, err := meter.Window(ctx); err != nil {
			b.Fatal(err)
		}
		c, err := l.path(ctx, 0)
		if err != nil || c.State != "live" {
			b.Fatalf("cut %d: path 0 %+v (%v), want live", i, c, err)
		}
		dmesgMark := dmesgLines(ctx, l.hst)
		cut, err := l.setLink(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
		if m.act != "" {
			script := fmt.Sprintf("C=%s SRC=%s DST=%s; %s", c.Name, labAddr(0, 2), labAddr(0, 1), m.act)
			if _, err := l.hst.Sh(ctx, script); err != nil {
				b.Fatalf("cut %d: %s: %v", i, m.name, err)
			}
		}
		// The stall is over once the path has left live and reads go on.
		var left time.Duration
		var before uint64
		sysrq := false
		for {
			p, err := l.path(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			r, err := meter.Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if left == 0 && p.State != "live" {
				left, before = time.Since(cut), r.Reads
			} else if left != 0 && r.Reads > before {
				break
			}
			if !sysrq && time.Since(cut) > 15*time.Second {
				// A long stall: ask the kernel which tasks are blocked.
				sysrq = true
				l.hst.Sh(ctx, "echo w > /proc/sysrq-trigger")
			}
			if time.Since(cut) > 2*time.Minute {
				b.Fatalf("cut %d: reads did not go on within 2 min (path %+v)", i, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r, err := meter.Window(ctx)
		if err != nil {
			b.Fatal(err)
		}
		stall := time.Duration(r.MaxGapMS * float64(time.Millisecond))
		stalls, notLive = append(stalls, stall), append(notLive, left)
		readErrors += r.Errors
		if stall > 2*time.Second || i == 0 {
			b.Logf("cut %d: stall %s, not live after %s; host kernel log:\n%s", i, stall.Round(time.Millisecond),
				left.Round(time.Millisecond), dmesgSince(ctx, l.hst, dmesgMark, 60))
		}
		// INOF_LAB_HOLD keeps the link down that long after the cut (as
		// the fabric benchmark's cuts last until keep-alive has acted):
		// the kernel's reconnect attempts then run into the dead link.
		if hold, err := time.ParseDuration(os.Getenv("INOF_LAB_HOLD")); err == nil {
			time.Sleep(time.Until(cut.Add(hold)))
		}
		up, err := l.setLink(ctx, true)
		if err != nil {
			b.Fatal(err)
		}
		upUptime := ""
		if os.Getenv("INOF_LAB_DMESG") != "" {
			ut, _ := l.hst.ReadFiles(ctx, "/proc/uptime")
			upUptime = fmt.Sprintf("%s (read %s after)", strings.Fields(ut["/proc/uptime"] + " ?")[0], time.Since(up).Round(time.Millisecond))
		}
		if m.up != "" {
			script := fmt.Sprintf("C=%s SRC=%s DST=%s; %s", c.Name, labAddr(0, 2), labAddr(0, 1), m.up)
			out, err := l.hst.Sh(ctx, script)
			if err != nil {
				b.Fatalf("cut %d: link up: %s: %v", i, m.name, err)
			}
			b.Logf("cut %d: link up: %s", i, strings.TrimSpace(out))
		}
		if m.rejoin {
			if _, err := l.waitGone(ctx, 0); err != nil {
				b.Fatal(err)
			}
			if err := l.connect(ctx, 0, m.setup); err != nil {
				b.Fatalf("cut %d: reconnect: %v", i, err)
			}
		}
		// Live again; a slow return gets the blocked tasks in the log.
		wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
		at, err := l.waitLive(wctx, 0)
		wcancel()
		if err != nil {
			l.hst.Sh(ctx, "echo w > /proc/sysrq-trigger")
			if at, err = l.waitLive(ctx, 0); err != nil {
				b.Fatal(err)
			}
			b.Logf("cut %d: live again only %s after the link came back; host kernel log:\n%s", i,
				at.Sub(up).Round(time.Millisecond), dmesgSince(ctx, l.hst, dmesgMark, 120))
		}
		back = append(back, at.Sub(up))
		if os.Getenv("INOF_LAB_DMESG") != "" {
			// Where the link-back time goes: the host's kernel log of the
			// cut, and its uptime when the link came back.
			b.Logf("cut %d: link up at host uptime ~%s; host kernel log:\n%s", i, upUptime,
				dmesgSince(ctx, l.hst, dmesgMark, 60))
		}
		b.Logf("cut %d: stall %s, errors %d, path not live after %s, live again %s after the link came back",
			i, stall.Round(time.Millisecond), r.Errors, left.Round(time.Millisecond), at.Sub(up).Round(time.Millisecond))
	}
	kern := "Linux " + img.KernelRelease
	note := fmt.Sprintf("%s; %d read errors in %d cuts", kern, readErrors, cuts)
	return []result.Row{
		durations(b, result.Row{Group: "failover lab", Name: m.name + " (" + kern + "): longest gap between reads",
			Unit: "ms", Goal: "≤ 200 ms p99, 0 read errors", Note: note}, stalls),
		durations(b, result.Row{Group: "failover lab", Name: m.name + " (" + kern + "): cut → path not live",
			Unit: "ms", Goal: "≤ 1 s", Note: kern}, notLive),
		durations(b, result.Row{Group: "failover lab", Name: m.name + " (" + kern + "): link up → path live",
			Unit: "ms", Goal: "≤ 2 s", Note: kern}, back),
	}
}

// waitGone waits until path k has no controller.
func (l *lab) waitGone(ctx context.Context, k int) (time.Time, error) {
	return waitController(ctx, l.hst, labAddr(k, 1).String(), func(c vm.Controller) bool { return c.Name == "" })
}

// dmesgLines is how many lines the guest's kernel log has.
func dmesgLines(ctx context.Context, g *vm.Guest) int {
	out, err := g.Sh(ctx, "dmesg | wc -l")
	if err != nil {
		return 0
	}
	var n int
	fmt.Sscan(strings.TrimSpace(out), &n)
	return n
}

// dmesgSince is the guest's kernel log after line mark, at most max lines.
func dmesgSince(ctx context.Context, g *vm.Guest, mark, max int) string {
	out, err := g.Sh(ctx, fmt.Sprintf("dmesg | tail -n +%d | head -n %d", mark+1, max))
	if err != nil {
		return err.Error()
	}
	return out
}
