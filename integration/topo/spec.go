package topo

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
)

// Spec describes a fabric once: its nodes, and which switch each device
// NIC is cabled to. Names must be unique across the fabric.
type Spec struct {
	// Reflectors are the route reflectors (inofd --role reflector), all
	// with one cluster-id; every switch peers with every reflector.
	Reflectors []string
	// Switches are the leaf switch agents (inofd --role switch). Without
	// reflectors they run in direct mode (no BGP, each keeps its zone
	// store, zoned through its own API socket).
	Switches []string
	// OnReflector puts switches on reflector boxes: switch name → the
	// reflector whose namespace it shares, as a second process with its
	// own control address on the box's fab0, metrics on 127.0.0.1:9466
	// and its own state directory (docs/operations.md, "A reflector that
	// is a leaf").
	OnReflector map[string]string
	// Devices are the hosts and storage targets.
	Devices []Device
	// ASN is the fabric's AS number; 0 means 65000.
	ASN uint32
	// Passive names nodes whose daemon Start leaves stopped: the test
	// starts them later (Node.Start) or plays their part itself.
	Passive []string

	// ReflectorConfig, SwitchConfig and HostConfig, when set, may change a
	// node's generated configuration (the YAML document as a map) before
	// it is written, e.g. to shorten a timer.
	ReflectorConfig func(name string, cfg map[string]any)
	SwitchConfig    func(name string, cfg map[string]any)
	HostConfig      func(name string, cfg map[string]any)

	// RecordFormat is the record format (docs/records.md) the fabric is
	// switched to once its switches are connected (Fabric.WaitEstablished
	// does it): "per-device" (the default, nothing is set) or "sets". Empty
	// takes $INOF_RECORD_FORMAT, so a whole suite runs in either format.
	RecordFormat string
	// Wrap, when set, may return a command prefix for a node's daemon: a
	// program that runs the daemon (the path and arguments after its own
	// ones) and passes its signals on, e.g. a tracer. nil runs the daemon
	// itself.
	Wrap func(name string) []string

	// InGuest, when set, realises the whole fabric inside one qemu guest
	// (see GuestOptions), in instruction-counted time if asked, instead
	// of as namespaces on the machine.
	InGuest *GuestOptions
}

// recordFormat is the format the fabric runs in.
func (s Spec) recordFormat() string {
	if s.RecordFormat != "" {
		return s.RecordFormat
	}
	if v := os.Getenv("INOF_RECORD_FORMAT"); v != "" {
		return v
	}
	return "per-device"
}

// Device is a host or target with one or more NICs.
type Device struct {
	Name string
	// Probe devices run no agent: the test drives each NIC through a raw
	// l2proto link (Node.Probe), for exact frames and timing.
	Probe bool
	// HostNQN is inof-host's host NQN; empty derives one from the name.
	HostNQN string
	NICs    []NIC
	// VM, when set, makes the device a qemu guest (see VM).
	VM *VM
}

// NIC is one interface of a device, cabled to an access port of a switch.
type NIC struct {
	// Switch names the switch the NIC is cabled to.
	Switch string
	// Role is host, target or both; Protocol tcp or rdma (inof-host's
	// configuration words). Port and NQN are announced (targets).
	Role     string
	Protocol string
	Port     uint16
	NQN      string
	// Address is the NIC's address in CIDR form; empty means
	// 10.(100+k).(i+1).2/24 for NIC k of device i.
	Address string
	// MAC, when set, replaces the NIC's random MAC address.
	MAC string
}

// Fabric control addresses: reflector i is 10.0.0.(1+i), switch j is
// 10.0.0.(11+j), all in 10.0.0.0/24 on the fabric namespace's bridge.
func reflectorAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + i)}) }
func switchAddr(j int) netip.Addr    { return netip.AddrFrom4([4]byte{10, 0, 0, byte(11 + j)}) }

// check reports the first problem in s.
func (s *Spec) check() error {
	if len(s.Reflectors) > 9 || len(s.Switches) > 200 {
		return fmt.Errorf("topo: at most 9 reflectors and 200 switches")
	}
	seen := map[string]bool{}
	name := func(n string) error {
		if n == "" || len(n) > 8 || seen[n] {
			return fmt.Errorf("topo: node name %q: empty, longer than 8 bytes or used twice", n)
		}
		seen[n] = true
		return nil
	}
	switches := map[string]bool{}
	for _, n := range s.Reflectors {
		if err := name(n); err != nil {
			return err
		}
	}
	for _, n := range s.Switches {
		if err := name(n); err != nil {
			return err
		}
		switches[n] = true
	}
	for sw, r := range s.OnReflector {
		if !switches[sw] || !slices.Contains(s.Reflectors, r) {
			return fmt.Errorf("topo: OnReflector %s: %s: not a switch on a reflector of the spec", sw, r)
		}
	}
	for _, d := range s.Devices {
		if err := name(d.Name); err != nil {
			return err
		}
		if err := d.checkVM(); err != nil {
			return err
		}
		if len(d.NICs) == 0 || len(d.NICs) > 8 {
			return fmt.Errorf("topo: device %s: 1..8 NICs", d.Name)
		}
		for k, nic := range d.NICs {
			if !switches[nic.Switch] {
				return fmt.Errorf("topo: device %s NIC %d: unknown switch %q", d.Name, k, nic.Switch)
			}
			if nic.Address != "" {
				if _, err := netip.ParsePrefix(nic.Address); err != nil {
					return fmt.Errorf("topo: device %s NIC %d: address: %w", d.Name, k, err)
				}
			}
		}
	}
	if s.InGuest != nil {
		return s.checkInGuest()
	}
	return nil
}
