package topo

// Subsystem NQNs of the demo fabric's two targets.
const (
	DemoRedNQN  = "nqn.2014-08.org.example:nvme:red-array"
	DemoBlueNQN = "nqn.2014-08.org.example:nvme:blue-array"
)

// DemoSpec is issue #12's demo fabric, the one `make demo` runs in
// namespaces and integration/clab renders as a containerlab lab: two
// reflectors (one cluster-id), three leaves, the dual-homed target tgtA
// (leaf1 and leaf2) for zone red, tgtB (leaf3) for zone blue, and four
// hosts spread over the leaves so that every zone spans switches. The
// targets are passive: they start after zoning.
func DemoSpec() Spec {
	host := func(name, sw string) Device {
		return Device{Name: name, NICs: []NIC{{Switch: sw, Role: "host", Protocol: "tcp"}}}
	}
	tgt := func(sw, nqn string) NIC {
		return NIC{Switch: sw, Role: "target", Protocol: "tcp", Port: 4420, NQN: nqn}
	}
	return Spec{
		Reflectors: []string{"rr1", "rr2"},
		Switches:   []string{"leaf1", "leaf2", "leaf3"},
		Devices: []Device{
			{Name: "tgtA", NICs: []NIC{tgt("leaf1", DemoRedNQN), tgt("leaf2", DemoRedNQN)}},
			{Name: "tgtB", NICs: []NIC{tgt("leaf3", DemoBlueNQN)}},
			host("h1", "leaf1"), host("h2", "leaf3"),
			host("h3", "leaf2"), host("h4", "leaf1"),
		},
		Passive: []string{"tgtA", "tgtB"},
	}
}
