package soak

import (
	"fmt"
	"net/netip"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/zones"
)

// NICSpec is one NIC of a probe device: where it is cabled and what it
// registers as.
type NICSpec struct {
	Device   string
	Index    int // NIC index within the device
	Switch   string
	Role     inof.Role
	Protocol inof.Protocol
	Port     uint16
	NQN      string
	// Pool are the addresses the NIC may register, Pool[0] first; they
	// share one /24 (Prefix) no other NIC uses.
	Pool   []netip.Addr
	Prefix netip.Prefix
	// Unregistered NICs start silent (a Registration fault brings them).
	Unregistered bool
}

// ID names the NIC in logs: device/index.
func (n *NICSpec) ID() string { return fmt.Sprintf("%s/%d", n.Device, n.Index) }

// Layout is the fabric the soak runs: nodes, probe NICs and the zoning it
// starts with.
type Layout struct {
	Reflectors []string
	Switches   []string
	NICs       []*NICSpec
	Config     *zones.Config
}

// device is one probe device of the layout.
type device struct {
	name     string
	role     inof.Role
	protocol inof.Protocol
	nqn      string
	switches []string // one per NIC
	silent   bool     // starts unregistered
}

// poolSize is how many addresses each NIC may take (address changes).
const poolSize = 3

// NQN returns the NQN the layout gives a device.
func NQN(device string) string { return "nqn.2014-08.org.example:" + device }

// DefaultLayout is the soak fabric: 2 reflectors, 4 leaves, 7 targets (two
// dual-homed, one of role both) and 8 hosts (two dual-homed, one with an
// NQN), 19 NICs in 4 zones and the default zone.
func DefaultLayout() *Layout {
	devs := []device{
		{name: "t1", role: inof.RoleTarget, protocol: inof.ProtocolTCP, nqn: NQN("t1"), switches: []string{"leaf1"}},
		{name: "t2", role: inof.RoleTarget, protocol: inof.ProtocolTCP, nqn: NQN("t2"), switches: []string{"leaf2"}},
		{name: "t3", role: inof.RoleTarget, protocol: inof.ProtocolTCP, nqn: NQN("t3"), switches: []string{"leaf3"}, silent: true},
		{name: "t4", role: inof.RoleTarget, protocol: inof.ProtocolRoCE, nqn: NQN("t4"), switches: []string{"leaf4"}},
		{name: "td1", role: inof.RoleTarget, protocol: inof.ProtocolTCP, nqn: NQN("td1"), switches: []string{"leaf1", "leaf2"}},
		{name: "td2", role: inof.RoleTarget, protocol: inof.ProtocolRoCE, nqn: NQN("td2"), switches: []string{"leaf3", "leaf4"}},
		{name: "tb", role: inof.RoleBoth, protocol: inof.ProtocolTCP, nqn: NQN("tb"), switches: []string{"leaf2"}},
		{name: "h1", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf1"}},
		{name: "h2", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf2"}},
		{name: "h3", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf3"}},
		{name: "h4", role: inof.RoleHost, protocol: inof.ProtocolRoCE, switches: []string{"leaf4"}},
		{name: "h5", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf1"}},
		{name: "h6", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf4"}, silent: true},
		{name: "hd1", role: inof.RoleHost, protocol: inof.ProtocolTCP, nqn: NQN("hd1"), switches: []string{"leaf2", "leaf3"}},
		{name: "hd2", role: inof.RoleHost, protocol: inof.ProtocolTCP, switches: []string{"leaf4", "leaf1"}},
	}
	l := &Layout{Reflectors: []string{"rr1", "rr2"}, Switches: []string{"leaf1", "leaf2", "leaf3", "leaf4"}}
	for i, d := range devs {
		for k, sw := range d.switches {
			// topo's default address of NIC k of device i.
			prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + k), byte(i + 1), 0}), 24)
			n := &NICSpec{Device: d.name, Index: k, Switch: sw, Role: d.role, Protocol: d.protocol, NQN: d.nqn,
				Prefix: prefix, Unregistered: d.silent}
			if d.role.IsTarget() {
				n.Port = 4420
			}
			for a := range poolSize {
				n.Pool = append(n.Pool, netip.AddrFrom4([4]byte{10, byte(100 + k), byte(i + 1), byte(2 + a)}))
			}
			l.NICs = append(l.NICs, n)
		}
	}
	l.Config = l.initialConfig()
	return l
}

// nic returns the NIC of device dev with index k.
func (l *Layout) nic(dev string, k int) *NICSpec {
	for _, n := range l.NICs {
		if n.Device == dev && n.Index == k {
			return n
		}
	}
	panic("soak: no NIC " + dev + "/" + fmt.Sprint(k))
}

// initialConfig: four zones using every member kind (address, prefix,
// range, NQN, alias), hard zoning on, the default zone enabled; h5 and
// t1's neighbour h1 overlap zones, h3 starts unzoned.
func (l *Layout) initialConfig() *zones.Config {
	c := zones.NewConfig(zones.DefaultSettings())
	addr := func(dev string, k int) zones.Member {
		return zones.Member{Kind: zones.MemberAddr, Addr: l.nic(dev, k).Pool[0]}
	}
	prefix := func(dev string, k int) zones.Member {
		return zones.Member{Kind: zones.MemberPrefix, Prefix: l.nic(dev, k).Prefix}
	}
	nqn := func(dev string) zones.Member { return zones.Member{Kind: zones.MemberNQN, Name: NQN(dev)} }
	alias := func(name string) zones.Member { return zones.Member{Kind: zones.MemberAlias, Name: name} }
	span := func(lo, hi netip.Addr) zones.Member { return zones.Member{Kind: zones.MemberRange, Addr: lo, Hi: hi} }
	c.Aliases["rackA"] = &zones.Alias{Name: "rackA", Members: []zones.Member{addr("h2", 0), prefix("hd2", 1)}}
	c.Aliases["arrays"] = &zones.Alias{Name: "arrays", Members: []zones.Member{nqn("td2"), addr("t4", 0)}}
	c.Zones["zA"] = &zones.Zone{Name: "zA", Members: []zones.Member{addr("t1", 0), addr("h1", 0), alias("rackA"), nqn("td1")}}
	c.Zones["zB"] = &zones.Zone{Name: "zB", Members: []zones.Member{prefix("t2", 0), nqn("hd1"), prefix("h5", 0), nqn("tb")}}
	c.Zones["zC"] = &zones.Zone{Name: "zC", Members: []zones.Member{alias("arrays"), prefix("h4", 0), prefix("h6", 0), addr("hd2", 0)}}
	// zD: a range over t3's and t4's first NICs (10.100.3.2-10.100.4.4)
	// and tb, h5 (in zB too) and hd1's second NIC.
	c.Zones["zD"] = &zones.Zone{Name: "zD", Members: []zones.Member{span(l.nic("t3", 0).Pool[0], l.nic("t4", 0).Pool[poolSize-1]),
		nqn("tb"), addr("h5", 0), prefix("hd1", 1)}}
	return c
}

// Spec is the topo.Spec of the layout: every device a probe.
func (l *Layout) Spec() topo.Spec {
	s := topo.Spec{Reflectors: l.Reflectors, Switches: l.Switches}
	var cur *topo.Device
	for _, n := range l.NICs {
		if cur == nil || cur.Name != n.Device {
			s.Devices = append(s.Devices, topo.Device{Name: n.Device, Probe: true})
			cur = &s.Devices[len(s.Devices)-1]
		}
		cur.NICs = append(cur.NICs, topo.NIC{Switch: n.Switch})
	}
	return s
}
