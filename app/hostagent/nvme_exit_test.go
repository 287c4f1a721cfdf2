package hostagent

import (
	"context"
	"errors"
	"testing"

	"github.com/openinof/inof/inof"
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

// countingExec counts the programs it would run and prints a device.
type countingExec struct{ runs *int }

func (e countingExec) Run(context.Context, string, ...string) ([]byte, error) {
	*e.runs++
	return []byte(`{"device":"nvme3"}`), nil
}

// TestConnectRefusesOptionSeparators: an NQN or address that would add
// options to the kernel's /dev/nvme-fabrics string (",nr_io_queues=1"),
// or that holds a control character, never reaches nvme connect.
func TestConnectRefusesOptionSeparators(t *testing.T) {
	runs := 0
	cli := &CLI{Exec: countingExec{&runs}, Bin: "nvme"}
	good := Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN}
	bad := []struct {
		p    Path
		host string
	}{
		{Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN + ",nr_io_queues=1,queue_size=2"}, hostNQN},
		{Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420", HostTrAddr: "10.0.0.2", SubNQN: subNQN + "\n"}, hostNQN},
		{Path{Transport: "tcp", TrAddr: "10.0.0.100", TrSvcID: "4420,hdr_digest", HostTrAddr: "10.0.0.2", SubNQN: subNQN}, hostNQN},
		{good, hostNQN + "=x"},
	}
	for _, b := range bad {
		if _, err := cli.Connect(context.Background(), b.p, ConnectParams{HostNQN: b.host}); !errors.Is(err, inof.ErrText) {
			t.Errorf("%+v host %q: %v, want refused", b.p, b.host, err)
		}
	}
	if runs != 0 {
		t.Errorf("nvme ran %d times for refused paths", runs)
	}
	if dev, err := cli.Connect(context.Background(), good, ConnectParams{HostNQN: hostNQN}); err != nil || dev != "nvme3" || runs != 1 {
		t.Errorf("a sound path: %q, %v after %d runs", dev, err, runs)
	}
}
