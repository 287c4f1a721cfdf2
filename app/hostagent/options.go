package hostagent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/inof"
)

// DisconnectPolicy says which inactive notifications remove a controller.
type DisconnectPolicy string

// Disconnect policies.
const (
	// DisconnectForced removes the controller for reasons 4, 5 and 6 (zone
	// change, IP change, LLDP age-out) and leaves the others to multipath
	// and keep-alive, as nvme-snsd does.
	DisconnectForced DisconnectPolicy = "forced"
	DisconnectAll    DisconnectPolicy = "all"   // every inactive removes it
	DisconnectNever  DisconnectPolicy = "never" // nothing removes it
)

// FailoverMethod is how a path is failed over when its link died.
type FailoverMethod string

// Failover methods (docs/host-agent.md, "Multipath failover").
const (
	// FailoverReset writes the controller's sysfs reset_controller: the
	// kernel tears the path's queues down and requeues their in-flight
	// I/O at once (on a live sibling, or in the multipath head).
	FailoverReset FailoverMethod = "reset"
	// FailoverAbort aborts the path's TCP connections (inet_diag socket
	// destroy); nvme-tcp starts error recovery as the socket closes. TCP
	// only; RDMA paths are reset instead.
	FailoverAbort FailoverMethod = "abort"
	FailoverBoth  FailoverMethod = "both" // abort, then reset
	FailoverNone  FailoverMethod = "none" // leave it to keep-alive (nvme-snsd's behaviour)
)

// LastPathPolicy says what a link-down does to a path without a live
// sibling.
type LastPathPolicy string

// Last-path policies.
const (
	// LastPathWait fails the path over like any other: the controller
	// leaves live at once and I/O waits in the multipath head until a path
	// is back (or ctrl_loss_tmo removes the controller).
	LastPathWait LastPathPolicy = "wait"
	// LastPathFailFast does the same and sets each new controller's
	// fast_io_fail_tmo to 0, so I/O fails at once while no path is live
	// (for applications with their own redundancy).
	LastPathFailFast LastPathPolicy = "fail-fast"
	// LastPathKeep leaves the last path to keep-alive.
	LastPathKeep LastPathPolicy = "keep"
)

// CQTPolicy says what a target's Command Quiesce Time does to failing
// its paths over at once.
type CQTPolicy string

// CQT policies (docs/host-agent.md, "Writes and failing over at once").
const (
	// CQTRespect leaves the paths of a controller that reports a CQT to
	// keep-alive: the agent never moves its in-flight commands to another
	// path before the target has had its keep-alive timeout to notice the
	// loss (the kernels measured here retry at once once a path fails and
	// do not wait the CQT themselves).
	CQTRespect CQTPolicy = "respect"
	// CQTIgnore fails such paths over at once like any other (for a
	// target whose backend is known to finish a received write long
	// before a retry can complete).
	CQTIgnore CQTPolicy = "ignore"
)

// FailoverOptions configure multipath failover on notifications.
type FailoverOptions struct {
	Method   FailoverMethod `yaml:"method"`
	LastPath LastPathPolicy `yaml:"last_path"`
	CQT      CQTPolicy      `yaml:"cqt"`
}

// Options is the whole configuration of inof-host.
type Options struct {
	Log daemon.LogOptions `yaml:"log"`
	// MetricsListen is the address of /metrics and /healthz; empty disables.
	MetricsListen string `yaml:"metrics_listen"`
	// StateFile remembers the controllers this agent created.
	StateFile string `yaml:"state_file"`
	// HostNQN is the host NQN for connects; empty reads HostNQNFile.
	HostNQN     string `yaml:"host_nqn"`
	HostNQNFile string `yaml:"host_nqn_file"`
	// DisconnectOn: forced, all or never.
	DisconnectOn DisconnectPolicy `yaml:"disconnect_on"`
	// DisconnectOnExit removes this agent's controllers on SIGTERM.
	DisconnectOnExit bool `yaml:"disconnect_on_exit"`
	// RestrainTime delays disconnects; an active for the same target within
	// it cancels the disconnect. 0 disconnects at once.
	RestrainTime time.Duration `yaml:"restrain_time"`
	// ConnectRetry is how long after a failed connect it is tried again
	// (until a newer notification for that target arrives).
	ConnectRetry time.Duration `yaml:"connect_retry"`
	// RegistrationInterval is the LLDPDU period, RegistrationTTL its TTL.
	RegistrationInterval time.Duration `yaml:"registration_interval"`
	RegistrationTTL      time.Duration `yaml:"registration_ttl"`
	// CarrierPoll is how often /sys/class/net/IF/carrier is read.
	CarrierPoll time.Duration `yaml:"carrier_poll"`
	NVMe        NVMeOptions   `yaml:"nvme"`
	// Failover fails a dead path over the moment the fabric says so.
	Failover   FailoverOptions    `yaml:"failover"`
	Interfaces []InterfaceOptions `yaml:"interfaces"`
	// Lossless follows the fabric's lossless profile (off by default).
	Lossless LosslessOptions `yaml:"lossless"`
}

