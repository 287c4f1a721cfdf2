package vm

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
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
//
// With PathFabricOptions.Reflector the leaves run in BGP mode instead,
// clients of a route reflector (inofd --role reflector) in namespace rr:
// leaf k's uplink up0 (10.100.k.2/30) is a veth pair with the reflector's
// rk (10.100.k.1/30), carrying BGP and BFD. The zone pf (the host's and
// the target's four addresses) is created with inofctl on the reflector's
// API before the switches start, as an admin would. Each leaf then also
// tells the host of the target address behind the other leaf; the host's
// policy routing prohibits that cross path (e2 to 10.101.0.20, e1 to
// 10.102.0.20: two storage networks, no route between them), so the agent
// connects each target address from one host address only. There a cut
// can also lose leaf1 whole (SwitchLost, reason 7), silence the target on
// leaf1 (TargetSilent, reason 6; the target then runs one agent per NIC)
// or take the host's leaf1 address out of the zone (ZoneRemoved, reason 4).
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
	// Reflector, when set, runs the leaves in BGP mode with a route
	// reflector (see PathFabric); nil: direct mode, no reflector.
	Reflector *PathReflector
}

// PathReflector is the route reflector of a path fabric in BGP mode.
type PathReflector struct {
	// BFDInterval and BFDMult are the BFD timers of the leaves' sessions
	// with the reflector, on both ends (desired_min_tx = required_min_rx
	// = BFDInterval, detect_mult = BFDMult): a leaf that vanishes is
	// found BFDInterval × BFDMult after its last packet. 0 means the
	// daemons' default, 100 ms and 3.
	BFDInterval time.Duration
	BFDMult     uint8
}

// Paths of the reflector mode in the guest.
const (
	// PathFabricAPI is the reflector's admin API socket (inofctl --server
	// unix://PathFabricAPI).
	PathFabricAPI = "/run/inofd-rr.sock"
	// PathFabricZone is the zone holding the host's and the target's
	// addresses.
	PathFabricZone = "pf"
)

// uplinkAddr is leaf k's (0, 1) end of its uplink to the reflector (side
// 2) or the reflector's end (side 1): 10.100.(k+1).side.
func uplinkAddr(k, side int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 100, byte(k + 1), byte(side)})
}

// leafStart is the guest script that starts leaf k's switch agent (k 1,
// 2), writing its pid to leafPID(k), appending to its log.
func leafStart(k int) string { return fmt.Sprintf("/etc/inof/leaf%d.start", k) }
func leafPID(k int) string   { return fmt.Sprintf("/run/leaf%d.pid", k) }

// targetStart is the guest script that starts the target's agent of NIC
// tk (k 1, 2; BGP mode), writing its pid to targetPID(k).
func targetStart(k int) string { return fmt.Sprintf("/etc/inof/tgt%d.start", k) }
func targetPID(k int) string   { return fmt.Sprintf("/run/tgt%d.pid", k) }

// Addresses of the path fabric: path k (0, 1) is 10.(101+k).0.0/24, the
// host .10, the target .20.
func pathHostAddr(k int) netip.Addr   { return netip.AddrFrom4([4]byte{10, byte(101 + k), 0, 10}) }
func pathTargetAddr(k int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(101 + k), 0, 20}) }

// PathFabricNQN is the path fabric target's subsystem NQN.
const PathFabricNQN = "nqn.2026-12.io.openinof:pathfabric"

