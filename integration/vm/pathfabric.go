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

	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
	"github.com/openinof/inof/internal/syncbuf"
)

// A PathFabric is a whole dual-path NVMe/TCP fabric inside one guest (a
// Fabric image), so that everything a link cut sets off happens on the
// guest's one clock (deterministic in instruction-counted time, Icount):
//
//   - two leaf switches, network namespaces leaf1 and leaf2, each a bridge
//     of two veth ends that are the access ports of a switch agent
//     (inofd --role switch, direct mode: no reflector): swp1 towards the
//     host, swp2 towards the target;
//   - the target, namespace tgt: kernel nvmet on brd (/dev/ram0, a RAM
//     disk that keeps what is written) listening on t1 (10.101.0.20) and
//     t2 (10.102.0.20), and inof-host registering both as target NICs;
//   - the host under test in the guest's init namespace (nvme-tcp creates
//     a reconnect's sockets there, whatever namespace connected): e1
//     (10.101.0.10) and e2 (10.102.0.10), inof-host connecting both paths
//     under one native multipath device.
//
// A cut (Cuts) sets leaf1's port swp2 down: the switch sees carrier loss on
// its target port and tells the host (reason 1, link down) while the
// host's own link keeps its carrier, as for a host on another port of a
// real switch. The daemons log to files in the guest's memory
// (PathFabricLogs), so no host-side I/O lies on the measured path.
type PathFabric struct {
	g *Guest
	o PathFabricOptions
}

// PathFabricOptions configure the host under test's agent.
type PathFabricOptions struct {
	// Failover is inof-host's failover.method ("" is its default, both).
	// "none" also sets disconnect_on never: keep-alive alone decides, the
	// baseline.
	Failover string
	// KeepAliveTmo, ReconnectDelay and CtrlLossTmo are the host's nvme
	// connect -k, -c, -l in seconds; 0 means 2, 1 and 60 (the failed-over
	// controller is kept for the path's return).
	KeepAliveTmo, ReconnectDelay, CtrlLossTmo int
}

// Addresses of the path fabric: path k (0, 1) is 10.(101+k).0.0/24, the
// host .10, the target .20.
func pathHostAddr(k int) netip.Addr   { return netip.AddrFrom4([4]byte{10, byte(101 + k), 0, 10}) }
func pathTargetAddr(k int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(101 + k), 0, 20}) }

// PathFabricNQN is the path fabric target's subsystem NQN.
const PathFabricNQN = "nqn.2026-12.io.openinof:pathfabric"

// PathFabricLogs are the guest files the path fabric's daemons log to.
var PathFabricLogs = []string{"/tmp/host.log", "/tmp/tgt.log", "/tmp/leaf1.log", "/tmp/leaf2.log"}

// PathFabricMemoryMB is the guest memory a path fabric needs (the image
// with inofd, four daemons, the RAM disk).
const PathFabricMemoryMB = 768

