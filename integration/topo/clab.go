package topo

import (
	"fmt"
	"net/netip"
)

// This file exports what integration/clab needs to render a containerlab
// lab from the same Spec that Start brings up in namespaces, so the two
// never drift: the checks, the addresses and the fake nvme-cli.

// Check reports the first problem in s, as Start would.
func (s *Spec) Check() error { return s.check() }

// ReflectorAddr is the control address Start gives reflector i of a Spec
// (10.0.0.1 onwards, in 10.0.0.0/24).
func ReflectorAddr(i int) netip.Addr { return reflectorAddr(i) }

// SwitchAddr is the control address Start gives switch j of a Spec
// (10.0.0.11 onwards, in 10.0.0.0/24).
func SwitchAddr(j int) netip.Addr { return switchAddr(j) }

// ClusterID is the cluster-id Start configures when a Spec has more than
// one reflector.
const ClusterID = "10.0.0.254"

// NICPrefix is the address, in CIDR form, of NIC k of device i of a Spec:
// the NIC's Address, or 10.(100+k).(i+1).2/24 when that is empty.
func (s *Spec) NICPrefix(i, k int) (netip.Prefix, error) {
	if i < 0 || i >= len(s.Devices) || k < 0 || k >= len(s.Devices[i].NICs) {
		return netip.Prefix{}, fmt.Errorf("topo: no NIC %d of device %d", k, i)
	}
	p, err := netip.ParsePrefix(nicCIDR(s.Devices[i].NICs[k], i, k, 24))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("topo: device %s NIC %d: address: %w", s.Devices[i].Name, k, err)
	}
	return p, nil
}

// DeviceHostNQN is the host NQN a device's inof-host uses: its HostNQN, or
// one derived from its name.
func DeviceHostNQN(d Device) string {
	if d.HostNQN != "" {
		return d.HostNQN
	}
	return "nqn.2014-08.org.example:host:" + d.Name
}

// FakeNVMeScript is the fake nvme-cli every inof-host of a fabric runs: it
// logs each invocation's arguments to $FAKE_NVME_DIR/calls and answers
// connect, list-subsys, disconnect and discover as nvme-cli 2.3 would.
func FakeNVMeScript() string { return fakeNVMe }

// ParseMetrics reads a /metrics body (the Prometheus text format that
// client_golang writes).
func ParseMetrics(body string) (Metrics, error) { return parseMetrics(body) }
