package reflector

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/zones"
)

// Options is the whole configuration of inofd --role reflector
// (docs/reflector.md lists every key with its default).
type Options struct {
	// Common are the daemon's log, runtime, metrics listener and state
	// directory; the state directory holds the zone store (zones.db), the
	// restart marker (reflector.state) and the settings' state files.
	daemon.Common `yaml:",inline"`
	// ASN is the fabric's AS number (iBGP: every switch uses it too).
	ASN uint32 `yaml:"asn"`
	// RouterID is this reflector's BGP identifier (IPv4); it also names
	// the copies of the configuration this reflector originates.
	RouterID string `yaml:"router_id"`
	// ClusterID is shared by the reflectors of one fabric (RFC 4456);
	// required when Reflectors is set, otherwise it defaults to RouterID.
	ClusterID string `yaml:"cluster_id"`
	// LocalAddress is this reflector's address on its sessions: the source
	// of BFD and of connections to peer reflectors.
	LocalAddress string        `yaml:"local_address"`
	Listen       ListenOptions `yaml:"listen"`
	// HoldTime and Keepalive of every session (whole seconds).
	HoldTime  time.Duration `yaml:"hold_time"`
	Keepalive time.Duration `yaml:"keepalive"`
	// Security is the TCP-MD5 key of every session (a neighbor's own
	// password overrides it) and GTSM on the listener and every session
	// (every neighbor must then send TTL 255).
	peering.Security `yaml:",inline"`
	GracefulRestart  peering.GracefulRestart `yaml:"graceful_restart"`
	// BFD is the BFD default for clients.
	BFD peering.BFD `yaml:"bfd"`
	// PruneInterval is how often tombstones past their lifetime (7 days)
	// are forgotten and withdrawn.
	PruneInterval time.Duration `yaml:"prune_interval"`
	// Clients are the switch agents (route-reflector clients).
	Clients []ClientOptions `yaml:"clients"`
	// Reflectors are the other reflectors of the fabric.
	Reflectors []PeerOptions `yaml:"reflectors"`
	// API is where the admin API (inofctl) is served.
	API api.Options `yaml:"api"`
	// Trust says what happens to a client that publishes what it does
	// not own (docs/security.md).
	Trust TrustOptions `yaml:"trust"`
	// MaxDevices bounds the device records the reflector's fabric view
	// holds (one per switch and address); further records are refused,
	// counted and logged at a rate limit. GoBGP keeps them all the same.
	MaxDevices int `yaml:"max_devices"`
	// HistorySize is how many journal entries (zoning commits, lossless
	// profile changes, restores: the history and the audit trail) the store
	// keeps and replicates; the oldest beyond it are dropped everywhere.
	HistorySize int `yaml:"history_size"`
}

// ListenOptions say where BGP sessions are accepted.
type ListenOptions struct {
	// Addresses to listen on; empty means every address.
	Addresses []string `yaml:"addresses"`
	Port      int      `yaml:"port"`
}

// ClientOptions is one switch agent.
type ClientOptions struct {
	Address string `yaml:"address"`
	// Password overrides the global MD5 password (empty: the global one).
	Password string `yaml:"password"`
	// LocalAddress overrides the global local_address for this client.
	LocalAddress string `yaml:"local_address"`
	// NoDefaultRT withholds the default route-target membership (for
	// gobgpd 3.10, which crashes on it).
	NoDefaultRT bool             `yaml:"no_default_rt"`
	BFD         ClientBFDOptions `yaml:"bfd"`
}

// ClientBFDOptions override the BFD defaults for one client; zero values
// take the global ones.
type ClientBFDOptions struct {
	Disabled      bool          `yaml:"disabled"`
	DesiredMinTx  time.Duration `yaml:"desired_min_tx"`
	RequiredMinRx time.Duration `yaml:"required_min_rx"`
	DetectMult    uint8         `yaml:"detect_mult"`
}

// PeerOptions is another reflector of the fabric.
type PeerOptions struct {
	Address  string `yaml:"address"`
	Port     int    `yaml:"port"`     // its BGP port; 0 means 179
	Password string `yaml:"password"` // overrides the global password
}