// StartPathFabric builds the fabric in g (booted from a Fabric image) and
// starts its four daemons; the host's paths come up by themselves (Cuts
// waits for them in guest time). ctx bounds the setup commands.
func StartPathFabric(ctx context.Context, g *Guest, o PathFabricOptions) (*PathFabric, error) {
	if !g.cfg.Image.Fabric {
		return nil, fmt.Errorf("vm: %s: a path fabric needs an image built with ImageOptions.Fabric", g.Name)
	}
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	o.KeepAliveTmo, o.ReconnectDelay, o.CtrlLossTmo = def(o.KeepAliveTmo, 2), def(o.ReconnectDelay, 1), def(o.CtrlLossTmo, 60)
	p := &PathFabric{g: g, o: o}
	var s strings.Builder
	fmt.Fprintf(&s, "set -e\nIP=%s\n", GuestIP)
	for _, ns := range []string{"leaf1", "leaf2", "tgt"} {
		fmt.Fprintf(&s, "$IP netns add %[1]s\n$IP -n %[1]s link set lo up\n", ns)
	}
	for k := range 2 {
		leaf := fmt.Sprintf("leaf%d", k+1)
		// Made in the init namespace, then moved (and the switch ends
		// renamed swp1 and swp2 there).
		fmt.Fprintf(&s, "$IP link add dev e%[1]d type veth peer name h%[1]d\n$IP link set dev h%[1]d netns %[2]s\n"+
			"$IP -n %[2]s link set dev h%[1]d name swp1\n", k+1, leaf)
		fmt.Fprintf(&s, "$IP link add dev t%[1]d type veth peer name s%[1]d\n$IP link set dev t%[1]d netns tgt\n"+
			"$IP link set dev s%[1]d netns %[2]s\n$IP -n %[2]s link set dev s%[1]d name swp2\n", k+1, leaf)
		fmt.Fprintf(&s, "$IP -n %[1]s link add dev sw type bridge\n$IP -n %[1]s link set dev swp1 master sw\n"+
			"$IP -n %[1]s link set dev swp2 master sw\n", leaf)
		fmt.Fprintf(&s, "$IP -n %[1]s link set dev sw up\n$IP -n %[1]s link set dev swp1 up\n$IP -n %[1]s link set dev swp2 up\n", leaf)
		fmt.Fprintf(&s, "$IP addr add %s/24 dev e%d\n$IP link set dev e%[2]d up\n", pathHostAddr(k), k+1)
		fmt.Fprintf(&s, "$IP -n tgt addr add %s/24 dev t%d\n$IP -n tgt link set dev t%[2]d up\n", pathTargetAddr(k), k+1)
	}
	if _, err := g.Sh(ctx, s.String()); err != nil {
		return nil, fmt.Errorf("vm: path fabric: links: %w", err)
	}
	// nvmet in tgt: ip netns exec mounts a fresh sysfs, without configfs.
	tscript, err := targetScript(Target{NQN: PathFabricNQN, Addrs: []netip.Addr{pathTargetAddr(0), pathTargetAddr(1)},
		Device: "/dev/ram0"})
	if err != nil {
		return nil, err
	}
	if _, err := g.Run(ctx, GuestIP, "netns", "exec", "tgt", "sh", "-c",
		"mount -t configfs none /sys/kernel/config && "+tscript); err != nil {
		return nil, fmt.Errorf("vm: path fabric: target: %w", err)
	}
	configs := map[string]map[string]any{"/etc/inof/host.yaml": p.hostConfig(), "/etc/inof/tgt.yaml": p.targetConfig()}
	for k := range 2 {
		configs[fmt.Sprintf("/etc/inof/leaf%d.yaml", k+1)] = p.switchConfig(k)
	}
	for path, cfg := range configs {
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		if err := g.WriteFile(ctx, path, b, 0o600); err != nil {
			return nil, err
		}
	}
	// The switches first, and the agents only once both switches run (a
	// second later, in guest time: they open their access ports after
	// the line waited for). A host agent's zone query that no switch
	// hears is not repeated, and a switch tells a host that registers
	// after a target nothing until it is asked: started together, the
	// host never heard of the target on one leaf in 3 of 16 guests
	// (docs/realhost.md, finding 6).
	start := fmt.Sprintf("IP=%s\n", GuestIP) +
		"setsid $IP netns exec leaf1 " + GuestInofd + " --role switch --config /etc/inof/leaf1.yaml </dev/null >/tmp/leaf1.log 2>&1 &\n" +
		"setsid $IP netns exec leaf2 " + GuestInofd + " --role switch --config /etc/inof/leaf2.yaml </dev/null >/tmp/leaf2.log 2>&1 &\n" +
		"i=0; until grep -q 'switch agent starting' /tmp/leaf1.log && grep -q 'switch agent starting' /tmp/leaf2.log; do\n" +
		"  i=$((i+1)); [ $i -lt 300 ] || { echo switches did not start; exit 1; }; sleep 0.1\ndone\nsleep 1\n" +
		"setsid $IP netns exec tgt " + GuestInofHost + " --config /etc/inof/tgt.yaml </dev/null >/tmp/tgt.log 2>&1 &\n" +
		"setsid " + GuestInofHost + " --config /etc/inof/host.yaml </dev/null >/tmp/host.log 2>&1 &\n"
	if _, err := g.Sh(ctx, start); err != nil {
		return nil, fmt.Errorf("vm: path fabric: daemons: %w", err)
	}
	return p, nil
}

func (p *PathFabric) switchConfig(k int) map[string]any {
	return map[string]any{
		"log":            map[string]any{"level": "info"},
		"metrics_listen": "127.0.0.1:9466",
		"state_dir":      fmt.Sprintf("/var/lib/inofd-leaf%d", k+1),
		"router_id":      fmt.Sprintf("10.0.0.%d", 11+k),
		"asn":            65000,
		"reflectors":     []any{},
		"api":            map[string]any{"socket": fmt.Sprintf("/run/inofd-leaf%d.sock", k+1)},
		"access_ports":   []any{"swp1", "swp2"},
	}
}

func (p *PathFabric) hostConfig() map[string]any {
	cfg := map[string]any{
		"log":                   map[string]any{"level": "debug"},
		"metrics_listen":        "127.0.0.1:9464",
		"state_file":            "/var/lib/inof-host/host.json",
		"registration_interval": "1s",
		"registration_ttl":      "4s",
		"nvme": map[string]any{"path": GuestNVMe, "keep_alive_tmo": p.o.KeepAliveTmo,
			"reconnect_delay": p.o.ReconnectDelay, "ctrl_loss_tmo": p.o.CtrlLossTmo},
		"interfaces": []any{
			map[string]any{"name": "e1", "role": "host", "protocol": "tcp", "address": pathHostAddr(0).String()},
			map[string]any{"name": "e2", "role": "host", "protocol": "tcp", "address": pathHostAddr(1).String()},
		},
	}
	if p.o.Failover != "" {
		cfg["failover"] = map[string]any{"method": p.o.Failover}
	}
	if p.o.Failover == "none" {
		cfg["disconnect_on"] = "never"
	}
	return cfg
}

