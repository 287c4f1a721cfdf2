package clab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/integration/topo"
)

// DefaultImage is the node image Render uses when Options.Image is empty
// and BuildImage builds when ImageOptions.Tag is empty.
const DefaultImage = "inof-lab:latest"

// FabricNode is the name of the node holding the control bridge.
const FabricNode = "fabric"

// Paths inside every node container.
const (
	// ConfigDir is where a node's generated files are mounted.
	ConfigDir = "/etc/inof"
	// StartFile starts a node's daemon once it exists.
	StartFile = "/run/inof/start"
	// StateDir holds the daemons' state (and the fake nvme's, under nvme/).
	StateDir = "/var/lib/inof"
	// NVMeCalls is the fake nvme-cli's log of its invocations.
	NVMeCalls = StateDir + "/nvme/calls"
)

// Metrics listeners inside the containers (the daemons' defaults, as in
// the namespace harness).
const (
	InofdMetrics = "127.0.0.1:9465"
	HostMetrics  = "127.0.0.1:9464"
)

// Options configures Render.
type Options struct {
	// Name is the lab's name; containers are clab-NAME-NODE and the nodes'
	// files go in NAME/ beside the topology file. Empty means "inof".
	Name string
	// Image is every node's image (see BuildImage); empty means
	// DefaultImage.
	Image string
}

// Role is what a lab node runs.
type Role string

// Node roles.
const (
	RoleReflector Role = "reflector" // inofd --role reflector
	RoleSwitch    Role = "switch"    // inofd --role switch
	RoleDevice    Role = "device"    // inof-host
	RoleFabric    Role = "fabric"    // the control bridge
)

// Node is one node of a rendered lab.
type Node struct {
	Name string
	Role Role
	// Addr is a reflector's or switch's control address on fab0.
	Addr netip.Prefix
	// Passive nodes wait for StartFile; nothing creates it for them.
	Passive bool
}

// Link is a device NIC cabled to a switch access port.
type Link struct {
	Device string
	NIC    int    // index in the device's NICs
	IfName string // in the device container: eth1, eth2, …
	Switch string
	Port   string // in the switch container: p1, p2, …
	Prefix netip.Prefix
}

// Lab is a rendered containerlab lab.
type Lab struct {
	Name string
	// Topology is the containerlab topology file (TopologyFile).
	Topology []byte
	// Files are the nodes' files by path relative to the topology file
	// (NAME/NODE/FILE), mounted at ConfigDir.
	Files map[string][]byte
	// Nodes in topology order: reflectors, switches, the fabric, devices.
	Nodes []Node
	// Links are the device NICs, in Spec order.
	Links []Link
}

// TopologyFile is the topology file's name: NAME.clab.yml.
func (l *Lab) TopologyFile() string { return l.Name + ".clab.yml" }

// Container is the Docker container name of a node.
func (l *Lab) Container(node string) string { return "clab-" + l.Name + "-" + node }

// Link returns NIC k of a device, or nil.
func (l *Lab) Link(device string, k int) *Link {
	for i := range l.Links {
		if l.Links[i].Device == device && l.Links[i].NIC == k {
			return &l.Links[i]
		}
	}
	return nil
}

// Write writes the topology file and the nodes' files into dir and
// returns the topology file's path.
func (l *Lab) Write(dir string) (string, error) {
	paths := make([]string, 0, len(l.Files))
	for p := range l.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("clab: %w", err)
		}
		if err := os.WriteFile(full, l.Files[p], 0o644); err != nil {
			return "", fmt.Errorf("clab: %w", err)
		}
	}
	top := filepath.Join(dir, l.TopologyFile())
	if err := os.WriteFile(top, l.Topology, 0o644); err != nil {
		return "", fmt.Errorf("clab: %w", err)
	}
	return top, nil
}

