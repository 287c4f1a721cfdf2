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
		wantError(t, c.name, s.check(), c.want)
	}
}

// TestCheckInGuest: a spec realised in one guest has one host under test
// (NICs all hosts), targets whose NICs are all targets with one NQN (at
// most two), and no probe, VM device or switch on a reflector.
func TestCheckInGuest(t *testing.T) {
	host := Device{Name: "h", NICs: []NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}, {Switch: "leaf2", Role: "host", Protocol: "tcp"}}}
	tgt := func(name, nqn string) Device {
		return Device{Name: name, NICs: []NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp", Port: 4420, NQN: nqn},
			{Switch: "leaf2", Role: "target", Protocol: "tcp", Port: 4420, NQN: nqn}}}
	}
	mixed := Device{Name: "m", NICs: []NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"},
		{Switch: "leaf2", Role: "target", Protocol: "tcp", Port: 4420, NQN: "nqn.a"}}}
	probe := Device{Name: "p", Probe: true, NICs: []NIC{{Switch: "leaf1", Role: "host"}}}
	for _, c := range []struct {
		name string
		devs []Device
		box  bool
		want string // "" = valid
	}{
		{"host and target", []Device{host, tgt("t", "nqn.a")}, false, ""},
		{"two targets", []Device{host, tgt("t1", "nqn.a"), tgt("t2", "nqn.b")}, false, ""},
		{"three targets", []Device{host, tgt("t1", "nqn.a"), tgt("t2", "nqn.b"), tgt("t3", "nqn.c")}, false, "at most 2 targets"},
		{"no host", []Device{tgt("t", "nqn.a")}, false, "one host under test"},
		{"two hosts", []Device{host, {Name: "h2", NICs: host.NICs}, tgt("t", "nqn.a")}, false, "one host under test"},
		{"mixed roles", []Device{host, mixed}, false, "all hosts or all targets"},
		{"no nqn", []Device{host, tgt("t", "")}, false, "same NQN"},
		{"probe", []Device{host, probe}, false, "no probe or VM"},
		{"switch on a reflector", []Device{host, tgt("t", "nqn.a")}, true, "no switches on reflectors"},
	} {
		s := Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"}, Devices: c.devs, InGuest: &GuestOptions{}}
		if c.box {
			s.OnReflector = map[string]string{"leaf1": "rr1"}
		}
		wantError(t, c.name, s.check(), c.want)
	}
}

// wantError fails the test unless err is nil where want is empty, or says
// want.
func wantError(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want one saying %q", name, err, want)
	}
}
