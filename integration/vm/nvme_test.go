package vm

import (
	"strings"
	"testing"
)

// TestParseControllers builds controllers from the sysfs files Controllers
// reads: the address pairs, a controller without host_traddr, a directory
// without a state (left out), sorted by name.
func TestParseControllers(t *testing.T) {
	c := "/sys/class/nvme/"
	files := map[string]string{
		c + "nvme1/state": "connecting\n", c + "nvme1/transport": "tcp\n", c + "nvme1/subsysnqn": "nqn.x:tgt\n",
		c + "nvme1/address": "traddr=10.101.1.2,trsvcid=4420\n",
		c + "nvme0/state":   "live\n", c + "nvme0/transport": "tcp\n", c + "nvme0/subsysnqn": "nqn.x:tgt\n",
		c + "nvme0/address":   "traddr=10.100.1.2,trsvcid=4420,host_traddr=10.100.3.2,src_addr=10.100.3.2\n",
		c + "nvme2/transport": "tcp\n",
	}
	cs := parseControllers(files)
	if len(cs) != 2 {
		t.Fatalf("got %d controllers: %+v", len(cs), cs)
	}
	want := Controller{Name: "nvme0", State: "live", Transport: "tcp", TrAddr: "10.100.1.2", TrSvcID: "4420",
		HostTrAddr: "10.100.3.2", SubNQN: "nqn.x:tgt"}
	if cs[0] != want {
		t.Errorf("controller 0 = %+v, want %+v", cs[0], want)
	}
	if cs[1].Name != "nvme1" || cs[1].State != "connecting" || cs[1].TrAddr != "10.101.1.2" || cs[1].HostTrAddr != "" {
		t.Errorf("controller 1 = %+v", cs[1])
	}
}

// TestKernelOops: the oops and BUG lines of a console are found from the
// first one on; a clean console gives nothing.
func TestKernelOops(t *testing.T) {
	if got := KernelOops("[1.0] nvme nvme0: new ctrl\n[2.0] sw: port 2(swp2) entered disabled state\n"); got != "" {
		t.Fatalf("clean console: %q", got)
	}
	c := "[1.0] ok\n[38.4] BUG: kernel NULL pointer dereference, address: 0000000000000038\n[38.4] Oops: 0000 [#1]\n"
	if got := KernelOops(c); !strings.HasPrefix(got, "BUG: kernel NULL pointer") || !strings.Contains(got, "Oops: 0000") {
		t.Fatalf("oops console: %q", got)
	}
}
