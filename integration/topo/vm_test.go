package topo

import (
	"strings"
	"testing"
)

// TestCheckVM: a VM device cannot be a probe, and its target NICs need one
// NQN between them; a well-formed VM spec passes.
func TestCheckVM(t *testing.T) {
	base := func(d Device) Spec {
		return Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"}, Devices: []Device{d}}
	}
	tgt := func(nqn string) NIC {
		return NIC{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420, NQN: nqn}
	}
	for _, c := range []struct {
		name string
		dev  Device
		want string // "" = valid
	}{
		{"host", Device{Name: "h1", VM: &VM{}, NICs: []NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}}, ""},
		{"dual target", Device{Name: "t", VM: &VM{}, NICs: []NIC{tgt("nqn.a"), tgt("nqn.a")}}, ""},
		{"probe", Device{Name: "p", VM: &VM{}, Probe: true, NICs: []NIC{tgt("nqn.a")}}, "cannot be a probe"},
		{"no nqn", Device{Name: "t", VM: &VM{}, NICs: []NIC{tgt("")}}, "same NQN"},
		{"two nqns", Device{Name: "t", VM: &VM{}, NICs: []NIC{tgt("nqn.a"), tgt("nqn.b")}}, "same NQN"},
	} {
		s := base(c.dev)
		err := s.check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
