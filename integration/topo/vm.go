package topo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/integration/vm"
	"github.com/openinof/inof/internal/netns"
)

// VM makes a device a qemu guest (integration/vm) with a real kernel,
// nvme-cli and inof-host, instead of a namespace with a fake nvme-cli.
//
// Each NIC is a tap created in its switch's namespace under the access
// port's name, so the switch agent owns it directly (no bridge between the
// agent and the guest). For NVMe/TCP between guests, every switch also puts
// its VM taps of NIC index k into a bridge dpK joined to segment k, one L2
// segment per NIC index across all switches (a veth to bridge segK in a
// shared "data" namespace): NIC k of every VM device is on segment k, and
// its default address is 10.(100+k).(i+1).2/16 for device i, so NIC k of
// all devices share one subnet. A guest with several NICs gets policy
// routes that make a connect from one segment's address to another
// segment fail at once (separate fabrics), and each switch drops protocol
// frames at its dpK bridges' input (ebtables, when installed): the agent
// reads them on the tap first. A link cut (Link.SetLink) takes the tap
// down at the switch and, through QMP, the guest's carrier away.
//
// A guest whose NICs include a target role serves kernel nvmet on each
// target NIC's address and port (null_blk namespace) with the NICs' NQN.
// inof-host in the guest uses the real nvme-cli with the keep-alive,
// reconnect-delay and ctrl-loss timeouts below; its output is the node's
// log, its /metrics is reached through the guest's control channel, and
// the console is NAME.console in the node's directory.
type VM struct {
	// MemoryMB is the guest's memory; 0 means 256.
	MemoryMB int
	// KeepAliveTmo, ReconnectDelay and CtrlLossTmo are inof-host's nvme
	// connect -k, -c and -l in seconds; 0 means 2, 1 and 5.
	KeepAliveTmo, ReconnectDelay, CtrlLossTmo int
	// Kernel is the guest's kernel package (vm.ImageOptions.KernelPackage,
	// e.g. vm.BackportsKernel); empty means $INOF_VM_KERNEL, else the
	// newest 6.1.
	Kernel string
}

// vmFabric is the fabric's VM plumbing: the data namespace and what has
// been set up in it and in the switches' namespaces.
type vmFabric struct {
	data *netns.NS
	// bridges holds "data/segK", "SWITCH/dpK" and "SWITCH/ebtables" once
	// done.
	bridges map[string]bool
}

// vmGuest is the part of a Node that is a VM device: its guest, and the
// inof-host in it.
type vmGuest struct {
	n  *Node
	vm *vmNode // a VM device's guest; nil for other nodes
}

// vmNode is a VM device's guest and agent.
type vmNode struct {
	spec  Device
	index int
	taps  []*vm.Tap
	// booted is closed when the boot started by bootVMs has ended;
	// guest is set (or not) by then.
	booted chan struct{}
	guest  *vm.Guest

	mu    sync.Mutex
	agent *vm.Process
}

// agentConfig is where the guest's inof-host reads its configuration.
const agentConfig = "/etc/inof-host.yaml"

// vmTimeout bounds a guest's boot and setup, and each agent start.
const vmTimeout = 2 * time.Minute