// NVMeOptions configures the nvme-cli calls.
type NVMeOptions struct {
	Path string `yaml:"path"` // the nvme binary
	// CommandTimeout bounds each nvme invocation.
	CommandTimeout time.Duration `yaml:"command_timeout"`
	// KeepAliveTmo, ReconnectDelay and CtrlLossTmo are nvme connect's -k, -c
	// and -l in seconds; 0 leaves the option out (the kernel default).
	KeepAliveTmo   int `yaml:"keep_alive_tmo"`
	ReconnectDelay int `yaml:"reconnect_delay"`
	CtrlLossTmo    int `yaml:"ctrl_loss_tmo"`
	// DiscoveryPort is the discovery controller's port when a notification
	// carries no NQN; 0 means 8009 for TCP and the target's port for RDMA.
	DiscoveryPort uint16 `yaml:"discovery_port"`
	// Auth are DH-HMAC-CHAP secrets per subsystem, passed to nvme connect
	// for that subsystem only (none by default).
	Auth []NVMeAuth `yaml:"auth"`
}

// InterfaceOptions is one registered interface.
type InterfaceOptions struct {
	Name     string `yaml:"name"`
	Role     string `yaml:"role"`     // host, target or both
	Protocol string `yaml:"protocol"` // rdma or tcp
	// Address is the registered IP; empty means the interface's first
	// global IPv4 address at start.
	Address string `yaml:"address"`
	Port    uint16 `yaml:"port"` // NVMe-oF service port announced (targets); 0 = default
	NQN     string `yaml:"nqn"`  // NQN announced; for targets the subsystem NQN; hosts default to the host NQN
}

// DefaultOptions returns the defaults every key starts from.
func DefaultOptions() Options {
	return Options{
		Log:                  daemon.DefaultLogOptions(),
		MetricsListen:        "127.0.0.1:9464",
		StateFile:            "/var/lib/inof-host/state.json",
		HostNQNFile:          "/etc/nvme/hostnqn",
		DisconnectOn:         DisconnectForced,
		RestrainTime:         5 * time.Second,
		ConnectRetry:         60 * time.Second,
		RegistrationInterval: 30 * time.Second,
		RegistrationTTL:      120 * time.Second,
		CarrierPoll:          time.Second,
		NVMe:                 NVMeOptions{Path: "nvme", CommandTimeout: 30 * time.Second, CtrlLossTmo: 1800},
		Failover:             FailoverOptions{Method: FailoverBoth, LastPath: LastPathWait, CQT: CQTRespect},
		Lossless:             LosslessOptions{PortClass: "server", Interval: time.Minute, DCBPath: "dcb"},
	}
}

// maxNQN is NVMe's NQN limit (223 bytes).
const maxNQN = 223

