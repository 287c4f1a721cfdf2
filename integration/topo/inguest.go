package topo

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openinof/inof/integration/vm"
)

// GuestOptions realise a whole Spec inside one qemu guest (Spec.InGuest)
// instead of as namespaces on the machine: one clock for everything a cut
// sets off, which in instruction-counted time (Icount) the machine's load
// does not reach, so a stall bound in guest time is repeatable
// (docs/realhost.md, "One guest in deterministic time").
//
// The guest boots from a Fabric image (vm.ImageOptions.Fabric: inofd,
// inofctl, iproute2 and the cut runner) and every node becomes a network
// namespace in it, named after the node:
//
//   - reflectors and switches run inofd from the image; their control
//     network is the bridge br0 of a namespace "fabric-ctl" with the same
//     addresses and configurations as on the machine (a switch's uplink is
//     its fab0), their state and API sockets in the guest's memory;
//   - each switch bridges its access ports (bridge sw), so the devices
//     cabled to one switch share its L2 segment, and NIC k of every device
//     gets 10.(100+k).(i+1).2/16 unless the spec gives an address (one
//     subnet per NIC index);
//   - a target device (every NIC role target, one NQN) serves kernel
//     nvmet in its namespace on each NIC (the first target on a brd RAM
//     disk that keeps writes, a second on null_blk) and runs inof-host;
//   - the host under test (the one device whose NICs are all role host) is
//     the guest's init namespace, where nvme-tcp makes a reconnect's
//     sockets, with inof-host, the real nvme-cli and native multipath; a
//     connect from one NIC's address to another NIC's subnet is
//     prohibited (separate storage networks).
//
// With reflectors, Start creates the zone Zone holding every device NIC's
// address on the first reflector before the switches start. The daemons
// start in the order the fabric needs (reflectors, switches, and once the
// switches are ready the targets and then the host) and log to
// /tmp/NODE.log in the guest (Node.GuestLog). No probe devices, VM devices,
// switches on reflectors, or more than two targets. The operations are
// Fabric.GuestCuts (cuts measured in guest time by the guest's cut
// runner), Node.GuestKill and GuestStart, Node.GuestLog, and through the
// guest's control channel Node.Inofctl, Link.SetLink, Node.SetUplink and
// the metrics (Metric, WaitMetric, Notifications). Start, the iptables
// faults and Impair need a node's namespace on the machine and say so;
// Kill, Stop and Reload find nothing running there, and Log and WaitLog
// read the machine's files, not the guest's.
type GuestOptions struct {
	// Kernel is the guest's kernel package (as VM.Kernel).
	Kernel string
	// Icount runs the guest in instruction-counted time; nil runs it in
	// wall-clock time.
	Icount *vm.Icount
	// MemoryMB is the guest's memory; 0 means vm.PathFabricMemoryMB.
	MemoryMB int
	// KeepAliveTmo, ReconnectDelay and CtrlLossTmo are the host under
	// test's nvme connect -k, -c and -l in seconds; 0 means 2, 1 and 60
	// (a failed-over controller is kept for the path's return).
	KeepAliveTmo, ReconnectDelay, CtrlLossTmo int
	// Zone names the zone Start creates with reflectors; "" means
	// "fabric".
	Zone string
}

// guestCtlNS is the guest namespace of the control network's bridge (a
// name longer than any node's).
const guestCtlNS = "fabric-ctl"

// guestSetup bounds the guest's boot and the fabric's setup in wall time.
const guestSetup = 10 * time.Minute

// inGuest is a fabric realised in one guest.
type inGuest struct {
	o    GuestOptions
	g    *vm.Guest
	host *Node // the host under test, in the init namespace
}

