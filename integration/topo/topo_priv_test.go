//go:build privileged

package topo_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

// TestPrivHarness checks the harness itself with the daemons that need no
// switch agent: a reflector (health, metrics, SIGKILL and restart as a
// graceful restart, SIGTERM), an inof-host cabled to a switch namespace
// whose agent is left stopped so the test plays the switch on the access
// port (the host is started once the test listens there) (registration seen, a notification ACKed, the fake nvme's connect
// logged), a probe device, and a link cut seen as carrier loss by the host.
func TestPrivHarness(t *testing.T) {
	const nqn = "nqn.2014-08.org.example:nvme:harness"
	f := topo.Start(t, topo.Spec{
		Reflectors: []string{"rr1"},
		Switches:   []string{"leaf1"},
		Devices: []topo.Device{
			{Name: "h1", NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}},
			{Name: "p1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "tcp"}}},
		},
		Passive: []string{"leaf1", "h1"},
	})
	rr, leaf, h1 := f.Node("rr1"), f.Node("leaf1"), f.Node("h1")

	if v, err := rr.Metric("inof_reflector_up"); err != nil || v != 1 {
		t.Fatalf("inof_reflector_up = %v, %v", v, err)
	}
	if _, err := rr.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := rr.Start(); err != nil {
		t.Fatal(err)
	}
	if v, err := rr.Metric("inof_reflector_graceful_restart_restarting"); err != nil || v != 1 {
		t.Fatalf("after SIGKILL and start: inof_reflector_graceful_restart_restarting = %v, %v", v, err)
	}
	if err := rr.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// The test plays leaf1 on h1's access port.
	hl := h1.Links[0]
	var sw *l2proto.PacketLink
	if err := leaf.NS.Do(func() (err error) { sw, err = l2proto.ListenPacket(hl.Port); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	frames := make(chan l2proto.Frame, 256)
	go func() {
		buf := make([]byte, l2proto.MaxFrameLen+64)
		for {
			n, err := sw.ReadFrame(buf)
			if errors.Is(err, syscall.ENETDOWN) {
				continue
			}
			if err != nil {
				return
			}
			if fr, err := l2proto.DecodeFrame(buf[:n]); err == nil {
				frames <- fr
			}
		}
	}()
	next := func(what string, ok func(l2proto.Frame) bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case fr := <-frames:
				if ok(fr) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s from h1", what)
			}
		}
	}
	if err := h1.Start(); err != nil {
		t.Fatal(err)
	}
	next("registration", func(fr l2proto.Frame) bool {
		return fr.LLDP != nil && fr.LLDP.Registration.Addr == hl.Addr() && fr.LLDP.Registration.Role == inof.RoleHost
	})
	target := f.Node("p1").Links[0].Addr()
	n := l2proto.Notification{Target: target, Host: hl.Addr(), Seq: 7, State: inof.StateActive,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: nqn}
	fr, err := l2proto.MessageFrame(sw.HardwareAddr(), &l2proto.Message{Version: l2proto.Version1, Notifications: []l2proto.Notification{n}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.WriteFrame(fr); err != nil {
		t.Fatal(err)
	}
	next("ACK", func(fr l2proto.Frame) bool {
		return fr.Message != nil && len(fr.Message.Acks) == 1 && fr.Message.Acks[0].Key() == n.Key()
	})
	want := "connect -t tcp -a " + target.String() + " -s 4420 -w " + hl.Addr().String() + " -n " + nqn + " -q " + h1.HostNQN()
	if err := topo.Poll(30*time.Second, func() (bool, error) {
		for _, c := range h1.NVMeCalls() {
			if strings.HasPrefix(c, want) {
				return true, nil
			}
		}
		return false, errors.New(strings.Join(h1.NVMeCalls(), "; "))
	}); err != nil {
		t.Fatalf("fake nvme never called %q: %v", want, err)
	}
	if _, err := h1.WaitMetric(10*time.Second, func(v float64) bool { return v == 1 },
		"inof_host_nvme_operations_total", "op", "connect", "result", "ok"); err != nil {
		t.Fatal(err)
	}

	// A cut at the access port takes the host's carrier too.
	mark := h1.LogSize()
	hl.Cut(t)
	if _, err := h1.WaitLog(mark, `msg="link down" interface=eth0`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	hl.Restore(t)
	if _, err := h1.WaitLog(mark, `msg="link up" interface=eth0`, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	// The probe device's NIC sends what the test asks.
	p := f.Node("p1").Probe(0)
	if err := p.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, nqn); err != nil {
		t.Fatal(err)
	}
	if err := h1.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}