// Validate reports every problem in o, joined.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if err := o.Log.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch o.DisconnectOn {
	case DisconnectForced, DisconnectAll, DisconnectNever:
	default:
		add("disconnect_on %q: want forced, all or never", o.DisconnectOn)
	}
	if o.StateFile == "" {
		add("state_file: must be set")
	}
	if len(o.HostNQN) > maxNQN {
		add("host_nqn: %d bytes, at most %d", len(o.HostNQN), maxNQN)
	}
	if o.HostNQN == "" && o.HostNQNFile == "" && o.hasHost() {
		add("host_nqn or host_nqn_file: one must be set for a host interface")
	}
	if o.RestrainTime < 0 {
		add("restrain_time %s: must not be negative", o.RestrainTime)
	}
	if o.ConnectRetry <= 0 {
		add("connect_retry %s: must be positive", o.ConnectRetry)
	}
	if o.RegistrationInterval <= 0 {
		add("registration_interval %s: must be positive", o.RegistrationInterval)
	}
	if o.RegistrationTTL < time.Second || o.RegistrationTTL > 65535*time.Second {
		add("registration_ttl %s: must be 1s..65535s", o.RegistrationTTL)
	} else if o.RegistrationTTL <= o.RegistrationInterval {
		add("registration_ttl %s: must exceed registration_interval %s", o.RegistrationTTL, o.RegistrationInterval)
	}
	if o.CarrierPoll <= 0 {
		add("carrier_poll %s: must be positive", o.CarrierPoll)
	}
	if o.NVMe.Path == "" {
		add("nvme.path: must be set")
	}
	if o.NVMe.CommandTimeout <= 0 {
		add("nvme.command_timeout %s: must be positive", o.NVMe.CommandTimeout)
	}
	for i, a := range o.NVMe.Auth {
		errs = append(errs, a.validate(i)...)
	}
	for k, v := range map[string]int{"keep_alive_tmo": o.NVMe.KeepAliveTmo, "reconnect_delay": o.NVMe.ReconnectDelay, "ctrl_loss_tmo": o.NVMe.CtrlLossTmo} {
		if v < 0 {
			add("nvme.%s %d: must not be negative", k, v)
		}
	}
	switch o.Failover.Method {
	case FailoverReset, FailoverAbort, FailoverBoth, FailoverNone:
	default:
		add("failover.method %q: want reset, abort, both or none", o.Failover.Method)
	}
	switch o.Failover.LastPath {
	case LastPathWait, LastPathFailFast, LastPathKeep:
	default:
		add("failover.last_path %q: want wait, fail-fast or keep", o.Failover.LastPath)
	}
	switch o.Failover.CQT {
	case CQTRespect, CQTIgnore:
	default:
		add("failover.cqt %q: want respect or ignore", o.Failover.CQT)
	}
	o.Lossless.validate(add)
	if len(o.Interfaces) == 0 {
		add("interfaces: at least one is needed")
	}
	seen := map[string]bool{}
	for i, it := range o.Interfaces {
		p := fmt.Sprintf("interfaces[%d]", i)
		if it.Name == "" {
			add("%s.name: must be set", p)
		} else if seen[it.Name] {
			add("%s.name %q: listed twice", p, it.Name)
		}
		seen[it.Name] = true
		if _, err := ParseRole(it.Role); err != nil {
			add("%s.role: %w", p, err)
		}
		if _, err := ParseProtocol(it.Protocol); err != nil {
			add("%s.protocol: %w", p, err)
		}
		if it.Address != "" {
			a, err := netip.ParseAddr(it.Address)
			switch {
			case err != nil:
				add("%s.address %q: not an IP address", p, it.Address)
			case a.IsUnspecified() || a.IsMulticast() || a.Zone() != "":
				add("%s.address %s: must be a unicast address without zone", p, a)
			}
		}
		if len(it.NQN) > maxNQN {
			add("%s.nqn: %d bytes, at most %d", p, len(it.NQN), maxNQN)
		}
	}
	return errors.Join(errs...)
}

func (o *Options) hasHost() bool {
	for _, it := range o.Interfaces {
		if r, err := ParseRole(it.Role); err == nil && r.IsHost() {
			return true
		}
	}
	return false
}

// ParseRole reads host, target or both.
func ParseRole(s string) (inof.Role, error) {
	switch strings.ToLower(s) {
	case "host":
		return inof.RoleHost, nil
	case "target":
		return inof.RoleTarget, nil
	case "both":
		return inof.RoleBoth, nil
	}
	return 0, fmt.Errorf("%q: want host, target or both", s)
}

// ParseProtocol reads rdma (alias roce) or tcp.
func ParseProtocol(s string) (inof.Protocol, error) {
	switch strings.ToLower(s) {
	case "rdma", "roce":
		return inof.ProtocolRoCE, nil
	case "tcp":
		return inof.ProtocolTCP, nil
	}
	return 0, fmt.Errorf("%q: want rdma or tcp", s)
}

// transport is nvme-cli's -t value for a protocol ("" if it has none).
func transport(p inof.Protocol) string {
	switch p {
	case inof.ProtocolRoCE:
		return "rdma"
	case inof.ProtocolTCP:
		return "tcp"
	}
	return ""
}