// DefaultOptions returns the defaults every key starts from. ASN and
// RouterID have none.
func DefaultOptions() Options {
	return Options{
		Common:          daemon.DefaultCommon("127.0.0.1:9465", "/var/lib/inofd-reflector"),
		HistorySize:     zones.DefaultHistorySize,
		Listen:          ListenOptions{Port: 179},
		HoldTime:        9 * time.Second,
		Keepalive:       3 * time.Second,
		GracefulRestart: peering.DefaultGracefulRestart(),
		BFD:             peering.DefaultBFD(),
		PruneInterval:   time.Hour,
		API:             api.Options{Socket: api.DefaultSocket},
		MaxDevices:      table.DefaultMaxDevices,
		Trust:           TrustOptions{Quarantine: DefaultQuarantine},
	}
}

// Validate reports every problem in o, joined.
func (o *Options) Validate() error {
	errs := []error{o.Common.Validate()}
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := o.API.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.ASN == 0 {
		add("asn: must be set")
	}
	rid := ipv4(o.RouterID, "router_id", true, add)
	ipv4(o.ClusterID, "cluster_id", false, add)
	if o.ClusterID == "" && len(o.Reflectors) > 0 {
		add("cluster_id: must be set with reflectors (the reflectors of one fabric share it)")
	}
	addr(o.LocalAddress, "local_address", add)
	for i, a := range o.Listen.Addresses {
		addr(a, fmt.Sprintf("listen.addresses[%d]", i), add)
	}
	if o.Listen.Port < 1 || o.Listen.Port > 65535 {
		add("listen.port %d: want 1..65535", o.Listen.Port)
	}
	if o.HoldTime < 3*time.Second || o.HoldTime > 65535*time.Second || o.HoldTime%time.Second != 0 {
		add("hold_time %s: want whole seconds, at least 3s", o.HoldTime)
	}
	if o.Keepalive < time.Second || o.Keepalive%time.Second != 0 || o.Keepalive >= o.HoldTime {
		add("keepalive %s: want whole seconds, at least 1s and below hold_time", o.Keepalive)
	}
	errs = append(errs, o.Security.Validate(), o.GracefulRestart.Validate(), o.BFD.Validate("bfd"))
	if o.PruneInterval <= 0 {
		add("prune_interval %s: must be positive", o.PruneInterval)
	}
	if o.MaxDevices <= 0 {
		add("max_devices %d: must be positive", o.MaxDevices)
	}
	if o.HistorySize < 1 || o.HistorySize > 10000 {
		add("history_size %d: want 1 to 10000", o.HistorySize)
	}
	if o.Trust.Quarantine < 0 {
		add("trust.quarantine %s: must not be negative (0 disables quarantine)", o.Trust.Quarantine)
	}
	seen := map[netip.Addr]string{}
	dup := func(a netip.Addr, p string) {
		if !a.IsValid() {
			return
		}
		if prev, ok := seen[a]; ok {
			add("%s %s: already listed as %s", p, a, prev)
		} else if a == rid {
			add("%s %s: is this reflector's router_id", p, a)
		}
		seen[a] = p
	}
	for i, c := range o.Clients {
		p := fmt.Sprintf("clients[%d]", i)
		dup(addr(c.Address, p+".address", add), p+".address")
		if c.Address == "" {
			add("%s.address: must be set", p)
		}
		errs = append(errs, peering.Password(p+".password", c.Password))
		addr(c.LocalAddress, p+".local_address", add)
		if o.BFD.Enabled && !c.BFD.Disabled {
			errs = append(errs, peering.Timers(p+".bfd", c.BFD.DesiredMinTx, c.BFD.RequiredMinRx, c.BFD.DetectMult, true))
			if c.LocalAddress == "" && o.LocalAddress == "" {
				add("%s: BFD needs local_address (global or the client's), or set bfd.disabled", p)
			}
		}
	}
	for i, r := range o.Reflectors {
		p := fmt.Sprintf("reflectors[%d]", i)
		dup(addr(r.Address, p+".address", add), p+".address")
		if r.Address == "" {
			add("%s.address: must be set", p)
		}
		if r.Port < 0 || r.Port > 65535 {
			add("%s.port %d: want 1..65535 (0: 179)", p, r.Port)
		}
		errs = append(errs, peering.Password(p+".password", r.Password))
	}
	return errors.Join(errs...)
}

