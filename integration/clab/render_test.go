package clab

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/hostagent"
	"github.com/openinof/inof/app/reflector"
	"github.com/openinof/inof/app/switchagent"
	"github.com/openinof/inof/integration/topo"
)

var update = flag.Bool("update", false, "rewrite inof-demo.clab.yml and inof-demo/ from LabSpec")

// demoName is the checked-in lab's name.
const demoName = "inof-demo"

func renderDemo(t *testing.T) *Lab {
	t.Helper()
	lab, err := Render(LabSpec(), Options{Name: demoName})
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

// TestDemoLabFile: the checked-in inof-demo.clab.yml and every file under
// inof-demo/ are exactly what Render makes of LabSpec, and there is
// no other file there. -update rewrites them.
func TestDemoLabFile(t *testing.T) {
	lab := renderDemo(t)
	if *update {
		if err := os.RemoveAll(demoName); err != nil {
			t.Fatal(err)
		}
		if _, err := lab.Write("."); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(lab.TopologyFile())
	if err != nil {
		t.Fatalf("%v (regenerate: go test ./integration/clab -run TestDemoLabFile -update)", err)
	}
	if !bytes.Equal(got, lab.Topology) {
		t.Errorf("%s is stale: regenerate with go test ./integration/clab -run TestDemoLabFile -update", lab.TopologyFile())
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(demoName, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(p)
		seen[rel] = true
		want, ok := lab.Files[rel]
		if !ok {
			t.Errorf("%s is not rendered any more (regenerate with -update)", rel)
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s is stale (regenerate with -update)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range lab.Files {
		if !seen[p] {
			t.Errorf("%s is missing (regenerate with -update)", p)
		}
	}
}

// schema compiles containerlab's topology schema (a copy of
// ../shared/spec/containerlab/clab.schema.json).
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/clab.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://containerlab.dev/clab.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// instance turns a YAML document into the JSON value the schema checks.
func instance(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// otherSpec exercises what the demo does not: one reflector, a MAC, a
// hook, a passive switch and a device with NICs on two switches.
func otherSpec() topo.Spec {
	return topo.Spec{
		Reflectors: []string{"rr1"},
		Switches:   []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "tgt", NICs: []topo.NIC{
				{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420, NQN: "nqn.2014-08.org.example:nvme:x", MAC: "02:00:00:00:00:01"},
				{Switch: "leaf2", Role: "target", Protocol: "rdma", Port: 4420, NQN: "nqn.2014-08.org.example:nvme:x", Address: "192.0.2.7/24"}}},
			{Name: "h1", HostNQN: "nqn.2014-08.org.example:host:one", NICs: []topo.NIC{{Switch: "leaf2", Role: "host", Protocol: "tcp"}}},
		},
		ASN:          64512,
		Passive:      []string{"leaf2"},
		SwitchConfig: func(_ string, cfg map[string]any) { cfg["hold_down"] = "3s" },
	}
}

// TestSchema: the demo lab and another one validate against
// containerlab's JSON schema, and the schema does reject a topology file
// with a misspelt node key (so the check can fail).
func TestSchema(t *testing.T) {
	sch := schema(t)
	other, err := Render(otherSpec(), Options{Name: "other", Image: "inof-lab:test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, lab := range []*Lab{renderDemo(t), other} {
		if err := sch.Validate(instance(t, lab.Topology)); err != nil {
			t.Errorf("%s does not validate: %v\n%s", lab.TopologyFile(), err, lab.Topology)
		}
	}
	bad := bytes.Replace(other.Topology, []byte("binds:"), []byte("bind:"), 1)
	if bytes.Equal(bad, other.Topology) {
		t.Fatal("no binds to misspell")
	}
	if err := sch.Validate(instance(t, bad)); err == nil {
		t.Error("the schema accepted a node key bind")
	}
}

// clabFile is the part of a topology file the tests read back.
type clabFile struct {
	Name     string `yaml:"name"`
	Topology struct {
		Defaults map[string]any `yaml:"defaults"`
		Nodes    map[string]struct {
			Binds []string `yaml:"binds"`
		} `yaml:"nodes"`
		Links []struct {
			Endpoints []string `yaml:"endpoints"`
		} `yaml:"links"`
	} `yaml:"topology"`
}

// TestRenderFollowsSpec reads the rendered lab back and checks it against
// the Spec, with topo's own address rules: every node and NIC is there,
// cabled where the Spec says, with topo's addresses in the start scripts
// and configurations; hooks and passive nodes are honoured.
func TestRenderFollowsSpec(t *testing.T) {
	spec := otherSpec()
	lab, err := Render(spec, Options{Name: "other", Image: "inof-lab:test"})
	if err != nil {
		t.Fatal(err)
	}
	var f clabFile
	if err := yaml.Unmarshal(lab.Topology, &f); err != nil {
		t.Fatal(err)
	}
	if f.Name != "other" || f.Topology.Defaults["image"] != "inof-lab:test" || f.Topology.Defaults["privileged"] != false {
		t.Errorf("name/defaults: %q %v", f.Name, f.Topology.Defaults)
	}
	var endpoints [][]string
	for _, l := range f.Topology.Links {
		endpoints = append(endpoints, l.Endpoints)
	}
	wantNodes := []string{"rr1", "leaf1", "leaf2", FabricNode, "tgt", "h1"}
	if len(f.Topology.Nodes) != len(wantNodes) {
		t.Errorf("nodes %v, want %v", f.Topology.Nodes, wantNodes)
	}
	for _, n := range wantNodes {
		node, ok := f.Topology.Nodes[n]
		if !ok {
			t.Errorf("no node %s", n)
			continue
		}
		if want := []string{"other/" + n + ":" + ConfigDir + ":ro"}; !slices.Equal(node.Binds, want) {
			t.Errorf("%s binds %v, want %v", n, node.Binds, want)
		}
		if _, ok := lab.Files["other/"+n+"/start.sh"]; !ok {
			t.Errorf("%s has no start.sh", n)
		}
	}
	// Control plane: each reflector and switch on the fabric bridge, with
	// topo's control address.
	for i, n := range append(append([]string{}, spec.Reflectors...), spec.Switches...) {
		if !slices.ContainsFunc(endpoints, func(e []string) bool { return slices.Equal(e, []string{n + ":fab0", FabricNode + ":" + n}) }) {
			t.Errorf("%s is not cabled to the fabric bridge: %v", n, endpoints)
		}
		addr := topo.ReflectorAddr(i)
		if i >= len(spec.Reflectors) {
			addr = topo.SwitchAddr(i - len(spec.Reflectors))
		}
		if s := string(lab.Files["other/"+n+"/start.sh"]); !strings.Contains(s, "ip addr replace "+addr.String()+"/24 dev fab0\n") {
			t.Errorf("%s start.sh does not set %s on fab0:\n%s", n, addr, s)
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(lab.Files["other/"+n+"/inofd.yaml"], &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["local_address"] != addr.String() || cfg["asn"] != 64512 {
			t.Errorf("%s inofd.yaml: local_address %v asn %v, want %s 64512", n, cfg["local_address"], cfg["asn"], addr)
		}
	}
	// Devices: one link per NIC to the Spec's switch, topo's addresses in
	// start.sh and inof-host.yaml, access ports numbered per switch.
	ports := map[string][]any{}
	for i, d := range spec.Devices {
		var hc struct {
			HostNQN    string `yaml:"host_nqn"`
			Interfaces []struct{ Name, Address string }
		}
		if err := yaml.Unmarshal(lab.Files["other/"+d.Name+"/inof-host.yaml"], &hc); err != nil {
			t.Fatal(err)
		}
		if hc.HostNQN != topo.DeviceHostNQN(d) || len(hc.Interfaces) != len(d.NICs) {
			t.Errorf("%s inof-host.yaml: %+v", d.Name, hc)
			continue
		}
		for k, nic := range d.NICs {
			p, err := spec.NICPrefix(i, k)
			if err != nil {
				t.Fatal(err)
			}
			l := lab.Link(d.Name, k)
			if l == nil || l.Switch != nic.Switch || l.Prefix != p {
				t.Errorf("%s NIC %d: link %+v, want switch %s address %s", d.Name, k, l, nic.Switch, p)
				continue
			}
			ports[l.Switch] = append(ports[l.Switch], l.Port)
			if !slices.ContainsFunc(endpoints, func(e []string) bool {
				return slices.Equal(e, []string{d.Name + ":" + l.IfName, nic.Switch + ":" + l.Port})
			}) {
				t.Errorf("%s NIC %d: no link %s:%s - %s:%s in %v", d.Name, k, d.Name, l.IfName, nic.Switch, l.Port, endpoints)
			}
			if hc.Interfaces[k].Name != l.IfName || hc.Interfaces[k].Address != p.Addr().String() {
				t.Errorf("%s NIC %d: inof-host interface %+v, want %s %s", d.Name, k, hc.Interfaces[k], l.IfName, p.Addr())
			}
			if s := string(lab.Files["other/"+d.Name+"/start.sh"]); !strings.Contains(s, "ip addr replace "+p.String()+" dev "+l.IfName+"\n") {
				t.Errorf("%s start.sh does not set %s on %s:\n%s", d.Name, p, l.IfName, s)
			}
		}
	}
	for _, sw := range spec.Switches {
		var cfg map[string]any
		if err := yaml.Unmarshal(lab.Files["other/"+sw+"/inofd.yaml"], &cfg); err != nil {
			t.Fatal(err)
		}
		if got, ok := cfg["access_ports"].([]any); !ok || !slices.Equal(got, ports[sw]) {
			t.Errorf("%s access_ports %v, want %v", sw, cfg["access_ports"], ports[sw])
		}
		if cfg["hold_down"] != "3s" {
			t.Errorf("%s: SwitchConfig hook not applied: %v", sw, cfg)
		}
		// Its access ports go down before the agent starts and up once it
		// answers /healthz.
		script := string(lab.Files["other/"+sw+"/start.sh"])
		var names []string
		for _, l := range lab.Links {
			if l.Switch == sw {
				names = append(names, l.Port)
			}
		}
		list := strings.Join(names, " ")
		down := strings.Index(script, "for i in "+list+"; do ip link set $i down; done\n")
		healthy := strings.Index(script, "until wget -q -O /dev/null http://"+InofdMetrics+"/healthz")
		up := strings.Index(script, "for i in "+list+"; do ip link set $i up; done\n")
		exec := strings.Index(script, "exec inofd --role switch")
		if down < 0 || healthy < down || up < healthy || exec < up {
			t.Errorf("%s start.sh does not hold its access ports %s down until the agent is healthy:\n%s", sw, list, script)
		}
	}
	if s := string(lab.Files["other/tgt/start.sh"]); !strings.Contains(s, "ip link set eth1 address 02:00:00:00:00:01\n") {
		t.Errorf("tgt start.sh does not set the MAC:\n%s", s)
	}
	// Passive nodes (leaf2) wait for StartFile and say how to create it;
	// the others start at once.
	for _, n := range lab.Nodes {
		s := string(lab.Files["other/"+n.Name+"/start.sh"])
		gated := strings.Contains(s, "until [ -e "+StartFile+" ]")
		if gated != (n.Name == "leaf2") {
			t.Errorf("%s waits for %s: %v, want %v:\n%s", n.Name, StartFile, gated, n.Name == "leaf2", s)
		}
	}
	if s := string(lab.Files["other/leaf2/start.sh"]); !strings.Contains(s, "docker exec clab-other-leaf2 touch "+StartFile) {
		t.Errorf("passive leaf2's start.sh does not say how to start it:\n%s", s)
	}
}

// TestStartScriptsParse: every generated start.sh is valid for busybox sh
// (the image's shell), checked with sh -n.
func TestStartScriptsParse(t *testing.T) {
	sh := "/bin/busybox"
	if _, err := os.Stat(sh); err != nil {
		t.Fatalf("%v: the image's shell is Debian's busybox-static (apt-get install busybox-static)", err)
	}
	for _, lab := range []*Lab{renderDemo(t)} {
		for p, b := range lab.Files {
			if !strings.HasSuffix(p, "/start.sh") {
				continue
			}
			cmd := exec.Command(sh, "sh", "-n")
			cmd.Stdin = bytes.NewReader(b)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s\n%s", p, err, out, b)
			}
		}
	}
}

// TestRenderRejects: what a lab cannot hold is refused with an error that
// names it.
func TestRenderRejects(t *testing.T) {
	probe := otherSpec()
	probe.Devices[1].Probe = true
	fabric := otherSpec()
	fabric.Switches[1] = FabricNode
	for i := range fabric.Devices {
		for k := range fabric.Devices[i].NICs {
			if fabric.Devices[i].NICs[k].Switch == "leaf2" {
				fabric.Devices[i].NICs[k].Switch = FabricNode
			}
		}
	}
	lonely := otherSpec()
	lonely.Switches = append(lonely.Switches, "leaf3")
	bad := otherSpec()
	bad.Devices[0].NICs[0].Switch = "nowhere"
	for _, c := range []struct {
		name string
		spec topo.Spec
		opts Options
		want string
	}{
		{"probe", probe, Options{}, "probe"},
		{"fabric name", fabric, Options{}, FabricNode},
		{"switch without ports", lonely, Options{}, "leaf3"},
		{"spec check", bad, Options{}, "nowhere"},
		{"lab name", otherSpec(), Options{Name: "a b"}, "lab name"},
		{"image", otherSpec(), Options{Image: "x' y"}, "image"},
	} {
		_, err := Render(c.spec, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestConfigsLoad: every configuration of the checked-in lab loads with
// the daemons' own loader (daemon.Load: unknown keys, wrong types and
// every Validate problem are errors), and LabSpec's BFD timers are set on
// top of the Spec's own hooks.
func TestConfigsLoad(t *testing.T) {
	lab := renderDemo(t)
	dir := t.TempDir()
	loaded := 0
	for p, b := range lab.Files {
		var opts daemon.Validator
		switch filepath.Base(p) {
		case "inof-host.yaml":
			o := hostagent.DefaultOptions()
			opts = &o
		case "inofd.yaml":
			if _, ok := lab.Files[filepath.Dir(p)+"/start.sh"]; !ok {
				t.Fatalf("%s has no start.sh", p)
			}
			if strings.Contains(string(lab.Files[filepath.Dir(p)+"/start.sh"]), "--role switch") {
				o := switchagent.DefaultOptions()
				opts = &o
			} else {
				o := reflector.DefaultOptions()
				opts = &o
			}
		default:
			continue
		}
		f := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := daemon.Load(daemon.LoadOptions{File: f}, opts); err != nil {
			t.Errorf("%s does not load: %v\n%s", p, err, b)
		}
		loaded++
	}
	if loaded != len(lab.Nodes)-1 {
		t.Errorf("loaded %d configurations, want one per node but the fabric (%d)", loaded, len(lab.Nodes)-1)
	}

	relaxed, err := Render(RelaxBFD(otherSpec()), Options{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	var sw struct {
		HoldDown string `yaml:"hold_down"`
		BFD      struct {
			DesiredMinTx string `yaml:"desired_min_tx"`
			DetectMult   int    `yaml:"detect_mult"`
		}
	}
	if err := yaml.Unmarshal(relaxed.Files["other/leaf1/inofd.yaml"], &sw); err != nil {
		t.Fatal(err)
	}
	if sw.HoldDown != "3s" || sw.BFD.DesiredMinTx != labBFDInterval || sw.BFD.DetectMult != labBFDMult {
		t.Errorf("leaf1 after RelaxBFD: %+v, want the Spec's hold_down 3s and BFD %s × %d", sw, labBFDInterval, labBFDMult)
	}
}