// vmImage is the guest image for a kernel package (with what a whole
// fabric in one guest needs, if fabric), built (or found in the
// cache) once per test binary.
func vmImage(kernel string, fabric bool) (vm.Image, error) {
	vmImages.mu.Lock()
	defer vmImages.mu.Unlock()
	key := imageKey{kernel, fabric}
	if img, ok := vmImages.built[key]; ok {
		return img, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := vm.BuildImage(ctx, vm.ImageOptions{KernelPackage: kernel, Fabric: fabric})
	if err == nil {
		vmImages.built[key] = img
	}
	return img, err
}

// imageKey is what tells images apart: the kernel package and
// vm.ImageOptions.Fabric.
type imageKey struct {
	kernel string
	fabric bool
}

// vmImages holds the images built so far.
var vmImages = struct {
	mu    sync.Mutex
	built map[imageKey]vm.Image
}{built: map[imageKey]vm.Image{}}

// checkVM reports problems of a VM device's specification.
func (d Device) checkVM() error {
	if d.VM == nil {
		return nil
	}
	if d.Probe {
		return fmt.Errorf("topo: device %s: a VM cannot be a probe", d.Name)
	}
	nqn := ""
	for k, nic := range d.NICs {
		if nic.Role != "target" && nic.Role != "both" {
			continue
		}
		if nic.NQN == "" || (nqn != "" && nic.NQN != nqn) {
			return fmt.Errorf("topo: VM device %s NIC %d: target NICs need one and the same NQN", d.Name, k)
		}
		nqn = nic.NQN
	}
	return nil
}

// vmDevice creates a VM device: its (empty) namespace, and one tap per NIC
// in the switch's namespace as the switch's next access port. The guest
// boots in Start.
func (f *Fabric) vmDevice(i int, d Device) {
	n := f.newNode(d.Name, KindVM)
	n.vm = &vmNode{spec: d, index: i}
	// Node.Start runs argv[0] from the built binaries; for a VM that
	// fails with this name in the error (StartAgent is the way).
	n.argv = []string{"inof-host-in-guest (a VM device: use Node.StartAgent)"}
	n.http = &httpClient{addr: hostMetrics, c: &http.Client{Transport: guestHTTP{n}, Timeout: 15 * time.Second}}
	f.tb.Cleanup(n.stopVM)
	for k, nic := range d.NICs {
		l := f.newLink(n, i, k, nic, 16)
		sw := l.Switch
		tap, err := vm.CreateTap(sw.NS, l.Port)
		if err != nil {
			f.tb.Fatal(err)
		}
		n.vm.taps = append(n.vm.taps, tap)
		f.segment(sw, k)
		sw.NS.MustIP("link", "set", l.Port, "master", fmt.Sprintf("dp%d", k))
		n.Links = append(n.Links, l)
		sw.Links = append(sw.Links, l)
	}
}

// segment makes sure switch sw has bridge dpK joined to data segment k.
func (f *Fabric) segment(sw *Node, k int) {
	if f.vm == nil {
		f.vm = &vmFabric{data: netns.New(f.tb, "data"), bridges: map[string]bool{}}
	}
	seg := fmt.Sprintf("seg%d", k)
	if !f.vm.bridges["data/"+seg] {
		f.vm.data.MustIP("link", "add", seg, "type", "bridge")
		f.vm.data.MustIP("link", "set", seg, "up")
		f.vm.bridges["data/"+seg] = true
	}
	key := fmt.Sprintf("%s/dp%d", sw.Name, k)
	if f.vm.bridges[key] {
		return
	}
	if !f.vm.bridges[sw.Name+"/ebtables"] {
		f.trapProtocolFrames(sw)
		f.vm.bridges[sw.Name+"/ebtables"] = true
	}
	dp, up, peer := fmt.Sprintf("dp%d", k), fmt.Sprintf("dpu%d", k), fmt.Sprintf("%s-%d", sw.Name, k)
	sw.NS.MustIP("link", "add", dp, "type", "bridge")
	sw.NS.MustIP("link", "set", dp, "up")
	netns.Veth(f.tb, sw.NS, up, f.vm.data, peer)
	sw.NS.MustIP("link", "set", up, "master", dp)
	f.vm.data.MustIP("link", "set", peer, "master", seg)
	f.vm.bridges[key] = true
}

// trapProtocolFrames keeps the protocol frames a guest unicasts to its
// switch port (ACKs, zone queries) off the switch's dpK bridges: the
// switch agent reads them on the tap before the bridge sees them, and the
// bridge would hand them up on dpK as well, where the agent counts them as
// frames on a port that is not an access port. Without ebtables the
// frames are still handled; the switch's not-access-port drop count grows.
func (f *Fabric) trapProtocolFrames(sw *Node) {
	eb, err := exec.LookPath("ebtables")
	if err != nil {
		f.tb.Logf("topo: no ebtables: %s counts its guests' ACKs as not-access-port drops", sw.Name)
		return
	}
	for _, et := range []string{"0x88a7", "0x88cc"} {
		if out, err := sw.NS.Command(eb, "-A", "INPUT", "-p", et, "-j", "DROP").CombinedOutput(); err != nil {
			f.tb.Logf("topo: %s: ebtables -A INPUT -p %s -j DROP: %v: %s", sw.Name, et, err, out)
		}
	}
}

// bootVMs boots every VM device's guest in the background and returns a
// function that waits for them, sets each up (addresses, host NQN,
// target) and starts the agents of those not passive. Start calls it after
// the switches are up, so the agents' first registration is heard.
func (f *Fabric) bootVMs() func() {
	var vms []*Node
	for _, n := range f.order {
		if n.Kind == KindVM {
			vms = append(vms, n)
		}
	}
	if len(vms) == 0 {
		return func() {}
	}
	errs := make([]error, len(vms))
	var wg sync.WaitGroup
	for i, n := range vms {
		wg.Add(1)
		n.vm.booted = make(chan struct{})
		go func() {
			defer wg.Done()
			defer close(n.vm.booted)
			errs[i] = n.bootGuest()
		}()
	}
	return func() {
		f.tb.Helper()
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			f.tb.Fatal(err)
		}
		for _, n := range vms {
			if !slices.Contains(f.spec.Passive, n.Name) {
				if err := n.StartAgent(); err != nil {
					f.tb.Fatal(err)
				}
			}
		}
	}
}

