package switchagent

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/app/zoneadmin"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// Options is the whole configuration of inofd --role switch.
type Options struct {
	// Common are the daemon's log, runtime, metrics listener and state
	// directory; the state directory holds the state file (switch.state):
	// the published records, what each host was told and the zone
	// configuration, across restarts.
	daemon.Common `yaml:",inline"`
	// RouterID identifies this switch (BGP router-id, key of its records).
	RouterID string `yaml:"router_id"`
	ASN      uint32 `yaml:"asn"`
	// LocalAddress is the source of the BGP and BFD sessions; empty lets
	// the kernel choose (BFD then needs it set).
	LocalAddress string `yaml:"local_address"`
	// Reflectors are the fabric's route reflectors. None is direct mode:
	// the switch runs alone, without BGP, and keeps the zone store itself
	// (docs/operations.md, "Direct mode").
	Reflectors []ReflectorOptions `yaml:"reflectors"`
	// HistorySize bounds the zone store's journal in direct mode (as a
	// reflector's history_size).
	HistorySize int `yaml:"history_size"`
	// Security is the TCP-MD5 key of every reflector session (empty:
	// none) and GTSM on them.
	peering.Security `yaml:",inline"`
	// BFD runs toward every reflector.
	BFD             peering.BFD             `yaml:"bfd"`
	GracefulRestart peering.GracefulRestart `yaml:"graceful_restart"`
	// AccessPorts are the interfaces hosts and targets register on; frames
	// from any other port are ignored.
	AccessPorts []string `yaml:"access_ports"`
	// LegacyV0Ports are access ports whose hosts run nvme-snsd's old
	// develop branch (notification header version 0).
	LegacyV0Ports []string `yaml:"legacy_v0_ports"`
	// HoldDown is how long a leaving device's inactive record stays
	// published before it is withdrawn.
	HoldDown time.Duration `yaml:"hold_down"`
	// API serves the read-only admin API (zones in force, devices,
	// sessions, BFD, the lossless profile); the socket is off by default.
	API api.Options `yaml:"api"`
	// Settle is how long after the first reflector session comes up the
	// agent waits before comparing what hosts were told with the fabric
	// (after a restart, the fabric's records need that long to arrive).
	Settle time.Duration `yaml:"settle"`
	// ConfigHold bounds how long after the first reflector session comes up
	// the zone configuration received is held (not put in force) while the
	// agent waits for the reflector's End-of-RIB (docs/switch-agent.md,
	// "Configuration on return"); 0 puts every record in force at once.
	ConfigHold time.Duration `yaml:"config_hold"`
	// Discovery is the NVMe/TCP discovery controller hosts reach with
	// `nvme discover` (docs/discovery.md); off by default.
	Discovery discovery.Options `yaml:"discovery"`
	// MaxDevices bounds the device records the agent holds (one per
	// switch and address); further records are refused, counted and
	// logged at a rate limit.
	MaxDevices int `yaml:"max_devices"`
	// AccessLimits bound what the hosts on one access port may send
	// (docs/switch-agent.md, "Access port limits").
	AccessLimits AccessLimits `yaml:"access_limits"`
	// SetInterval is the least time between two UPDATEs of one device set
	// shard when the fabric publishes in sets (docs/records.md, "Group
	// commit"): the first change of a quiet shard goes out at once, the
	// changes that follow within the interval go out together at its end.
	// 0 sends every change as soon as the previous UPDATE was handed to BGP.
	SetInterval time.Duration `yaml:"set_interval"`
	// PortHealth watches the access ports for PFC storms and receive
	// errors (docs/switch-agent.md, "Port health"); off by default.
	PortHealth PortHealthOptions `yaml:"port_health"`
}

// DefaultSetInterval is set_interval's default: a shard that changes
// constantly sends at most 50 UPDATEs a second, each with every change
// since the last, while a lone change (a link down) goes out at once.
const DefaultSetInterval = 20 * time.Millisecond

// AccessLimits are the per-port rates of LLDP registrations and zone
// queries beyond which frames are dropped and counted (token buckets: a
// rate per second and a burst).
type AccessLimits struct {
	RegistrationsPerSecond int `yaml:"registrations_per_second"`
	RegistrationBurst      int `yaml:"registration_burst"`
	QueriesPerSecond       int `yaml:"queries_per_second"`
	QueryBurst             int `yaml:"query_burst"`
}

// portLimits is the l2proto form of the limits.
func (l AccessLimits) portLimits() l2proto.PortLimits {
	return l2proto.PortLimits{Registrations: l2proto.Rate{PerSecond: l.RegistrationsPerSecond, Burst: l.RegistrationBurst},
		Queries: l2proto.Rate{PerSecond: l.QueriesPerSecond, Burst: l.QueryBurst}}
}

// ReflectorOptions is one route reflector.
type ReflectorOptions struct {
	Address string `yaml:"address"`
	Port    uint16 `yaml:"port"` // 0 means 179
}

