package hostagent

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultsWithInterfaceValidate(t *testing.T) {
	o := testOptions(t)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestValidateListsEveryError: one broken configuration, every problem in
// the error, one per line.
func TestValidateListsEveryError(t *testing.T) {
	o := DefaultOptions()
	o.Log.Format = "xml"
	o.DisconnectOn = "sometimes"
	o.StateFile = ""
	o.HostNQN, o.HostNQNFile = "", ""
	o.RestrainTime = -time.Second
	o.RegistrationTTL = 10 * time.Second // not above the 30 s interval
	o.NVMe.Path = ""
	o.NVMe.CtrlLossTmo = -1
	o.Interfaces = []InterfaceOptions{
		{Name: "eth0", Role: "host", Protocol: "tcp", Address: "224.0.0.1"},
		{Name: "eth0", Role: "initiator", Protocol: "fc", Address: "10.0.0.300"},
		{Role: "target", Protocol: "rdma", NQN: strings.Repeat("n", 300)},
	}
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		`log.format "xml"`,
		`disconnect_on "sometimes"`,
		"state_file: must be set",
		"host_nqn or host_nqn_file",
		"restrain_time -1s",
		"registration_ttl 10s: must exceed registration_interval 30s",
		"nvme.path: must be set",
		"nvme.ctrl_loss_tmo -1",
		"interfaces[0].address 224.0.0.1: must be a unicast address",
		`interfaces[1].name "eth0": listed twice`,
		`interfaces[1].role: "initiator"`,
		`interfaces[1].protocol: "fc"`,
		`interfaces[1].address "10.0.0.300": not an IP address`,
		"interfaces[2].name: must be set",
		"interfaces[2].nqn: 300 bytes",
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q", w)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), msg)
	}
}

func TestNoInterfaces(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "interfaces: at least one") {
		t.Fatalf("got %v", err)
	}
}