// checkInGuest reports what a spec realised in one guest cannot hold.
func (s *Spec) checkInGuest() error {
	if len(s.OnReflector) > 0 {
		return fmt.Errorf("topo: InGuest: no switches on reflectors")
	}
	hosts, targets := 0, 0
	for _, d := range s.Devices {
		if d.Probe || d.VM != nil {
			return fmt.Errorf("topo: InGuest: device %s: no probe or VM devices in one guest", d.Name)
		}
		switch guestRole(d) {
		case "host":
			hosts++
		case "target":
			targets++
			// A target in the guest serves nvmet as a VM device does.
			d.VM = &VM{}
			if err := d.checkVM(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("topo: InGuest: device %s: its NICs must be all hosts or all targets", d.Name)
		}
	}
	if hosts != 1 || targets > len(guestDisks) {
		return fmt.Errorf("topo: InGuest: one host under test and at most %d targets (%d hosts, %d targets)",
			len(guestDisks), hosts, targets)
	}
	return nil
}

// guestDisks back the targets of a fabric in one guest, in Spec order.
var guestDisks = []string{"/dev/ram0", "/dev/nullb0"}

// guestRole is "host" or "target" when all of d's NICs have that role.
func guestRole(d Device) string {
	role := d.NICs[0].Role
	for _, nic := range d.NICs {
		if nic.Role != role {
			return ""
		}
	}
	return role
}

// startInGuest realises f's spec in one guest (Start with Spec.InGuest).
func (f *Fabric) startInGuest() {
	tb := f.tb
	o := *f.spec.InGuest
	if o.MemoryMB == 0 {
		o.MemoryMB = vm.PathFabricMemoryMB
	}
	if o.Zone == "" {
		o.Zone = "fabric"
	}
	f.guest = &inGuest{o: o}
	for i, name := range f.spec.Reflectors {
		f.guestNode(name, KindReflector, name).Addr = reflectorAddr(i)
	}
	for j, name := range f.spec.Switches {
		f.guestNode(name, KindSwitch, name).Addr = switchAddr(j)
	}
	for i, d := range f.spec.Devices {
		ns := d.Name
		if guestRole(d) == "host" {
			ns = ""
		}
		n := f.guestNode(d.Name, KindHost, ns)
		if ns == "" {
			f.guest.host = n
		}
		for k, nic := range d.NICs {
			l := f.newLink(n, i, k, nic, 16)
			n.Links = append(n.Links, l)
			l.Switch.Links = append(l.Switch.Links, l)
		}
	}
	img, err := vmImage(o.Kernel, true)
	if err != nil {
		tb.Fatalf("topo: guest image: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guestSetup)
	defer cancel()
	g, err := vm.Boot(ctx, vm.Config{Name: "fabric", Dir: f.Dir, Image: img, MemoryMB: o.MemoryMB, Icount: o.Icount})
	if err != nil {
		tb.Fatal(err)
	}
	f.guest.g = g
	tb.Cleanup(func() {
		if tb.Failed() {
			var logs []string
			for _, n := range f.order {
				logs = append(logs, n.GuestLog())
			}
			dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
			tb.Logf("topo: the guest's logs:\n%s", g.Diagnose(dctx, logs...))
			dcancel()
		}
		g.Close()
	})
	if _, err := g.Sh(ctx, f.guestLinks()); err != nil {
		tb.Fatalf("topo: links in the guest: %v", err)
	}
	targets := 0
	for _, n := range f.Nodes(KindHost) {
		if t, ok := n.vmTarget(); ok {
			t.Device = guestDisks[targets]
			targets++
			if err := g.SetupTargetIn(ctx, n.gns, t); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for _, n := range f.order {
		if err := n.writeGuestConfig(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := g.Sh(ctx, f.guestStartScript()); err != nil {
		tb.Fatalf("topo: daemons in the guest: %v", err)
	}
	// As on the machine, Start returns once every daemon answers
	// /healthz.
	for _, n := range f.order {
		if slices.Contains(f.spec.Passive, n.Name) {
			continue
		}
		if err := Poll(vmTimeout, func() (bool, error) {
			code, _, err := n.HTTPGet("/healthz")
			return err == nil && code == http.StatusOK, err
		}); err != nil {
			tb.Fatalf("topo: %s in the guest not healthy: %v", n.Name, err)
		}
	}
}

// guestNode adds a node that lives in guest namespace ns ("" the init
// namespace); its metrics are read through the guest.
func (f *Fabric) guestNode(name string, kind Kind, ns string) *Node {
	n := (&Node{Name: name, Kind: kind, f: f, dir: f.Dir + "/" + name}).bindParts()
	n.gns = ns
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		f.tb.Fatal(err)
	}
	n.logPath = n.dir + "/" + name + ".log" // never written: the log is in the guest
	n.cfgPath = n.dir + "/" + name + ".yaml"
	addr := inofdMetrics
	if kind == KindHost {
		addr = hostMetrics
	}
	n.http = &httpClient{addr: addr, c: &http.Client{Transport: guestHTTP{n}, Timeout: 30 * time.Second}}
	f.nodes[name] = n
	f.order = append(f.order, n)
	return n
}

// Guest is the guest a fabric realised with Spec.InGuest runs in (nil
// otherwise).
func (f *Fabric) Guest() *vm.Guest {
	if f.guest == nil {
		return nil
	}
	return f.guest.g
}

// guestLinks is the guest script that makes the namespaces, the control
// network, each switch's bridge and the device cables.
func (f *Fabric) guestLinks() string {
	s := vm.NewLinkScript()
	for _, ns := range append([]string{guestCtlNS}, f.guestNamespaces()...) {
		s.Namespace(ns)
	}
	fmt.Fprintf(s, "$IP -n %[1]s link add dev br0 type bridge\n$IP -n %[1]s link set dev br0 up\n", guestCtlNS)
	for _, n := range f.order {
		if n.Kind == KindHost {
			continue
		}
		s.Veth(guestCtlNS, n.Name, n.gns, "fab0")
		fmt.Fprintf(s, "$IP -n %s link set dev %s master br0\n", guestCtlNS, n.Name)
		fmt.Fprintf(s, "$IP -n %s addr add %s/24 dev fab0\n", n.gns, n.Addr)
		if n.Kind != KindSwitch {
			continue
		}
		fmt.Fprintf(s, "$IP -n %[1]s link add dev sw type bridge\n$IP -n %[1]s link set dev sw up\n", n.gns)
		if len(n.Links) == 0 {
			// The agent wants an access port.
			fmt.Fprintf(s, "$IP -n %[1]s link add dev p0 type dummy\n$IP -n %[1]s link set dev p0 up\n", n.gns)
			n.dummyPort = true
		}
	}
	for _, n := range f.Nodes(KindHost) {
		for _, l := range n.Links {
			s.Veth(n.gns, l.IfName, l.Switch.gns, l.Port)
			fmt.Fprintf(s, "$IP -n %s link set dev %s master sw\n", l.Switch.gns, l.Port)
			fmt.Fprintf(s, "%s addr add %s dev %s\n", vm.IPIn(n.gns), l.Prefix, l.IfName)
		}
	}
	prohibitCrossPaths(&s.Builder, "$IP", f.guest.host.Links)
	return s.String()
}

// guestNamespaces are the nodes' namespaces in the guest (not the host
// under test's: the init namespace).
func (f *Fabric) guestNamespaces() []string {
	var nss []string
	for _, n := range f.order {
		if n.gns != "" {
			nss = append(nss, n.gns)
		}
	}
	return nss
}

// inGuestNode is the part of a Node of a fabric realised in one guest
// (Spec.InGuest): where its daemon's files are in the guest, and what
// starts, kills and reaches it there.
type inGuestNode struct {
	n *Node
	// gns is the node's namespace in the guest of a fabric realised in
	// one (Spec.InGuest); "" there is the guest's init namespace.
	gns string
}

// guestStartPath and guestPIDPath are the script that starts a node's
// daemon in the guest and the file its pid is in.
func (gn *inGuestNode) guestStartPath() string { return "/etc/inof/" + gn.n.Name + ".start" }
func (gn *inGuestNode) guestPIDPath() string   { return "/run/" + gn.n.Name + ".pid" }

// GuestLog is the node's log file inside the guest (Spec.InGuest).
func (gn *inGuestNode) GuestLog() string { return "/tmp/" + gn.n.Name + ".log" }

// guestAPISocket is a reflector's or switch's API socket in the guest.
func (gn *inGuestNode) guestAPISocket() string { return "/run/inofd-" + gn.n.Name + ".sock" }

// writeGuestConfig writes the node's configuration (also kept in its
// directory on the machine) and the script that starts its daemon into
// the guest.
func (gn *inGuestNode) writeGuestConfig(ctx context.Context) error {
	n := gn.n
	cfgPath := "/etc/inof/" + n.Name + ".yaml"
	var argv []string
	switch n.Kind {
	case KindReflector, KindSwitch:
		if err := n.writeConfigEdited(func(cfg map[string]any) {
			cfg["state_dir"] = "/var/lib/inofd-" + n.Name
			cfg["api"] = map[string]any{"socket": gn.guestAPISocket()}
		}); err != nil {
			return err
		}
		role := "switch"
		if n.Kind == KindReflector {
			role = "reflector"
		}
		argv = []string{vm.GuestInofd, "--role", role, "--config", cfgPath}
	default:
		o := n.f.guest.o
		if _, err := n.guestAgentConfig("/var/lib/inof-host/"+n.Name+".json", o.KeepAliveTmo, o.ReconnectDelay,
			o.CtrlLossTmo, [3]int{2, 1, 60}); err != nil {
			return err
		}
		argv = []string{vm.GuestInofHost, "--config", cfgPath}
	}
	b, err := os.ReadFile(n.cfgPath)
	if err != nil {
		return err
	}
	g := n.f.guest.g
	if err := g.WriteFile(ctx, cfgPath, b, 0o600); err != nil {
		return err
	}
	script := vm.DaemonScript(gn.gns, gn.guestPIDPath(), gn.GuestLog(), argv...)
	return g.WriteFile(ctx, gn.guestStartPath(), []byte(script), 0o700)
}

// guestStartScript starts the daemons not passive in the order a fabric
// in one guest starts in (vm.FabricStart), the zone made on the first
// reflector.
func (f *Fabric) guestStartScript() string {
	var st vm.FabricStart
	start := func(to *[]string, n *Node) {
		if !slices.Contains(f.spec.Passive, n.Name) {
			*to = append(*to, "sh "+n.guestStartPath())
		}
	}
	refl := f.Nodes(KindReflector)
	for _, n := range refl {
		start(&st.Reflectors, n)
	}
	if len(refl) > 0 {
		var members []string
		for _, d := range f.Nodes(KindHost) {
			for _, l := range d.Links {
				members = append(members, l.Addr().String())
			}
		}
		st.Zone = vm.ZoneCreateScript(refl[0].guestAPISocket(), f.guest.o.Zone, members)
	}
	for _, n := range f.Nodes(KindSwitch) {
		start(&st.Switches, n)
		if !slices.Contains(f.spec.Passive, n.Name) {
			st.SwitchLogs = append(st.SwitchLogs, n.GuestLog())
		}
	}
	for _, n := range f.Nodes(KindHost) {
		if n != f.guest.host {
			start(&st.Targets, n)
		}
	}
	var host []string
	start(&host, f.guest.host)
	if len(host) > 0 {
		st.Host = host[0]
	}
	return st.Script()
}

// GuestStart starts the node's daemon in the guest again (Spec.InGuest),
// e.g. after GuestKill, without waiting for it.
func (gn *inGuestNode) GuestStart(ctx context.Context) error {
	n := gn.n
	if n.f.guest == nil {
		return fmt.Errorf("topo: %s is not in a guest", n.Name)
	}
	_, err := n.f.guest.g.Sh(ctx, "sh "+gn.guestStartPath())
	return err
}

// GuestKill kills the node's daemon in the guest with SIGKILL
// (Spec.InGuest).
func (gn *inGuestNode) GuestKill(ctx context.Context) error {
	n := gn.n
	if n.f.guest == nil {
		return fmt.Errorf("topo: %s is not in a guest", n.Name)
	}
	_, err := n.f.guest.g.Sh(ctx, "kill -9 $(cat "+gn.guestPIDPath()+")")
	return err
}

// GuestCut is a series of cuts in a fabric realised in one guest
// (Fabric.GuestCuts).
type GuestCut struct {
	// Link is a target's NIC: each cut takes the host's path to its
	// address away, the host's other paths being to the target's other
	// NICs. By default a cut sets the switch's port of the link down (the
	// switch sees carrier loss, the target's agent and the host do not:
	// reason 1).
	Link *Link
	// SwitchLost loses the link's switch whole instead: its uplink (fab0)
	// and its bridge set down (the devices keep their carrier), then its
	// agent SIGKILLed (reason 7 from the reflectors' BFD); the restore
	// sets them up, starts the agent again and waits until another switch
	// of the host tells it the target address is active again.
	SwitchLost bool
	// Options are the runner's: N, IOPolicy, Write and the waits
	// (Outage is vm.PathFabric's and not read).
	Options vm.CutOptions
}

// GuestCuts runs the guest's cut runner (vm.Guest.Cuts) on the host
// under test: it waits in guest time until a live controller runs to
// every NIC address of c.Link's target, then makes the cuts, each measured
// in guest time (the stall, when the host was told from every daemon's
// log, link back). ctx is a safety net in wall time.
func (f *Fabric) GuestCuts(ctx context.Context, c GuestCut) ([]vm.CutReport, string, error) {
	if f.guest == nil || c.Link == nil || c.Link.Device == f.guest.host {
		return nil, "", fmt.Errorf("topo: GuestCuts needs a fabric in a guest and a target's link")
	}
	plan := vm.CutPlan{Paths: []netip.Addr{c.Link.Addr()}}
	for _, l := range c.Link.Device.Links {
		if l != c.Link {
			plan.Paths = append(plan.Paths, l.Addr())
		}
	}
	sw := c.Link.Switch
	plan.Links = []string{sw.gns + "/" + c.Link.Port}
	if c.SwitchLost {
		plan.Links = []string{sw.gns + "/fab0", sw.gns + "/sw"}
		plan.Kill, plan.Restart = sw.guestPIDPath(), "sh "+sw.guestStartPath()
		for _, l := range f.guest.host.Links {
			if l.Switch != sw {
				plan.Rejoin = l.Switch.GuestLog() + ":target=" + c.Link.Addr().String() + " state=active"
				break
			}
		}
	}
	for _, n := range f.order {
		if n.Kind != KindHost || n == f.guest.host {
			plan.Notify = append(plan.Notify, n.GuestLog())
		}
	}
	return f.guest.g.Cuts(ctx, plan, c.Options)
}

// guestNSGet fetches url inside the node's guest namespace (busybox
// wget): 200 and the body, or an error for any other outcome.
func (gn *inGuestNode) guestNSGet(ctx context.Context, url string) (int, []byte, error) {
	n := gn.n
	r, err := n.f.guest.g.Run(ctx, vm.GuestIP, "netns", "exec", gn.gns, "wget", "-q", "-O", "-", url)
	if err != nil {
		return 0, nil, err
	}
	if r.Code != 0 {
		return 0, nil, fmt.Errorf("topo: %s: GET %s: wget exit %d: %s", n.Name, url, r.Code, strings.TrimSpace(string(r.Stderr)))
	}
	return http.StatusOK, r.Stdout, nil
}

// guestInofctl runs inofctl in the guest against the node's API socket.
func (gn *inGuestNode) guestInofctl(args ...string) (string, error) {
	n := gn.n
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{vm.GuestInofctl, "--server", "unix://" + gn.guestAPISocket()}, args...)
	r, err := n.f.guest.g.Run(ctx, argv...)
	out := string(r.Stdout) + string(r.Stderr)
	if err == nil && r.Code != 0 {
		err = fmt.Errorf("exit %d", r.Code)
	}
	if err != nil {
		return out, fmt.Errorf("topo: inofctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// setGuestLink sets the switch's port of a link in the guest down or up.
func (l *Link) setGuestLink(up bool) (time.Time, error) {
	at := time.Now()
	return at, l.Device.f.guest.setLink(l.Switch.gns, l.Port, up)
}

// setLink sets interface ifName of guest namespace ns down or up.
func (ig *inGuest) setLink(ns, ifName string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := ig.g.Sh(ctx, fmt.Sprintf("%s -n %s link set dev %s %s", vm.GuestIP, ns, ifName, state))
	return err
}

// errInGuest is what the operations that need the node's namespace on the
// machine say for a node of a fabric in one guest.
func (gn *inGuestNode) errInGuest(op string) error {
	n := gn.n
	return fmt.Errorf("topo: %s: %s: the node runs in the fabric's guest (Spec.InGuest)", n.Name, op)
}
