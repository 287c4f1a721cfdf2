package topo

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/openinof/inof/internal/netns"
)

// Kind is what a node runs.
type Kind int

// Node kinds.
const (
	KindReflector Kind = iota + 1 // inofd --role reflector
	KindSwitch                    // inofd --role switch
	KindHost                      // inof-host
	KindProbe                     // nothing: the test drives its NICs
	KindVM                        // a qemu guest running inof-host (see VM)
)

// Metrics addresses inside each node's namespace (the daemons' defaults).
const (
	inofdMetrics = "127.0.0.1:9465"
	hostMetrics  = "127.0.0.1:9464"
	// boxSwitchMetrics is a switch's on a reflector box (the switch's
	// packaged default, beside the reflector's 9465).
	boxSwitchMetrics = "127.0.0.1:9466"
)

// StartTimeout bounds how long a daemon may take to answer /healthz.
const StartTimeout = 30 * time.Second

// Fabric is a running topology.
type Fabric struct {
	tb testing.TB
	// Dir holds every node's configuration, state and log (Dir/NODE/).
	Dir   string
	spec  Spec
	fab   *netns.NS
	nodes map[string]*Node
	order []*Node
	vm    *vmFabric // VM devices' data segments (vm.go); nil without VMs
	guest *inGuest  // the guest of a fabric realised in one (inguest.go)
}

// Node is one namespace of the fabric and what runs in it.
//
// Its methods live in parts by concern, each holding its own state and
// reaching the node's identity (name, kind, namespace, directory, fabric)
// through a pointer back to it: daemon (proc.go: Start, Stop, Kill,
// Reload), daemonConfig (config.go: the generated configuration),
// daemonAPI (ops.go: the API socket and inofctl), readings (logs.go,
// http.go, fakenvme.go: logs, /metrics, fake nvme calls), netFaults
// (faults.go: uplink, iptables, impairments), inGuestNode (inguest.go: a
// node of a fabric in one guest), vmGuest (vm.go: a VM device) and
// probeNICs (probe.go: a probe device's NICs).
type Node struct {
	Name string
	Kind Kind
	NS   *netns.NS
	// Addr is a reflector's or switch's control address (10.0.0.0/24);
	// invalid for devices.
	Addr netip.Addr
	// Links are a device's NICs, in Spec order; a switch's access ports.
	Links []*Link
	// Binary, when set, is the program Start runs instead of the one
	// built from this tree (e.g. an older release's inofd).
	Binary string

	f   *Fabric
	dir string // configuration, state, fake nvme, log

	daemon
	daemonConfig
	daemonAPI
	readings
	netFaults
	inGuestNode
	vmGuest
	probeNICs
}

// bindParts points each of n's parts back at n; every Node is made with
// it.
func (n *Node) bindParts() *Node {
	n.daemon.n = n
	n.daemonConfig.n = n
	n.daemonAPI.n = n
	n.readings.n = n
	n.netFaults.n = n
	n.inGuestNode.n = n
	n.vmGuest.n = n
	n.probeNICs.n = n
	return n
}

// Link is a device NIC cabled to a switch access port (one veth pair).
type Link struct {
	Device *Node
	NIC    int    // index in the device's NICs
	IfName string // in the device's namespace: eth0, eth1, …
	Switch *Node
	Port   string // in the switch's namespace: p1, p2, …
	Prefix netip.Prefix
	Spec   NIC
}

// Addr is the NIC's address.
func (l *Link) Addr() netip.Addr { return l.Prefix.Addr() }

