//go:build privileged

package fabric

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/l2proto"
)

// TestPrivSpoofedRegistrationOnUplink: a registration arriving on a switch
// interface that is not an access port (an uplink, say) is counted and
// dropped: the switch registers nothing and publishes nothing for it.
func TestPrivSpoofedRegistrationOnUplink(t *testing.T) {
	requireSwitchRole(t)
	frames, err := readPcap(filepath.Join(captures, "host-register.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	h := topo.Device{Name: "h1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1", Address: "10.78.0.2/24"}}}
	f := topo.Start(t, topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1"}, Devices: []topo.Device{h}})
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	leaf := f.Node("leaf1")
	spoofer := netns.New(t, "spoof")
	netns.Veth(t, leaf.NS, "up9", spoofer, "eth0")
	var link *l2proto.PacketLink
	if err := spoofer.Do(func() (err error) { link, err = l2proto.ListenPacket("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	// Resent until counted: the new veth needs a moment to carry frames.
	err = topo.Poll(wait, func() (bool, error) {
		if err := link.WriteFrame(frames[0]); err != nil {
			return false, err
		}
		time.Sleep(100 * time.Millisecond)
		v, err := leaf.Metric("inof_switch_frames_dropped_total", "reason", "not-access-port")
		return v >= 1, err
	})
	if err != nil {
		t.Fatalf("the frame on the uplink was not counted: %v", err)
	}
	for _, m := range []string{"inof_switch_registrations", "inof_switch_device_records"} {
		if v, err := leaf.Metric(m); err != nil || v != 0 {
			t.Fatalf("%s = %v (%v) after a registration on a non-access port", m, v, err)
		}
	}
}
