package inof

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"
)

// Role is what a device does on the fabric. The numeric values are the ones
// nvme-snsd and the NoF drafts put on the wire.
type Role uint8

// Device roles.
const (
	RoleUnknown Role = 0
	RoleTarget  Role = 1 // storage target (NVMe subsystem, "server")
	RoleHost    Role = 2 // host (initiator, "client")
	RoleBoth    Role = 3 // acts as host and target
)

// Valid reports whether r is one of the defined roles (not RoleUnknown).
func (r Role) Valid() bool { return r >= RoleTarget && r <= RoleBoth }

// IsHost reports whether a device of role r initiates connections.
func (r Role) IsHost() bool { return r == RoleHost || r == RoleBoth }

// IsTarget reports whether a device of role r serves storage.
func (r Role) IsTarget() bool { return r == RoleTarget || r == RoleBoth }

// Complements reports whether devices of roles r and o may talk to each other:
// one must be a host and the other a target (RoleBoth counts as both).
func (r Role) Complements(o Role) bool {
	return (r.IsHost() && o.IsTarget()) || (r.IsTarget() && o.IsHost())
}

func (r Role) String() string {
	switch r {
	case RoleUnknown:
		return "unknown"
	case RoleTarget:
		return "target"
	case RoleHost:
		return "host"
	case RoleBoth:
		return "both"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Protocol is the storage service protocol a device offers or uses.
type Protocol uint8

// Service protocols, numbered as on the wire.
const (
	ProtocolUnknown Protocol = 0
	ProtocolRoCE    Protocol = 1 // NVMe over RoCEv2 (transport "rdma")
	ProtocolTCP     Protocol = 2 // NVMe over TCP
	ProtocolISCSI   Protocol = 3 // iSCSI
)

// Valid reports whether p is one of the defined protocols.
func (p Protocol) Valid() bool { return p >= ProtocolRoCE && p <= ProtocolISCSI }

func (p Protocol) String() string {
	switch p {
	case ProtocolUnknown:
		return "unknown"
	case ProtocolRoCE:
		return "roce"
	case ProtocolTCP:
		return "tcp"
	case ProtocolISCSI:
		return "iscsi"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// State is whether a device is usable.
type State uint8

// Device states, numbered as on the wire.
const (
	StateInactive State = 0
	StateActive   State = 1
)

// Valid reports whether s is one of the defined states.
func (s State) Valid() bool { return s <= StateActive }

func (s State) String() string {
	switch s {
	case StateInactive:
		return "inactive"
	case StateActive:
		return "active"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Reason says why a device changed state. The numeric values are the ones
// nvme-snsd and the NoF drafts put on the wire.
type Reason uint8

// Status-change reasons.
const (
	ReasonNone       Reason = 0
	ReasonLinkDown   Reason = 1
	ReasonPFCStorm   Reason = 2
	ReasonPacketErr  Reason = 3
	ReasonZoneChange Reason = 4
	ReasonIPChange   Reason = 5
	ReasonAgeOut     Reason = 6 // LLDP registration aged out
	ReasonBFDDown    Reason = 7 // the switch that served the device is gone
)

// Valid reports whether r is one of the defined reasons (ReasonNone
// included). The record codecs refuse any other value, so a new reason
// needs only its constant, its name here and this bound.
func (r Reason) Valid() bool { return r <= ReasonBFDDown }

func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonLinkDown:
		return "link-down"
	case ReasonPFCStorm:
		return "pfc-storm"
	case ReasonPacketErr:
		return "packet-error"
	case ReasonZoneChange:
		return "zone-change"
	case ReasonIPChange:
		return "ip-change"
	case ReasonAgeOut:
		return "lldp-age-out"
	case ReasonBFDDown:
		return "bfd-down"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Forced reports whether a host should tear the connection down at once for
// this reason (nvme-snsd forces zone change, IP change and age-out) instead of
// leaving recovery to NVMe keep-alive.
func (r Reason) Forced() bool {
	return r == ReasonZoneChange || r == ReasonIPChange || r == ReasonAgeOut
}

// Device is the identity of an NVMe-oF endpoint as the fabric sees it.
type Device struct {
	Addr     netip.Addr // the address hosts connect to / connect from
	Role     Role
	Protocol Protocol
	Port     uint16 // NVMe-oF service id (trsvcid); 0 means the protocol default
	NQN      string // NVMe Qualified Name; may be empty (nvme-snsd never sends one)
}

func (d Device) String() string {
	b := make([]byte, 0, 40+len(d.NQN))
	b = append(append(b, d.Role.String()...), ' ')
	if d.Addr.IsValid() {
		b = d.Addr.AppendTo(b)
	} else {
		b = append(b, d.Addr.String()...)
	}
	b = append(append(b, '/'), d.Protocol.String()...)
	if d.Port != 0 {
		b = strconv.AppendUint(append(b, ':'), uint64(d.Port), 10)
	}
	if d.NQN != "" {
		b = append(append(b, ' '), d.NQN...)
	}
	return string(b)
}

// LogValue is the device as a log attribute: its String, made only when
// the line is written (a switch's event lines are held back in a storm).
func (d Device) LogValue() slog.Value { return slog.StringValue(d.String()) }

// Status is a device's state as a switch reports it: whether it is usable,
// why it last changed and when. Every record of a device (the switch's own,
// the BGP record, a remote switch's view) embeds it, so a status travels as
// one value.
type Status struct {
	State   State
	Reason  Reason    // why the state last changed (ReasonNone while it never left)
	Changed time.Time // last state change
}

// Active reports whether the status is StateActive.
func (s Status) Active() bool { return s.State == StateActive }

// Report is one switch's report of one device: the device carrier. It
// travels unchanged from the registration on an access port (the
// registration table's entry embeds it) through the switch's own record
// and the BGP record (which embeds it beside its epoch) into a remote
// switch's device table and its merged view of each address. Transport
// details stay with their transport: the LLDP IDs, MAC and TTL with the
// registration, the epoch with the record.
type Report struct {
	Switch RouterID // the switch that reports the device
	// Device is embedded for its fields; in JSON (state files) it stays
	// one object named Device, as it was before it was embedded.
	Device `json:"Device"`
	Status
	AccessPort string    // the switch interface the device is on
	Since      time.Time // first registration (millisecond precision on the wire)
}

func (r Report) String() string {
	return fmt.Sprintf("%s %s (switch %s)", r.Device, r.State, r.Switch)
}

// Preferred reports whether report r of an address is the one to show
// rather than o, when two switches report the same address (a device that
// moved, or a NIC on a shared segment): active first, then the newest
// change, then the lower switch router-id, so the choice does not depend on
// the order the reports came in.
func (r Report) Preferred(o Report) bool {
	if r.Active() != o.Active() {
		return r.Active()
	}
	if !r.Changed.Equal(o.Changed) {
		return r.Changed.After(o.Changed)
	}
	return r.Switch < o.Switch
}