// nameRE is containerlab's pattern for lab names, narrowed to what is
// also a valid interface name on the fabric bridge.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Render turns spec into a containerlab lab. It accepts what topo.Start
// accepts, except probe devices (they have no agent to run) and a node
// named FabricNode.
func Render(spec topo.Spec, opts Options) (*Lab, error) {
	if err := spec.Check(); err != nil {
		return nil, fmt.Errorf("clab: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "inof"
	}
	if opts.Image == "" {
		opts.Image = DefaultImage
	}
	if !nameRE.MatchString(opts.Name) {
		return nil, fmt.Errorf("clab: lab name %q: want letters, digits, '-', '_' or '.'", opts.Name)
	}
	if strings.ContainsAny(opts.Image, " '\"\n") || opts.Image == "" {
		return nil, fmt.Errorf("clab: image %q: not a plain image reference", opts.Image)
	}
	if spec.ASN == 0 {
		spec.ASN = 65000
	}
	r := &renderer{spec: spec, opts: opts, lab: &Lab{Name: opts.Name, Files: map[string][]byte{}}, ports: map[string][]string{}}
	if err := r.plan(); err != nil {
		return nil, err
	}
	if err := r.files(); err != nil {
		return nil, err
	}
	r.lab.Topology = r.topology()
	return r.lab, nil
}

// renderer holds one Render call's state.
type renderer struct {
	spec  topo.Spec
	opts  Options
	lab   *Lab
	ports map[string][]string // switch → its access ports, in order
}

// plan lays out nodes, addresses and links as topo.Start does.
func (r *renderer) plan() error {
	passive := func(n string) bool { return slices.Contains(r.spec.Passive, n) }
	add := func(n Node) error {
		if !nameRE.MatchString(n.Name) {
			return fmt.Errorf("clab: node name %q: want letters, digits, '-', '_' or '.'", n.Name)
		}
		if n.Name == FabricNode && n.Role != RoleFabric {
			return fmt.Errorf("clab: node name %q is the control bridge's", n.Name)
		}
		r.lab.Nodes = append(r.lab.Nodes, n)
		return nil
	}
	for i, n := range r.spec.Reflectors {
		if err := add(Node{Name: n, Role: RoleReflector, Addr: netip.PrefixFrom(topo.ReflectorAddr(i), 24), Passive: passive(n)}); err != nil {
			return err
		}
	}
	for j, n := range r.spec.Switches {
		if err := add(Node{Name: n, Role: RoleSwitch, Addr: netip.PrefixFrom(topo.SwitchAddr(j), 24), Passive: passive(n)}); err != nil {
			return err
		}
	}
	if len(r.spec.Reflectors)+len(r.spec.Switches) > 0 {
		if err := add(Node{Name: FabricNode, Role: RoleFabric}); err != nil {
			return err
		}
	}
	for i, d := range r.spec.Devices {
		if d.Probe {
			return fmt.Errorf("clab: device %s is a probe: a lab runs inof-host on every device", d.Name)
		}
		if err := add(Node{Name: d.Name, Role: RoleDevice, Passive: passive(d.Name)}); err != nil {
			return err
		}
		for k, nic := range d.NICs {
			p, err := r.spec.NICPrefix(i, k)
			if err != nil {
				return fmt.Errorf("clab: %w", err)
			}
			port := fmt.Sprintf("p%d", len(r.ports[nic.Switch])+1)
			r.ports[nic.Switch] = append(r.ports[nic.Switch], port)
			r.lab.Links = append(r.lab.Links, Link{Device: d.Name, NIC: k, IfName: fmt.Sprintf("eth%d", k+1),
				Switch: nic.Switch, Port: port, Prefix: p})
		}
	}
	for _, sw := range r.spec.Switches {
		if len(r.ports[sw]) == 0 {
			return fmt.Errorf("clab: switch %s: no device cabled to it (the agent needs an access port)", sw)
		}
	}
	return nil
}

// dir is a node's directory, relative to the topology file.
func (r *renderer) dir(node string) string { return r.opts.Name + "/" + node }

// files generates every node's start.sh and configuration.
func (r *renderer) files() error {
	for _, n := range r.lab.Nodes {
		var (
			cfg     map[string]any
			cfgName string
			err     error
		)
		switch n.Role {
		case RoleReflector:
			cfg, cfgName = r.reflectorConfig(n), "inofd.yaml"
			if hook := r.spec.ReflectorConfig; hook != nil {
				hook(n.Name, cfg)
			}
		case RoleSwitch:
			cfg, cfgName = r.switchConfig(n), "inofd.yaml"
			if hook := r.spec.SwitchConfig; hook != nil {
				hook(n.Name, cfg)
			}
		case RoleDevice:
			cfg, cfgName = r.hostConfig(n), "inof-host.yaml"
			if hook := r.spec.HostConfig; hook != nil {
				hook(n.Name, cfg)
			}
		}
		if cfg != nil {
			b, err := yaml.Marshal(cfg)
			if err != nil {
				return fmt.Errorf("clab: %s configuration: %w", n.Name, err)
			}
			head := "# " + n.Name + ": generated by integration/clab from a topo.Spec; do not edit.\n"
			r.lab.Files[r.dir(n.Name)+"/"+cfgName] = append([]byte(head), b...)
		}
		script, err := r.startScript(n, cfgName)
		if err != nil {
			return err
		}
		r.lab.Files[r.dir(n.Name)+"/start.sh"] = []byte(script)
	}
	return nil
}

func (r *renderer) reflectorConfig(n Node) map[string]any {
	var clients, peers []any
	for _, m := range r.lab.Nodes {
		switch {
		case m.Role == RoleSwitch:
			clients = append(clients, map[string]any{"address": m.Addr.Addr().String()})
		case m.Role == RoleReflector && m.Name != n.Name:
			peers = append(peers, map[string]any{"address": m.Addr.Addr().String()})
		}
	}
	cfg := map[string]any{
		"log":            map[string]any{"level": "debug"},
		"metrics_listen": InofdMetrics,
		"state_dir":      StateDir,
		"asn":            r.spec.ASN,
		"router_id":      n.Addr.Addr().String(),
		"local_address":  n.Addr.Addr().String(),
		"clients":        clients,
	}
	if len(peers) > 0 {
		cfg["cluster_id"] = topo.ClusterID
		cfg["reflectors"] = peers
	}
	return cfg
}

func (r *renderer) switchConfig(n Node) map[string]any {
	var refl []any
	for _, m := range r.lab.Nodes {
		if m.Role == RoleReflector {
			refl = append(refl, map[string]any{"address": m.Addr.Addr().String()})
		}
	}
	var ports []any
	for _, p := range r.ports[n.Name] {
		ports = append(ports, p)
	}
	return map[string]any{
		"log":              map[string]any{"level": "debug"},
		"metrics_listen":   InofdMetrics,
		"state_dir":        StateDir,
		"router_id":        n.Addr.Addr().String(),
		"asn":              r.spec.ASN,
		"local_address":    n.Addr.Addr().String(),
		"reflectors":       refl,
		"bfd":              map[string]any{"enabled": true, "desired_min_tx": "100ms", "required_min_rx": "100ms", "detect_mult": 3},
		"graceful_restart": map[string]any{"enabled": true, "restart_time": "120s"},
		"access_ports":     ports,
	}
}

func (r *renderer) hostConfig(n Node) map[string]any {
	d := r.device(n.Name)
	var ifs []any
	for _, l := range r.lab.Links {
		if l.Device != n.Name {
			continue
		}
		nic := d.NICs[l.NIC]
		i := map[string]any{"name": l.IfName, "role": nic.Role, "protocol": nic.Protocol, "address": l.Prefix.Addr().String()}
		if nic.Port != 0 {
			i["port"] = nic.Port
		}
		if nic.NQN != "" {
			i["nqn"] = nic.NQN
		}
		ifs = append(ifs, i)
	}
	return map[string]any{
		"log":            map[string]any{"level": "debug"},
		"metrics_listen": HostMetrics,
		"state_file":     StateDir + "/state.json",
		"host_nqn":       topo.DeviceHostNQN(d),
		"nvme":           map[string]any{"path": fakeNVMePath},
		"interfaces":     ifs,
	}
}

// device returns the Spec's device of that name (plan checked it exists).
func (r *renderer) device(name string) topo.Device {
	for _, d := range r.spec.Devices {
		if d.Name == name {
			return d
		}
	}
	return topo.Device{}
}

// startScript is a node's start.sh: wait for its links, set them up, then
// (daemons) wait for StartFile and exec the daemon.
func (r *renderer) startScript(n Node, cfgName string) (string, error) {
	var b strings.Builder
	var ifs []string
	var setup []string
	var what, daemon string
	switch n.Role {
	case RoleFabric:
		what = "the control bridge br0, joined by every reflector and switch"
		setup = append(setup, "ip link show br0 >/dev/null 2>&1 || ip link add br0 type bridge", "ip link set br0 up")
		for _, m := range r.lab.Nodes {
			if m.Role == RoleReflector || m.Role == RoleSwitch {
				ifs = append(ifs, m.Name)
				setup = append(setup, "ip link set "+m.Name+" master br0")
			}
		}
	case RoleReflector, RoleSwitch:
		what = "route reflector"
		if n.Role == RoleSwitch {
			what = "leaf switch agent"
		}
		what += ", control address " + n.Addr.String() + " on fab0"
		ifs = append(ifs, "fab0")
		setup = append(setup, "ip addr replace "+n.Addr.String()+" dev fab0")
		if n.Role == RoleSwitch {
			ifs = append(ifs, r.ports[n.Name]...)
		}
		daemon = "inofd --role " + string(n.Role) + " --config " + ConfigDir + "/" + cfgName
	case RoleDevice:
		what = "inof-host"
		d := r.device(n.Name)
		for _, l := range r.lab.Links {
			if l.Device != n.Name {
				continue
			}
			ifs = append(ifs, l.IfName)
			if mac := d.NICs[l.NIC].MAC; mac != "" {
				if strings.ContainsAny(mac, " '\"$;\n") {
					return "", fmt.Errorf("clab: device %s NIC %d: MAC %q", n.Name, l.NIC, mac)
				}
				setup = append(setup, "ip link set "+l.IfName+" down", "ip link set "+l.IfName+" address "+mac)
			}
			setup = append(setup, "ip addr replace "+l.Prefix.String()+" dev "+l.IfName)
		}
		daemon = "inof-host --config " + ConfigDir + "/" + cfgName
	default:
		return "", errors.New("clab: unknown node role " + string(n.Role))
	}
	fmt.Fprintf(&b, "#!/bin/sh\n# %s: %s.\n# Generated by integration/clab from a topo.Spec; do not edit.\nset -eu\n", n.Name, what)
	// Wait until each link exists by setting it up: containerlab adds
	// them after the container started, and a name can show in
	// /sys/class/net a moment before ip can use it.
	fmt.Fprintf(&b, "for i in %s; do\n\tuntil ip link set $i up 2>/dev/null; do sleep 0.2; done\ndone\n", strings.Join(ifs, " "))
	for _, s := range setup {
		b.WriteString(s + "\n")
	}
	if n.Role == RoleDevice {
		// ip link set … address leaves the link down.
		fmt.Fprintf(&b, "for i in %s; do ip link set $i up; done\n", strings.Join(ifs, " "))
	}
	if daemon == "" {
		b.WriteString("echo \"" + n.Name + ": ready\"\nexec sleep 2147483647\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, "mkdir -p %s /run/inofd %s\n", StateDir, path.Dir(StartFile))
	if ports := r.ports[n.Name]; n.Role == RoleSwitch {
		list := strings.Join(ports, " ")
		fmt.Fprintf(&b, "# The access ports stay down until the agent answers /healthz (it has opened\n"+
			"# them): a device sees carrier, and registers, only once the agent listens.\n"+
			"for i in %s; do ip link set $i down; done\n"+
			"(\n\tuntil wget -q -O /dev/null http://%s/healthz 2>/dev/null; do sleep 0.2; done\n"+
			"\tfor i in %s; do ip link set $i up; done\n"+
			"\techo \"%s: agent healthy, access ports %s up\"\n) &\n", list, InofdMetrics, list, n.Name, list)
	}
	if n.Passive {
		fmt.Fprintf(&b, "echo \"%s is passive: start it with: docker exec %s touch %s\"\n", n.Name, r.lab.Container(n.Name), StartFile)
		fmt.Fprintf(&b, "until [ -e %s ]; do sleep 0.2; done\n", StartFile)
	}
	fmt.Fprintf(&b, "exec %s\n", daemon)
	return b.String(), nil
}

// topology writes the containerlab topology file.
func (r *renderer) topology() []byte {
	var b strings.Builder
	w := func(indent int, format string, a ...any) {
		b.WriteString(strings.Repeat("  ", indent))
		fmt.Fprintf(&b, format, a...)
		b.WriteByte('\n')
	}
	w(0, "# iNOF fabric as a containerlab lab, generated by integration/clab from a topo.Spec (the")
	w(0, "# description the namespace harness brings up); do not edit. docs/containerlab.md tells how")
	w(0, "# to build the image (%s) and deploy, use and destroy the lab.", r.opts.Image)
	w(0, "name: %s", r.opts.Name)
	w(0, "topology:")
	w(1, "defaults:")
	w(2, "kind: linux")
	w(2, "image: %s", r.opts.Image)
	w(2, "image-pull-policy: never # built locally, never pulled")
	w(2, "privileged: false")
	w(2, "cap-add: [NET_ADMIN, NET_RAW]")
	w(2, "cmd: sh %s/start.sh", ConfigDir)
	w(1, "nodes:")
	for _, n := range r.lab.Nodes {
		w(2, "%s:", n.Name)
		w(3, "binds: [%s:%s:ro]", r.dir(n.Name), ConfigDir)
	}
	w(1, "links:")
	for _, n := range r.lab.Nodes {
		if n.Role == RoleReflector || n.Role == RoleSwitch {
			w(2, "- endpoints: [%s:fab0, %s:%s]", n.Name, FabricNode, n.Name)
		}
	}
	for _, l := range r.lab.Links {
		w(2, "- endpoints: [%s:%s, %s:%s]", l.Device, l.IfName, l.Switch, l.Port)
	}
	return []byte(b.String())
}