// PathFabricLogs are the guest files the path fabric's daemons log to.
var PathFabricLogs = []string{"/tmp/host.log", "/tmp/tgt.log", "/tmp/tgt1.log", "/tmp/tgt2.log", "/tmp/leaf1.log",
	"/tmp/leaf2.log", "/tmp/rr.log"}

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
	s := NewLinkScript()
	nss := []string{"leaf1", "leaf2", "tgt"}
	if o.Reflector != nil {
		nss = append(nss, "rr")
	}
	for _, ns := range nss {
		s.Namespace(ns)
	}
	for k := range 2 {
		leaf := fmt.Sprintf("leaf%d", k+1)
		s.Veth("", fmt.Sprintf("e%d", k+1), leaf, "swp1")
		s.Veth("tgt", fmt.Sprintf("t%d", k+1), leaf, "swp2")
		fmt.Fprintf(s, "$IP -n %[1]s link add dev sw type bridge\n$IP -n %[1]s link set dev swp1 master sw\n"+
			"$IP -n %[1]s link set dev swp2 master sw\n$IP -n %[1]s link set dev sw up\n", leaf)
		fmt.Fprintf(s, "$IP addr add %s/24 dev e%d\n", pathHostAddr(k), k+1)
		fmt.Fprintf(s, "$IP -n tgt addr add %s/24 dev t%d\n", pathTargetAddr(k), k+1)
		if o.Reflector == nil {
			continue
		}
		// The uplink: up0 in the leaf, rK in the reflector.
		s.Veth(leaf, "up0", "rr", fmt.Sprintf("r%d", k+1))
		fmt.Fprintf(s, "$IP -n %s addr add %s/30 dev up0\n", leaf, uplinkAddr(k, 2))
		fmt.Fprintf(s, "$IP -n rr addr add %s/30 dev r%d\n", uplinkAddr(k, 1), k+1)
		// No path from this host address to the other network.
		fmt.Fprintf(s, "$IP rule add from %s to %s/24 prohibit\n", pathHostAddr(k), pathTargetAddr(1-k))
	}
	if _, err := g.Sh(ctx, s.String()); err != nil {
		return nil, fmt.Errorf("vm: path fabric: links: %w", err)
	}
	if err := g.SetupTargetIn(ctx, "tgt", Target{NQN: PathFabricNQN, Addrs: []netip.Addr{pathTargetAddr(0), pathTargetAddr(1)},
		Device: "/dev/ram0"}); err != nil {
		return nil, fmt.Errorf("vm: path fabric: %w", err)
	}
	configs := map[string]map[string]any{"/etc/inof/host.yaml": p.hostConfig()}
	if o.Reflector == nil {
		configs["/etc/inof/tgt.yaml"] = p.targetConfig(0, 1)
	} else {
		// One agent per target NIC: one can go silent alone.
		for k := range 2 {
			configs[fmt.Sprintf("/etc/inof/tgt%d.yaml", k+1)] = p.targetConfig(k)
		}
	}
	for k := range 2 {
		configs[fmt.Sprintf("/etc/inof/leaf%d.yaml", k+1)] = p.switchConfig(k)
	}
	if o.Reflector != nil {
		configs["/etc/inof/rr.yaml"] = p.reflectorConfig()
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
	for k := 1; k <= 2; k++ {
		script := DaemonScript(fmt.Sprintf("leaf%d", k), leafPID(k), fmt.Sprintf("/tmp/leaf%d.log", k),
			GuestInofd, "--role", "switch", "--config", fmt.Sprintf("/etc/inof/leaf%d.yaml", k))
		if err := g.WriteFile(ctx, leafStart(k), []byte(script), 0o700); err != nil {
			return nil, err
		}
		script = DaemonScript("tgt", targetPID(k), fmt.Sprintf("/tmp/tgt%d.log", k),
			GuestInofHost, "--config", fmt.Sprintf("/etc/inof/tgt%d.yaml", k))
		if err := g.WriteFile(ctx, targetStart(k), []byte(script), 0o700); err != nil {
			return nil, err
		}
	}
	start := FabricStart{Switches: []string{"sh " + leafStart(1), "sh " + leafStart(2)},
		SwitchLogs: []string{"/tmp/leaf1.log", "/tmp/leaf2.log"},
		Targets:    []string{"setsid $IP netns exec tgt " + GuestInofHost + " --config /etc/inof/tgt.yaml </dev/null >/tmp/tgt.log 2>&1 &"},
		Host:       "setsid " + GuestInofHost + " --config /etc/inof/host.yaml </dev/null >/tmp/host.log 2>&1 &"}
	if o.Reflector != nil {
		var members []string
		for k := range 2 {
			members = append(members, pathHostAddr(k).String(), pathTargetAddr(k).String())
		}
		start.Reflectors = []string{"setsid $IP netns exec rr " + GuestInofd + " --role reflector --config /etc/inof/rr.yaml </dev/null >/tmp/rr.log 2>&1 &"}
		start.Zone = ZoneCreateScript(PathFabricAPI, PathFabricZone, members)
		start.Targets = []string{"sh " + targetStart(1), "sh " + targetStart(2)}
	}
	if _, err := g.Sh(ctx, start.Script()); err != nil {
		return nil, fmt.Errorf("vm: path fabric: daemons: %w", err)
	}
	return p, nil
}