// DefaultOptions returns the defaults every key starts from.
func DefaultOptions() Options {
	return Options{
		Common:          daemon.DefaultCommon("127.0.0.1:9466", "/var/lib/inofd-switch"),
		BFD:             peering.DefaultBFD(),
		GracefulRestart: peering.DefaultGracefulRestart(),
		HoldDown:        DefaultHoldDown,
		Settle:          10 * time.Second,
		ConfigHold:      5 * time.Second,
		Discovery:       discovery.DefaultOptions(),
		MaxDevices:      table.DefaultMaxDevices,
		SetInterval:     DefaultSetInterval,
		PortHealth:      DefaultPortHealthOptions(),
		HistorySize:     zones.DefaultHistorySize,
		AccessLimits: AccessLimits{
			RegistrationsPerSecond: l2proto.DefaultLimits.Registrations.PerSecond, RegistrationBurst: l2proto.DefaultLimits.Registrations.Burst,
			QueriesPerSecond: l2proto.DefaultLimits.Queries.PerSecond, QueryBurst: l2proto.DefaultLimits.Queries.Burst},
	}
}

// Direct reports whether the options describe direct mode: no reflectors,
// no BGP, the zone store kept by the switch itself.
func (o *Options) Direct() bool { return len(o.Reflectors) == 0 }

// Validate reports every problem in o, joined.
func (o *Options) Validate() error {
	errs := []error{o.Common.Validate()}
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, l := range []struct {
		key string
		v   int
	}{{"registrations_per_second", o.AccessLimits.RegistrationsPerSecond}, {"registration_burst", o.AccessLimits.RegistrationBurst},
		{"queries_per_second", o.AccessLimits.QueriesPerSecond}, {"query_burst", o.AccessLimits.QueryBurst}} {
		if l.v <= 0 {
			add("access_limits.%s %d: must be positive", l.key, l.v)
		}
	}
	if a, err := netip.ParseAddr(o.RouterID); err != nil || !a.Is4() || a.IsUnspecified() {
		add("router_id %q: want an IPv4 address, not 0.0.0.0", o.RouterID)
	}
	if o.ASN == 0 && !o.Direct() {
		add("asn: must be set")
	}
	local, err := netip.ParseAddr(o.LocalAddress)
	if o.LocalAddress != "" && err != nil {
		add("local_address %q: not an IP address", o.LocalAddress)
	}
	if o.BFD.Enabled && !local.IsValid() && !o.Direct() {
		add("local_address: must be set when bfd.enabled is true")
	}
	if o.Direct() {
		// Direct mode has no session these could protect: a key or GTSM
		// set here means reflectors were meant and left out.
		if o.Password != "" {
			add("password: set, but reflectors lists none (direct mode has no BGP session); list the reflectors or drop the key")
		}
		if o.TTLSecurity {
			add("ttl_security: true, but reflectors lists none (direct mode has no BGP session); list the reflectors or drop the key")
		}
	}
	if o.HistorySize < 1 || o.HistorySize > 10000 {
		add("history_size %d: want 1 to 10000", o.HistorySize)
	}
	seen := map[netip.Addr]bool{}
	for i, r := range o.Reflectors {
		a, err := netip.ParseAddr(r.Address)
		switch {
		case err != nil:
			add("reflectors[%d].address %q: not an IP address", i, r.Address)
		case seen[a]:
			add("reflectors[%d].address %s: listed twice", i, a)
		}
		seen[a] = true
	}
	errs = append(errs, o.Security.Validate(), o.BFD.Validate("bfd"), o.GracefulRestart.Validate())
	if len(o.AccessPorts) == 0 {
		add("access_ports: at least one")
	}
	for i, p := range o.AccessPorts {
		if p == "" || len(p) > 15 {
			add("access_ports[%d] %q: not an interface name", i, p)
		}
		if slices.Index(o.AccessPorts, p) != i {
			add("access_ports[%d] %q: listed twice", i, p)
		}
	}
	for _, p := range o.LegacyV0Ports {
		if !slices.Contains(o.AccessPorts, p) {
			add("legacy_v0_ports: %q is not an access port", p)
		}
	}
	if o.HoldDown < 0 {
		add("hold_down %s: must not be negative", o.HoldDown)
	}
	if err := o.API.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.API.ConsoleListen != "" {
		add("api.console_listen: the web console is a reflector's (a switch serves none)")
	}
	if o.Settle < 0 {
		add("settle %s: must not be negative", o.Settle)
	}
	if o.ConfigHold < 0 {
		add("config_hold %s: must not be negative", o.ConfigHold)
	}
	if o.MaxDevices <= 0 {
		add("max_devices %d: must be positive", o.MaxDevices)
	}
	if o.SetInterval < 0 || o.SetInterval > time.Second {
		add("set_interval %s: want 0 to 1s", o.SetInterval)
	}
	if err := o.Discovery.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.PortHealth.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// storeFile is the path of the zone store (direct mode).
func (o *Options) storeFile() string { return filepath.Join(o.StateDir, zoneadmin.StoreFile) }

// stateFile is the path of the state file.
func (o *Options) stateFile() string { return filepath.Join(o.StateDir, "switch.state") }

// toldJournalFile is where the notices since the last save are journalled.
func (o *Options) toldJournalFile() string { return filepath.Join(o.StateDir, "switch.told") }

// routerID returns the router-id as a number (valid after Validate).
func (o *Options) routerID() inof.RouterID {
	return inof.MustParseRouterID(o.RouterID)
}

// RenamedKeys implements config.Renamer: bfd.min_tx, bfd.min_rx and
// bfd.multiplier are the old names of bfd.desired_min_tx,
// bfd.required_min_rx and bfd.detect_mult.
func (o *Options) RenamedKeys() map[string]string { return peering.RenamedKeys() }