// ipv4 parses an IPv4 key; an empty value is an error only if required.
func ipv4(s, key string, required bool, add func(string, ...any)) netip.Addr {
	if s == "" {
		if required {
			add("%s: must be set", key)
		}
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() || a.IsUnspecified() {
		add("%s %q: want a non-zero IPv4 address", key, s)
		return netip.Addr{}
	}
	return a
}

// addr parses an optional unicast address key.
func addr(s, key string, add func(string, ...any)) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		add("%s %q: not an IP address", key, s)
		return netip.Addr{}
	}
	if a.IsUnspecified() || a.IsMulticast() || a.Zone() != "" {
		add("%s %s: want a unicast address without zone", key, a)
		return netip.Addr{}
	}
	return a.Unmap()
}

// StorePath is the zone store file in the state directory.
func (o *Options) StorePath() string { return filepath.Join(o.StateDir, "zones.db") }

// StatePath is the restart marker in the state directory.
func (o *Options) StatePath() string { return filepath.Join(o.StateDir, "reflector.state") }

// speakerOptions maps the options to the speaker's; o must be valid.
func (o *Options) speakerOptions(restarting bool) bgp.Options {
	so := bgp.Options{
		Role:            bgp.RoleReflector,
		ASN:             o.ASN,
		RouterID:        netip.MustParseAddr(o.RouterID),
		ListenPort:      int32(o.Listen.Port),
		TTLSecurity:     o.TTLSecurity,
		GracefulRestart: o.GracefulRestart.Speaker(restarting),
		BFDConfirm:      o.BFD.Confirmation(),
	}
	if o.ClusterID != "" {
		so.ClusterID = netip.MustParseAddr(o.ClusterID)
	}
	for _, a := range o.Listen.Addresses {
		so.ListenAddresses = append(so.ListenAddresses, netip.MustParseAddr(a).Unmap())
	}
	return so
}

// neighbors maps the options to the speaker's neighbors, peer reflectors
// first; o must be valid.
func (o *Options) neighbors() []bgp.Neighbor {
	var local netip.Addr
	if o.LocalAddress != "" {
		local = netip.MustParseAddr(o.LocalAddress).Unmap()
	}
	pw := func(own string) string {
		if own != "" {
			return own
		}
		return o.Password
	}
	base := func(a string) bgp.Neighbor {
		return bgp.Neighbor{Address: netip.MustParseAddr(a).Unmap(), LocalAddress: local,
			TTLSecurity: o.TTLSecurity, HoldTime: o.HoldTime, Keepalive: o.Keepalive}
	}
	var out []bgp.Neighbor
	for _, r := range o.Reflectors {
		n := base(r.Address)
		n.Port, n.PeerReflector, n.Password = uint16(r.Port), true, pw(r.Password)
		// One side connects, the other waits: when both connected, each
		// refused the other's connection while in its idle hold after a
		// restart, in step, for minutes (found by the soak). The higher
		// address waits.
		n.Passive = local.IsValid() && n.Address.Less(local)
		out = append(out, n)
	}
	for _, c := range o.Clients {
		n := base(c.Address)
		n.Passive, n.RRClient, n.NoDefaultRT, n.Password = true, true, c.NoDefaultRT, pw(c.Password)
		if c.LocalAddress != "" {
			n.LocalAddress = netip.MustParseAddr(c.LocalAddress).Unmap()
		}
		if o.BFD.Enabled && !c.BFD.Disabled {
			n.BFD = &bgp.NeighborBFD{DesiredMinTx: or(c.BFD.DesiredMinTx, o.BFD.DesiredMinTx),
				RequiredMinRx: or(c.BFD.RequiredMinRx, o.BFD.RequiredMinRx), DetectMult: or(c.BFD.DetectMult, o.BFD.DetectMult)}
		}
		out = append(out, n)
	}
	return out
}

// or returns v, or def when v is zero.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// usesBFD reports whether any neighbor runs BFD.
func (o *Options) usesBFD() bool {
	for _, n := range o.neighbors() {
		if n.BFD != nil {
			return true
		}
	}
	return false
}

// RenamedKeys implements config.Renamer: the switch agent's old spelling
// of the BFD timers is accepted here too, with a warning.
func (o *Options) RenamedKeys() map[string]string { return peering.RenamedKeys() }