func (p *PathFabric) switchConfig(k int) map[string]any {
	cfg := map[string]any{
		"log":            map[string]any{"level": "info"},
		"metrics_listen": "127.0.0.1:9466",
		"state_dir":      fmt.Sprintf("/var/lib/inofd-leaf%d", k+1),
		"router_id":      fmt.Sprintf("10.0.0.%d", 11+k),
		"asn":            65000,
		"reflectors":     []any{},
		"api":            map[string]any{"socket": fmt.Sprintf("/run/inofd-leaf%d.sock", k+1)},
		"access_ports":   []any{"swp1", "swp2"},
	}
	if r := p.o.Reflector; r != nil {
		// A reflector takes a client's records only from the address
		// that is its router ID.
		cfg["router_id"] = uplinkAddr(k, 2).String()
		cfg["local_address"] = uplinkAddr(k, 2).String()
		cfg["reflectors"] = []any{map[string]any{"address": uplinkAddr(k, 1).String()}}
		cfg["bfd"] = r.bfd()
	}
	return cfg
}

// bfd is the bfd key of both ends' configurations.
func (r *PathReflector) bfd() map[string]any {
	iv, mult := r.BFDInterval, r.BFDMult
	if iv == 0 {
		iv = 100 * time.Millisecond
	}
	if mult == 0 {
		mult = 3
	}
	return map[string]any{"enabled": true, "desired_min_tx": iv.String(), "required_min_rx": iv.String(), "detect_mult": mult}
}

func (p *PathFabric) reflectorConfig() map[string]any {
	bfd := p.o.Reflector.bfd()
	// Cuts seconds apart are flaps to the reflector's dampening, which
	// would hold leaf1 away for up to a minute after each; the runs
	// measure failover and link-back, not dampening.
	bfd["dampen"] = false
	return map[string]any{
		"log":            map[string]any{"level": "info"},
		"metrics_listen": "127.0.0.1:9465",
		"state_dir":      "/var/lib/inofd-rr",
		"router_id":      uplinkAddr(0, 1).String(),
		"asn":            65000,
		"local_address":  uplinkAddr(0, 1).String(),
		"clients": []any{
			map[string]any{"address": uplinkAddr(0, 2).String()},
			map[string]any{"address": uplinkAddr(1, 2).String(), "local_address": uplinkAddr(1, 1).String()},
		},
		"bfd": bfd,
		"api": map[string]any{"socket": PathFabricAPI},
	}
}