// Start builds the namespaces and links of spec, writes every node's
// configuration, starts the daemons (reflectors first, then switches, then
// devices) and waits until each answers /healthz. Everything is torn down
// when the test ends; the logs stay in a directory that is printed if the
// test failed.
func Start(tb testing.TB, spec Spec) *Fabric {
	tb.Helper()
	netns.RequireRoot(tb)
	if err := spec.check(); err != nil {
		tb.Fatal(err)
	}
	if spec.ASN == 0 {
		spec.ASN = 65000
	}
	dir, err := os.MkdirTemp("", "inof-topo-")
	if err != nil {
		tb.Fatal(err)
	}
	f := &Fabric{tb: tb, Dir: dir, spec: spec, nodes: map[string]*Node{}}
	// Registered first, so it runs last: every process is gone by then.
	tb.Cleanup(f.collect)
	if spec.InGuest != nil {
		f.startInGuest()
		return f
	}

	f.fab = netns.New(tb, "fab")
	f.fab.MustIP("link", "add", "br0", "type", "bridge")
	f.fab.MustIP("link", "set", "br0", "up")
	for i, name := range spec.Reflectors {
		f.control(name, KindReflector, reflectorAddr(i))
	}
	for j, name := range spec.Switches {
		if box, ok := spec.OnReflector[name]; ok {
			f.onBox(name, f.nodes[box], switchAddr(j))
			continue
		}
		f.control(name, KindSwitch, switchAddr(j))
	}
	for i, d := range spec.Devices {
		f.device(i, d)
	}
	for _, n := range f.order {
		if err := n.writeConfig(); err != nil {
			tb.Fatal(err)
		}
	}
	// Processes are stopped before the namespaces go (cleanups run last
	// registered first).
	tb.Cleanup(func() {
		for _, n := range f.order {
			n.kill()
		}
		for _, n := range f.order {
			for _, p := range n.probes {
				p.Close()
			}
		}
	})
	waitVMs := f.bootVMs()
	for _, n := range f.order {
		if n.Kind == KindProbe {
			n.openProbes()
			continue
		}
		if n.Kind == KindVM {
			continue
		}
		if slices.Contains(spec.Passive, n.Name) {
			continue
		}
		if err := n.Start(); err != nil {
			tb.Fatal(err)
		}
	}
	waitVMs()
	return f
}

// control creates a reflector or switch namespace joined to the fabric
// bridge.
func (f *Fabric) control(name string, kind Kind, addr netip.Addr) {
	n := f.newNode(name, kind)
	n.Addr = addr
	netns.Veth(f.tb, f.fab, name, n.NS, "fab0")
	f.fab.MustIP("link", "set", name, "master", "br0")
	n.NS.Addr("fab0", addr.String()+"/24")
}

// onBox adds a switch that runs in a reflector's namespace: its control
// address is a second address on the box's fab0.
func (f *Fabric) onBox(name string, box *Node, addr netip.Addr) {
	n := (&Node{Name: name, Kind: KindSwitch, NS: box.NS, f: f, dir: filepath.Join(f.Dir, name), Addr: addr}).bindParts()
	n.box = box
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		f.tb.Fatal(err)
	}
	n.logPath = filepath.Join(n.dir, name+".log")
	n.cfgPath = filepath.Join(n.dir, name+".yaml")
	n.http = newHTTPClient(n.NS, boxSwitchMetrics)
	f.nodes[name] = n
	f.order = append(f.order, n)
	box.NS.Addr("fab0", addr.String()+"/24")
}

// newLink describes NIC k of device n (the i-th device) on the next port
// of its switch; without an address in the spec, the NIC gets
// 10.(100+k).(i+1).2/bits.
func (f *Fabric) newLink(n *Node, i, k int, nic NIC, bits int) *Link {
	sw := f.nodes[nic.Switch]
	l := &Link{Device: n, NIC: k, IfName: fmt.Sprintf("eth%d", k), Switch: sw,
		Port: fmt.Sprintf("p%d", len(sw.Links)+1), Spec: nic}
	l.Prefix = netip.MustParsePrefix(nicCIDR(nic, i, k, bits))
	return l
}

// nicCIDR is the address of NIC k of device i: the NIC's Address, or
// 10.(100+k).(i+1).2/bits when that is empty.
func nicCIDR(nic NIC, i, k, bits int) string {
	if nic.Address != "" {
		return nic.Address
	}
	return fmt.Sprintf("10.%d.%d.2/%d", 100+k, i+1, bits)
}

// device creates a device namespace and cables each NIC to its switch.
func (f *Fabric) device(i int, d Device) {
	if d.VM != nil {
		f.vmDevice(i, d)
		return
	}
	kind := KindHost
	if d.Probe {
		kind = KindProbe
	}
	n := f.newNode(d.Name, kind)
	for k, nic := range d.NICs {
		l := f.newLink(n, i, k, nic, 24)
		sw := l.Switch
		netns.Veth(f.tb, sw.NS, l.Port, n.NS, l.IfName)
		if nic.MAC != "" {
			n.NS.MustIP("link", "set", l.IfName, "down")
			n.NS.MustIP("link", "set", l.IfName, "address", nic.MAC)
			n.NS.MustIP("link", "set", l.IfName, "up")
		}
		n.NS.Addr(l.IfName, l.Prefix.String())
		n.Links = append(n.Links, l)
		sw.Links = append(sw.Links, l)
	}
}

