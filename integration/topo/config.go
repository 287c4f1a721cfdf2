package topo

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// daemonConfig is the part of a Node that generates its daemon's
// configuration: the file, and the command line and environment Start
// runs the daemon with.
type daemonConfig struct {
	n       *Node
	cfgPath string
	argv    []string
	env     []string
	// dummyPort: the switch got a dummy access port p0 (it has no links).
	dummyPort bool
	// box is the reflector whose namespace a switch shares (Spec.OnReflector).
	box *Node
}

// writeConfig generates the node's configuration file.
func (c *daemonConfig) writeConfig() error { return c.writeConfigEdited(nil) }

// writeConfigEdited generates the node's configuration file, changed by
// edit (if set) after the Spec's hooks.
func (c *daemonConfig) writeConfigEdited(edit func(cfg map[string]any)) error {
	n := c.n
	var cfg map[string]any
	switch n.Kind {
	case KindReflector:
		cfg = c.reflectorConfig()
		if hook := n.f.spec.ReflectorConfig; hook != nil {
			hook(n.Name, cfg)
		}
	case KindSwitch:
		cfg = c.switchConfig()
		if hook := n.f.spec.SwitchConfig; hook != nil {
			hook(n.Name, cfg)
		}
	case KindHost:
		var err error
		if cfg, err = c.hostConfig(); err != nil {
			return err
		}
		if hook := n.f.spec.HostConfig; hook != nil {
			hook(n.Name, cfg)
		}
	default:
		return nil
	}
	if edit != nil {
		edit(cfg)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("topo: %s configuration: %w", n.Name, err)
	}
	return os.WriteFile(c.cfgPath, b, 0o600)
}

// Rewrite writes the node's configuration file again, changed by edit
// (if set) after the Spec's hooks, for the next Start.
func (c *daemonConfig) Rewrite(edit func(cfg map[string]any)) error { return c.writeConfigEdited(edit) }

func (c *daemonConfig) reflectorConfig() map[string]any {
	n := c.n
	var clients, peers []any
	for _, sw := range n.f.Nodes(KindSwitch) {
		clients = append(clients, map[string]any{"address": sw.Addr.String()})
	}
	for _, r := range n.f.Nodes(KindReflector) {
		if r != n {
			peers = append(peers, map[string]any{"address": r.Addr.String()})
		}
	}
	cfg := map[string]any{
		"log":            map[string]any{"level": "debug"},
		"metrics_listen": inofdMetrics,
		"state_dir":      filepath.Join(n.dir, "state"),
		"asn":            n.f.spec.ASN,
		"router_id":      n.Addr.String(),
		"local_address":  n.Addr.String(),
		"clients":        clients,
	}
	if len(peers) > 0 {
		cfg["cluster_id"] = ClusterID
		cfg["reflectors"] = peers
	}
	if ok, err := HasReflectorAPI(); err == nil && ok {
		cfg["api"] = map[string]any{"socket": n.APISocket()}
	}
	c.argv = []string{"inofd", "--role", "reflector", "--config", c.cfgPath}
	return cfg
}

func (c *daemonConfig) switchConfig() map[string]any {
	n := c.n
	var refl []any
	for _, r := range n.f.Nodes(KindReflector) {
		refl = append(refl, map[string]any{"address": r.Addr.String()})
	}
	var ports []any
	for _, l := range n.Links {
		ports = append(ports, l.Port)
	}
	if len(ports) == 0 {
		// The agent wants at least one access port.
		if !c.dummyPort {
			n.NS.MustIP("link", "add", "p0", "type", "dummy")
			n.NS.MustIP("link", "set", "p0", "up")
			c.dummyPort = true
		}
		ports = append(ports, "p0")
	}
	c.argv = []string{"inofd", "--role", "switch", "--config", c.cfgPath}
	metrics := inofdMetrics
	if c.box != nil {
		metrics = boxSwitchMetrics
	}
	cfg := map[string]any{
		"log":              map[string]any{"level": "debug"},
		"metrics_listen":   metrics,
		"state_dir":        filepath.Join(n.dir, "state"),
		"router_id":        n.Addr.String(),
		"asn":              n.f.spec.ASN,
		"local_address":    n.Addr.String(),
		"reflectors":       refl,
		"bfd":              map[string]any{"enabled": true, "desired_min_tx": "100ms", "required_min_rx": "100ms", "detect_mult": 3},
		"graceful_restart": map[string]any{"enabled": true, "restart_time": "120s"},
		"access_ports":     ports,
		// Read-only in a fabric; in direct mode the zoning's API.
		"api": map[string]any{"socket": n.APISocket()},
	}
	if len(refl) == 0 {
		delete(cfg, "reflectors") // direct mode
	}
	return cfg
}

func (c *daemonConfig) hostConfig() (map[string]any, error) {
	n := c.n
	nvme, err := writeFakeNVMe(n.dir)
	if err != nil {
		return nil, fmt.Errorf("topo: %s: %w", n.Name, err)
	}
	nvmeDir := filepath.Join(n.dir, "nvme")
	if err := os.MkdirAll(nvmeDir, 0o755); err != nil {
		return nil, err
	}
	c.env = []string{"FAKE_NVME_DIR=" + nvmeDir}
	ifs := c.hostInterfaces()
	c.argv = []string{"inof-host", "--config", c.cfgPath}
	return map[string]any{
		"log":            map[string]any{"level": "debug"},
		"metrics_listen": hostMetrics,
		"state_file":     filepath.Join(n.dir, "state.json"),
		"host_nqn":       c.HostNQN(),
		"nvme":           map[string]any{"path": nvme},
		"interfaces":     ifs,
	}, nil
}

// HostNQN is the host NQN a device's inof-host uses.
func (c *daemonConfig) HostNQN() string {
	n := c.n
	for _, d := range n.f.spec.Devices {
		if d.Name == n.Name {
			return DeviceHostNQN(d)
		}
	}
	return DeviceHostNQN(Device{Name: n.Name})
}

// ConfigPath is the node's generated configuration file.
func (c *daemonConfig) ConfigPath() string { return c.cfgPath }

// hostInterfaces is inof-host's interfaces list for a device's NICs.
func (c *daemonConfig) hostInterfaces() []any {
	n := c.n
	var ifs []any
	for _, l := range n.Links {
		i := map[string]any{"name": l.IfName, "role": l.Spec.Role, "protocol": l.Spec.Protocol,
			"address": l.Addr().String()}
		if l.Spec.Port != 0 {
			i["port"] = l.Spec.Port
		}
		if l.Spec.NQN != "" {
			i["nqn"] = l.Spec.NQN
		}
		ifs = append(ifs, i)
	}
	return ifs
}