// Zone runs inofctl zone ARGS... --yes against the reflector (BGP mode
// only) and returns its output.
func (p *PathFabric) Zone(ctx context.Context, args ...string) (string, error) {
	if p.o.Reflector == nil {
		return "", fmt.Errorf("vm: path fabric: no reflector (PathFabricOptions.Reflector)")
	}
	argv := append([]string{GuestInofctl, "--server", "unix://" + PathFabricAPI, "zone"}, args...)
	r, err := p.g.Run(ctx, append(argv, "--yes")...)
	if err != nil {
		return "", err
	}
	if r.Code != 0 {
		return "", fmt.Errorf("vm: inofctl zone %s: exit %d: %s", strings.Join(args, " "), r.Code, bytes.TrimSpace(r.Stderr))
	}
	return string(r.Stdout), nil
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

// targetConfig is the configuration of a target agent for the NICs ks
// (one agent for both, or one per NIC: each its own metrics port and
// state file).
func (p *PathFabric) targetConfig(ks ...int) map[string]any {
	var ifs []any
	for _, k := range ks {
		ifs = append(ifs, map[string]any{"name": fmt.Sprintf("t%d", k+1), "role": "target", "protocol": "tcp",
			"address": pathTargetAddr(k).String(), "port": 4420, "nqn": PathFabricNQN})
	}
	name, metrics := "tgt", 9464
	if len(ks) == 1 {
		name, metrics = fmt.Sprintf("tgt%d", ks[0]+1), 9470+ks[0]
	}
	return map[string]any{
		"log":                   map[string]any{"level": "info"},
		"metrics_listen":        fmt.Sprintf("127.0.0.1:%d", metrics),
		"state_file":            "/var/lib/inof-host/" + name + ".json",
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
	// Outage is what each cut does (PortDown when zero).
	Outage Outage
}

// An Outage is what a cut does to the first path (the one through leaf1).
type Outage int

const (
	// PortDown sets leaf1's target port swp2 down: the switch sees the
	// carrier go and tells the host (reason 1, link down).
	PortDown Outage = iota
	// SwitchLost (BGP mode) loses leaf1 whole: its uplink and its bridge
	// (the data plane: the host's and the target's ports keep their
	// carrier) set down, then its switch agent killed with SIGKILL; the
	// reflector's BFD finds it gone and leaf2 tells the host (reason 7,
	// bfd-down). The restore sets them up, starts the agent again and,
	// after the path is live, waits until leaf2 tells the host the target
	// behind leaf1 is active again (CutReport.RejoinMS), so the next cut
	// finds leaf1 in the fabric.
	SwitchLost
	// TargetSilent (BGP mode) kills the target's agent of its leaf1 NIC
	// (SIGKILL): its registrations on leaf1 stop while nvmet keeps
	// serving there. leaf1 ages the target out after the registration TTL
	// (4 s) and tells the host (reason 6, lldp-age-out); the host's agent
	// fails the path over at once and removes its controller after the
	// restrain time (5 s, disconnect_on forced). The cut's window ends
	// when the controller is gone; the restore starts the agent again and
	// the host connects the path anew.
	TargetSilent
	// ZoneRemoved (BGP mode) removes the host's leaf1 address from the
	// zone with inofctl: leaf1 tells the host (reason 4, zone-change); the
	// path works until the agent removes it after the restrain time. The
	// window ends when the controller is gone; the restore adds the
	// address again and the host connects the path anew.
	ZoneRemoved
)

// CutReport is one cut as the guest measured it (guest time).
type CutReport = ctlproto.CutReport

// Cuts runs the guest's cut runner: it waits (in guest time) until both
// paths are live, then cuts the first path N times at leaf1's target port
// and restores it, measuring each cut in guest time. ctx is only a safety
// net in wall time (a deterministic guest runs at a few percent of real
// time: allow minutes per cut). It returns the reports and the runner's
// output.
func (p *PathFabric) Cuts(ctx context.Context, o CutOptions) ([]CutReport, string, error) {
	plan := CutPlan{Paths: []netip.Addr{pathTargetAddr(0), pathTargetAddr(1)}}
	if o.Outage != PortDown && p.o.Reflector == nil {
		return nil, "", fmt.Errorf("vm: path fabric: outage %d needs the reflector (PathFabricOptions.Reflector)", o.Outage)
	}
	inofctl := fmt.Sprintf("%s --server unix://%s zone %%s %s %s --yes", GuestInofctl, PathFabricAPI, PathFabricZone, pathHostAddr(0))
	switch o.Outage {
	case PortDown:
		plan.Links = []string{"leaf1/swp2"}
	case SwitchLost:
		plan.Links, plan.Kill, plan.Restart = []string{"leaf1/up0", "leaf1/sw"}, leafPID(1), "sh "+leafStart(1)
		plan.Rejoin = "/tmp/leaf2.log:target=" + pathTargetAddr(0).String() + " state=active"
	case TargetSilent:
		plan.Kill, plan.Restart, plan.UntilGone = targetPID(1), "sh "+targetStart(1), true
	case ZoneRemoved:
		plan.CutSh, plan.Restart, plan.UntilGone = fmt.Sprintf(inofctl, "remove"), fmt.Sprintf(inofctl, "add"), true
	default:
		return nil, "", fmt.Errorf("vm: path fabric: no outage %d", o.Outage)
	}
	if p.o.Failover != "none" {
		plan.Notify = []string{"/tmp/host.log", "/tmp/leaf1.log", "/tmp/leaf2.log"}
		if p.o.Reflector != nil {
			plan.Notify = append(plan.Notify, "/tmp/rr.log")
		}
	}
	return p.g.Cuts(ctx, plan, o)
}

// Grep counts the lines of a daemon's log file (PathFabricLogs) that
// contain s.
func (p *PathFabric) Grep(ctx context.Context, file, s string) (int, error) {
	return p.g.Grep(ctx, file, s)
}

// Diagnose is the end of every daemon's log and of the console, for a
// failure's message.
func (p *PathFabric) Diagnose(ctx context.Context) string {
	return p.g.Diagnose(ctx, PathFabricLogs...)
}

// Tail is the end of a daemon's log file.
func (p *PathFabric) Tail(ctx context.Context, file string, lines int) string {
	return p.g.Tail(ctx, file, lines)
}