// bootGuest boots the node's guest and configures it.
func (vg *vmGuest) bootGuest() error {
	n := vg.n
	img, err := vmImage(vg.vm.spec.VM.Kernel, false)
	if err != nil {
		return fmt.Errorf("topo: %s: guest image: %w", n.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	v := vg.vm
	cfg := vm.Config{Name: n.Name, Dir: n.dir, Image: img, MemoryMB: v.spec.VM.MemoryMB}
	for k, tap := range v.taps {
		// Unique per fabric: the device index and the NIC index.
		cfg.NICs = append(cfg.NICs, vm.NIC{Tap: tap, MAC: vm.MAC(0x10, byte(v.index+1), byte(k))})
	}
	if v.guest, err = vm.Boot(ctx, cfg); err != nil {
		return err
	}
	var s strings.Builder
	s.WriteString("set -e\n")
	for k, l := range n.Links {
		fmt.Fprintf(&s, "[ \"$(cat /sys/class/net/%s/address)\" = %s ] || { echo %s is not NIC %d; exit 1; }\n",
			l.IfName, cfg.NICs[k].MAC, l.IfName, k)
		fmt.Fprintf(&s, "ip addr add %s dev %s\nip link set %s up\n", l.Prefix, l.IfName, l.IfName)
	}
	prohibitCrossPaths(&s, "ip", n.Links)
	if _, err := v.guest.Sh(ctx, s.String()); err != nil {
		return fmt.Errorf("topo: %s: NICs: %w", n.Name, err)
	}
	if err := v.guest.WriteFile(ctx, "/etc/nvme/hostnqn", []byte(n.HostNQN()+"\n"), 0o644); err != nil {
		return err
	}
	if t, ok := vg.vmTarget(); ok {
		if err := v.guest.SetupTarget(ctx, t); err != nil {
			return fmt.Errorf("topo: %s: %w", n.Name, err)
		}
	}
	o := v.spec.VM
	b, err := vg.guestAgentConfig("/var/lib/inof-host/state.json", o.KeepAliveTmo, o.ReconnectDelay, o.CtrlLossTmo, [3]int{2, 1, 5})
	if err != nil {
		return err
	}
	return v.guest.WriteFile(ctx, agentConfig, b, 0o600)
}

// prohibitCrossPaths writes the guest sh lines (ip is the command that
// runs ip in the device's namespace) that make NIC segments separate
// networks: a connect from one NIC's address to another segment fails at
// once instead of leaving by the other NIC. (Busybox's ip rule has no
// prohibit action: a rule per NIC address looks up a table of prohibit
// routes.)
func prohibitCrossPaths(s *strings.Builder, ip string, links []*Link) {
	for k, l := range links {
		table := 100 + k
		rule := false
		for _, o := range links {
			if o != l && o.Prefix.Masked() != l.Prefix.Masked() {
				fmt.Fprintf(s, "%s route add prohibit %s table %d\n", ip, o.Prefix.Masked(), table)
				rule = true
			}
		}
		if rule {
			fmt.Fprintf(s, "%s rule add from %s table %d\n", ip, l.Addr(), table)
		}
	}
}

// vmTarget is the nvmet target the guest serves, if it has target NICs.
func (vg *vmGuest) vmTarget() (vm.Target, bool) {
	n := vg.n
	var t vm.Target
	for _, l := range n.Links {
		if l.Spec.Role == "target" || l.Spec.Role == "both" {
			t.NQN, t.Port = l.Spec.NQN, l.Spec.Port
			t.Addrs = append(t.Addrs, l.Addr())
		}
	}
	return t, len(t.Addrs) > 0
}

// guestAgentConfig writes inof-host's configuration in a guest, with its
// nvme connect -k, -c and -l (0 means d's) and the Spec's hook applied,
// to the node's configuration file and returns it.
func (vg *vmGuest) guestAgentConfig(state string, ka, rd, cl int, d [3]int) ([]byte, error) {
	n := vg.n
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	cfg := map[string]any{
		"log":            map[string]any{"level": "debug"},
		"metrics_listen": hostMetrics,
		"state_file":     state,
		"host_nqn":       n.HostNQN(),
		"nvme": map[string]any{"path": vm.GuestNVMe, "keep_alive_tmo": def(ka, d[0]),
			"reconnect_delay": def(rd, d[1]), "ctrl_loss_tmo": def(cl, d[2])},
		"interfaces": n.hostInterfaces(),
	}
	if hook := n.f.spec.HostConfig; hook != nil {
		hook(n.Name, cfg)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("topo: %s configuration: %w", n.Name, err)
	}
	return b, os.WriteFile(n.cfgPath, b, 0o600)
}

// Guest is a VM device's guest, or the guest of a fabric realised in one
// (Spec.InGuest) for each of its nodes; nil for other nodes, or before
// Start booted it.
func (vg *vmGuest) Guest() *vm.Guest {
	n := vg.n
	if vg.vm != nil {
		return vg.vm.guest
	}
	return n.f.Guest()
}

// StartAgent starts inof-host inside a VM device's guest, with its output
// appended to the node's log, and waits until it answers /healthz. (Node
// Start is for namespace nodes.)
func (vg *vmGuest) StartAgent() error {
	n := vg.n
	if vg.vm == nil || vg.vm.guest == nil {
		return fmt.Errorf("topo: %s is not a booted VM", n.Name)
	}
	vg.vm.mu.Lock()
	if p := vg.vm.agent; p != nil {
		select {
		case <-p.Done():
		default:
			vg.vm.mu.Unlock()
			return fmt.Errorf("topo: %s: inof-host already runs", n.Name)
		}
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		vg.vm.mu.Unlock()
		return err
	}
	fmt.Fprintf(logf, "=== topo: %s start %s (guest %s)\n", time.Now().Format(time.RFC3339Nano), vm.GuestInofHost, n.Name)
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	p, err := vg.vm.guest.Start(ctx, []string{vm.GuestInofHost, "--config", agentConfig}, logf)
	if err != nil {
		logf.Close()
		vg.vm.mu.Unlock()
		return fmt.Errorf("topo: start %s: %w", n.Name, err)
	}
	vg.vm.agent = p
	vg.vm.mu.Unlock()
	go func() {
		code, err := p.Wait(context.Background())
		fmt.Fprintf(logf, "=== topo: %s exit: code %d %v\n", time.Now().Format(time.RFC3339Nano), code, err)
		logf.Close()
	}()
	for {
		code, _, herr := n.HTTPGet("/healthz")
		if herr == nil && code == 200 {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("topo: %s: inof-host exited before it was healthy; log:\n%s", n.Name, tail(n.logPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("topo: %s: inof-host not healthy after %s (status %d, %v)", n.Name, vmTimeout, code, herr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StopAgent sends SIGTERM to a VM device's inof-host and waits up to
// timeout for it to exit (then kills it).
func (vg *vmGuest) StopAgent(timeout time.Duration) error {
	n := vg.n
	if vg.vm == nil {
		return fmt.Errorf("topo: %s is not a VM", n.Name)
	}
	vg.vm.mu.Lock()
	p := vg.vm.agent
	vg.vm.mu.Unlock()
	if p == nil || !vg.AgentRunning() {
		return fmt.Errorf("topo: stop %s: inof-host not running", n.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	code, err := p.Stop(ctx, timeout)
	if err == nil && code != 0 {
		err = fmt.Errorf("topo: %s: inof-host exited with code %d", n.Name, code)
	}
	return err
}

// AgentRunning reports whether inof-host runs in a VM device's guest.
func (vg *vmGuest) AgentRunning() bool {
	if vg.vm == nil {
		return false
	}
	vg.vm.mu.Lock()
	p := vg.vm.agent
	vg.vm.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// KillGuest kills a VM device's qemu (no shutdown of any kind: the agent
// stops registering, the kernel stops answering). The taps stay, with
// carrier, like the ports of a server that hangs. It returns when the
// signal was sent.
func (vg *vmGuest) KillGuest() (time.Time, error) {
	n := vg.n
	if vg.vm == nil || vg.vm.guest == nil {
		return time.Time{}, fmt.Errorf("topo: %s is not a booted VM", n.Name)
	}
	return vg.vm.guest.Kill()
}

// stopVM ends the guest and removes the taps at teardown; on failure it
// logs the end of the console.
func (vg *vmGuest) stopVM() {
	n := vg.n
	v := vg.vm
	if v.booted != nil {
		<-v.booted // a test that failed early may still be booting it
	}
	if v.guest != nil {
		v.guest.Close()
		if n.f.tb.Failed() {
			n.f.tb.Logf("topo: last lines of %s:\n%s", v.guest.ConsolePath(), tail(v.guest.ConsolePath(), 40))
		}
	}
	for _, t := range v.taps {
		t.Close()
	}
}

// setVMLink cuts or restores a VM NIC: the tap at the switch goes down or
// up (the switch agent sees it), and QMP set_link takes the guest's
// carrier away or back.
func (l *Link) setVMLink(up bool) (time.Time, error) {
	g := l.Device.Guest()
	if g == nil {
		return time.Time{}, fmt.Errorf("topo: %s is not booted", l.Device.Name)
	}
	at := time.Now()
	if err := l.Device.vm.taps[l.NIC].SetUp(up); err != nil {
		return at, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := g.SetLink(ctx, l.NIC, up)
	return at, err
}

// guestHTTP is an http.RoundTripper that GETs from inside a VM device's
// guest, through its control channel (the guest's loopback is not
// reachable from the test).
type guestHTTP struct{ n *Node }

func (t guestHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.n.Guest()
	if g == nil {
		return nil, fmt.Errorf("topo: %s is not booted", t.n.Name)
	}
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("topo: %s: only GET reaches a guest", t.n.Name)
	}
	var (
		code int
		body []byte
		err  error
	)
	if t.n.gns == "" {
		code, body, err = g.HTTPGet(req.Context(), req.URL.String())
	} else {
		code, body, err = t.n.guestNSGet(req.Context(), req.URL.String())
	}
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(body))), ContentLength: int64(len(body)),
		Request: req}, nil
}

// RequireVM skips the test (outside CI) unless the tools VM devices need
// are installed: qemu-system-x86_64, busybox (static), nvme-cli, apt-get
// and dpkg-deb.
func RequireVM(tb testing.TB) {
	tb.Helper()
	netns.RequireRoot(tb)
	for _, tool := range []string{"qemu-system-x86_64", "busybox", "nvme", "apt-get", "dpkg-deb"} {
		netns.RequireTool(tb, tool)
	}
}