func (f *Fabric) newNode(name string, kind Kind) *Node {
	n := (&Node{Name: name, Kind: kind, NS: netns.New(f.tb, name), f: f, dir: filepath.Join(f.Dir, name)}).bindParts()
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		f.tb.Fatal(err)
	}
	n.logPath = filepath.Join(n.dir, name+".log")
	n.cfgPath = filepath.Join(n.dir, name+".yaml")
	addr := inofdMetrics
	if kind == KindHost {
		addr = hostMetrics
	}
	n.http = newHTTPClient(n.NS, addr)
	f.nodes[name] = n
	f.order = append(f.order, n)
	return n
}

// Bridge is the namespace of the fabric's bridge (br0), to which every
// reflector and switch is cabled: a test may cable more to it.
func (f *Fabric) Bridge() *netns.NS { return f.fab }

// Node returns the named node; it fails the test if there is none.
func (f *Fabric) Node(name string) *Node {
	n, ok := f.nodes[name]
	if !ok {
		f.tb.Fatalf("topo: no node %q", name)
	}
	return n
}

// Nodes returns every node of a kind, in Spec order.
func (f *Fabric) Nodes(kind Kind) []*Node {
	var out []*Node
	for _, n := range f.order {
		if n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

// SetLink sets the switch end of a device NIC down or up (a cable cut at
// the access port: the switch loses carrier at once, the device's end too).
// It goes through netlink inside the switch's namespace and returns the
// time just before the change was asked for, for latency measurements.
// For a VM device it also takes the guest's carrier away or back (QMP).
// In a fabric in one guest (Spec.InGuest) it runs ip there, and the time
// is the machine's, not the guest's: Fabric.GuestCuts measures in the
// guest's.
func (l *Link) SetLink(up bool) (time.Time, error) {
	if l.Device.vm != nil {
		return l.setVMLink(up)
	}
	if l.Device.f.guest != nil {
		return l.setGuestLink(up)
	}
	var at time.Time
	err := l.Switch.NS.Do(func() error {
		link, err := netlink.LinkByName(l.Port)
		if err != nil {
			return err
		}
		at = time.Now()
		if up {
			return netlink.LinkSetUp(link)
		}
		return netlink.LinkSetDown(link)
	})
	if err != nil {
		return at, fmt.Errorf("topo: set %s port %s up=%v: %w", l.Switch.Name, l.Port, up, err)
	}
	return at, nil
}

// Cut sets the link down at the switch's access port and fails the test on
// error; it returns when the change was asked for.
func (l *Link) Cut(tb testing.TB) time.Time {
	tb.Helper()
	at, err := l.SetLink(false)
	if err != nil {
		tb.Fatal(err)
	}
	return at
}

// Restore sets the link up again and fails the test on error.
func (l *Link) Restore(tb testing.TB) time.Time {
	tb.Helper()
	at, err := l.SetLink(true)
	if err != nil {
		tb.Fatal(err)
	}
	return at
}

// collect runs last: on failure it keeps Dir and prints where it is and
// the tail of every log; otherwise it removes Dir.
func (f *Fabric) collect() {
	if !f.tb.Failed() {
		os.RemoveAll(f.Dir)
		return
	}
	f.tb.Logf("topo: configurations, state and logs kept in %s", f.Dir)
	for _, n := range f.order {
		if _, err := os.Stat(n.logPath); err != nil {
			continue // never started
		}
		f.tb.Logf("topo: last lines of %s:\n%s", n.logPath, tail(n.logPath, 60))
	}
}

// tail returns the last lines of a file.
func tail(path string, lines int) string {
	file, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer file.Close()
	var all []string
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = append([]string{"… " + strconv.Itoa(len(all)-lines) + " lines before"}, all[len(all)-lines:]...)
	}
	return strings.Join(all, "\n")
}
