package vm

import "testing"

// TestParseControllers reads the sysfs lines Controllers prints: the
// address pairs, a line that is not one, a controller without host_traddr.
func TestParseControllers(t *testing.T) {
	out := "nvme0|live|tcp|traddr=10.100.1.2,trsvcid=4420,host_traddr=10.100.3.2,src_addr=10.100.3.2|nqn.x:tgt\n" +
		"garbage line\nnvme1|connecting|tcp|traddr=10.101.1.2,trsvcid=4420|nqn.x:tgt\n"
	cs := parseControllers(out)
	if len(cs) != 2 {
		t.Fatalf("got %d controllers: %+v", len(cs), cs)
	}
	want := Controller{Name: "nvme0", State: "live", Transport: "tcp", TrAddr: "10.100.1.2", TrSvcID: "4420",
		HostTrAddr: "10.100.3.2", SubNQN: "nqn.x:tgt"}
	if cs[0] != want {
		t.Errorf("controller 0 = %+v, want %+v", cs[0], want)
	}
	if cs[1].State != "connecting" || cs[1].TrAddr != "10.101.1.2" || cs[1].HostTrAddr != "" {
		t.Errorf("controller 1 = %+v", cs[1])
	}
}
