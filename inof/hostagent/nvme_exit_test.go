package hostagent

import (
	"context"
	"errors"
	"testing"
)

// exitAfterOutput is an executor whose program prints out and then fails,
// as nvme-cli 2.3's connect -o json does after creating the controller.
type exitAfterOutput struct{ out string }

func (e exitAfterOutput) Run(context.Context, string, ...string) ([]byte, error) {
	return []byte(e.out), errors.New("exit status 1")
}

// TestConnectExitAfterDevice: a connect that printed a valid device is a
// success whatever the exit status; one that printed nothing usable stays
// a failure.
func TestConnectExitAfterDevice(t *testing.T) {
	p := Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN}
	cli := &CLI{Exec: exitAfterOutput{out: "{\n  \"device\":\"nvme3\"\n}\n"}, Bin: "nvme"}
	if dev, err := cli.Connect(context.Background(), p, ConnectParams{HostNQN: hostNQN}); err != nil || dev != "nvme3" {
		t.Errorf("connect that printed nvme3 and exited 1: %q, %v; want nvme3, nil", dev, err)
	}
	for _, out := range []string{"", "Failed to write to /dev/nvme-fabrics: Connection refused", `{"device":"sda"}`} {
		cli := &CLI{Exec: exitAfterOutput{out: out}, Bin: "nvme"}
		if dev, err := cli.Connect(context.Background(), p, ConnectParams{HostNQN: hostNQN}); err == nil {
			t.Errorf("connect that printed %q and exited 1: %q, nil; want an error", out, dev)
		}
	}
}