func (p *PathFabric) targetConfig() map[string]any {
	var ifs []any
	for k := range 2 {
		ifs = append(ifs, map[string]any{"name": fmt.Sprintf("t%d", k+1), "role": "target", "protocol": "tcp",
			"address": pathTargetAddr(k).String(), "port": 4420, "nqn": PathFabricNQN})
	}
	return map[string]any{
		"log":                   map[string]any{"level": "info"},
		"metrics_listen":        "127.0.0.1:9464",
		"state_file":            "/var/lib/inof-host/tgt.json",
		"registration_interval": "1s",
		"registration_ttl":      "4s",
		"interfaces":            ifs,
	}
}

// CutOptions are one run of the guest's cut runner (GuestCuts).
type CutOptions struct {
	// N is the number of cuts.
	N int
	// IOPolicy is the native multipath I/O policy (round-robin, numa).
	IOPolicy string
	// Write makes the workload sequence-numbered writes, verified after
	// every cut, instead of random reads.
	Write bool
	// Settle, After, Hold, Back and Ready are the runner's waits in guest
	// time (cuts -settle, -after, -hold, -back, -ready); 0 keeps its
	// defaults (2 s, 1 s, 60 s, 60 s, 120 s).
	Settle, After, Hold, Back, Ready time.Duration
}

// CutReport is one cut as the guest measured it (guest time).
type CutReport = ctlproto.CutReport

// Cuts runs the guest's cut runner: it waits (in guest time) until both
// paths are live, then cuts the first path N times at leaf1's target port
// and restores it, measuring each cut in guest time. ctx is only a safety
// net in wall time (a deterministic guest runs at a few percent of real
// time: allow minutes per cut). It returns the reports and the runner's
// output.
func (p *PathFabric) Cuts(ctx context.Context, o CutOptions) ([]CutReport, string, error) {
	argv := []string{GuestCuts, "-n", strconv.Itoa(o.N),
		"-paths", pathTargetAddr(0).String() + "," + pathTargetAddr(1).String(),
		"-link", "leaf1/swp2"}
	if o.IOPolicy != "" {
		argv = append(argv, "-iopolicy", o.IOPolicy)
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
	proc, err := p.g.Start(ctx, argv, out)
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
			return nil, out.String(), fmt.Errorf("vm: %s: cuts: %w", p.g.Name, ctx.Err())
		case <-tick.C:
			if oops := KernelOops(p.g.Console()); oops != "" {
				return nil, out.String(), fmt.Errorf("vm: %s: kernel oops during the cuts:\n%s", p.g.Name, oops)
			}
		}
	}
	code, err := proc.Wait(ctx)
	if err != nil {
		return nil, out.String(), fmt.Errorf("vm: %s: cuts: %w", p.g.Name, err)
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
		return reps, out.String(), fmt.Errorf("vm: %s: cuts exited %d:\n%s", p.g.Name, code, truncate(out.String(), 2000))
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

// Grep counts the lines of a daemon's log file (PathFabricLogs) that
// contain s.
func (p *PathFabric) Grep(ctx context.Context, file, s string) (int, error) {
	r, err := p.g.Run(ctx, "grep", "-c", "-F", s, file)
	if err != nil {
		return 0, err
	}
	if r.Code > 1 {
		return 0, fmt.Errorf("vm: grep %s: exit %d: %s", file, r.Code, bytes.TrimSpace(r.Stderr))
	}
	return strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
}

// Diagnose is the end of every daemon's log and of the console, for a
// failure's message.
func (p *PathFabric) Diagnose(ctx context.Context) string {
	var b strings.Builder
	for _, f := range PathFabricLogs {
		fmt.Fprintf(&b, "--- %s:\n%s", f, p.Tail(ctx, f, 25))
	}
	l := strings.Split(strings.TrimRight(p.g.Console(), "\n"), "\n")
	if len(l) > 30 {
		l = l[len(l)-30:]
	}
	fmt.Fprintf(&b, "--- console:\n%s\n", strings.Join(l, "\n"))
	return b.String()
}

// Tail is the end of a daemon's log file.
func (p *PathFabric) Tail(ctx context.Context, file string, lines int) string {
	r, err := p.g.Run(ctx, "tail", "-n", strconv.Itoa(lines), file)
	if err != nil {
		return err.Error()
	}
	return string(r.Stdout)
}
