//go:build privileged

package fabric

import (
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/l2proto"
)

// snsdACK builds the ACK nvme-snsd sends for accepted notifications (§7):
// one root 0x22 per notification echoing sub-TLVs 1, 2 and the raw 5.
func snsdACK(src []byte, ns []snsdNotice) []byte {
	var roots []byte
	for _, n := range ns {
		t, h := n.Target.As4(), n.Host.As4()
		roots = append(roots, 0x22, 0x00, 21)
		roots = append(roots, 0x01, 0x00, 0x04)
		roots = append(roots, t[:]...)
		roots = append(roots, 0x02, 0x00, 0x04)
		roots = append(roots, h[:]...)
		roots = append(roots, 0x05, 0x00, 0x04)
		roots = append(roots, n.Seq...)
	}
	fr := append(append(append([]byte(nil), snsdGroup...), src...), 0x88, 0xA7, 1, 0)
	fr = binary.BigEndian.AppendUint16(fr, uint16(len(roots)))
	fr = append(fr, 0, 0, 0, 0)
	return append(fr, roots...)
}

// TestPrivSnsdCapturedHost replays nvme-snsd's captured registration and
// zone query (host-register.pcap: MAC a6:b9:d7:5d:f8:ea, 10.77.0.2, RoCE)
// on a leaf2 access port from a raw socket, brings an NVMe/RoCE target up
// on leaf1, then cuts its link. Every notify frame the host receives must
// pass nvme-snsd's acceptance rules (snsd-wire.md §5–§6: length,
// destination 01:80:C2:00:00:0D, header version, tlv_len, root 0x21,
// sub-TLVs 1,2,5,6,7,8 with their lengths, the host's own address) with
// nothing dropped, and carry the right content: active, then inactive
// reason 1. The host ACKs each as snsd does, byte for byte.
func TestPrivSnsdCapturedHost(t *testing.T) {
	requireSwitchRole(t)
	frames, err := readPcap(filepath.Join(captures, "host-register.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) < 2 || binary.BigEndian.Uint16(frames[0][12:]) != 0x88CC || frames[1][22] != 0x23 {
		t.Fatal("host-register.pcap does not start with snsd's LLDPDU and zone query")
	}
	tgtDev := topo.Device{Name: "tgt", NICs: []topo.NIC{{Switch: "leaf1", Role: "target", Protocol: "rdma", Port: 4420, NQN: subNQN}}}
	snsd := topo.Device{Name: "snsd", Probe: true, NICs: []topo.NIC{{Switch: "leaf2", Address: "10.77.0.2/24", MAC: "a6:b9:d7:5d:f8:ea"}}}
	f := topo.Start(t, topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{tgtDev, snsd}, Passive: []string{"tgt"}})
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	p := f.Node("snsd").Probe(0)
	p.SetAutoAck(false)
	hostIP := []netip.Addr{netip.MustParseAddr("10.77.0.2")}
	for _, fr := range frames[:2] {
		if err := p.SendRaw(fr); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Node("leaf2").WaitMetric(wait, func(v float64) bool { return v == 1 }, "inof_switch_registrations"); err != nil {
		t.Fatal(err)
	}
	tgt := f.Node("tgt")
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	tl := tgt.Links[0]

	h := &snsdHost{t: t, p: p, ips: hostIP, target: tl.Addr()}
	h.expect(1, 0)
	tl.Cut(t)
	h.expect(0, uint32(inof.ReasonLinkDown))
	t.Logf("%d notify frames checked against nvme-snsd's acceptance rules", h.checked)
}

// snsdHost reads notify frames at a probe as nvme-snsd would: every frame
// must pass its acceptance rules (snsd-wire.md §5–§6) with nothing
// dropped, be of version 1 with exactly sub-TLVs 1,2,5,6,7,8, and name
// target as a RoCE target on port 4420; each is ACKed as snsd does.
type snsdHost struct {
	t       *testing.T
	p       *topo.Probe
	ips     []netip.Addr // the host's own addresses
	target  netip.Addr
	checked int // notify frames checked
}

// expect reads notify frames until one carries state, which must come
// with reason.
func (h *snsdHost) expect(state, reason uint32) {
	t := h.t
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r, ok := h.p.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("no notification with state %d", state)
		}
		if len(r.Raw) < 23 || binary.BigEndian.Uint16(r.Raw[12:]) != 0x88A7 || r.Raw[22]&0x3F != 0x21 {
			continue // not a notification (an echo of our own frames is never read)
		}
		ns, dropped, err := snsdAccept(r.Raw, h.ips)
		if err != nil || len(dropped) > 0 {
			t.Fatalf("nvme-snsd would drop this frame (%v; dropped roots %v):\n% x", err, dropped, r.Raw)
		}
		for _, n := range ns {
			if n.Version != 1 || !slices.Equal(n.Types, []uint8{1, 2, 5, 6, 7, 8}) {
				t.Errorf("notification version %d sub-TLVs %v, want version 1 and exactly 1,2,5,6,7,8", n.Version, n.Types)
			}
			if n.Target != h.target || n.Role != uint8(inof.RoleTarget) || n.Protocol != uint8(inof.ProtocolRoCE) || n.Port != 4420 {
				t.Errorf("notification %+v, want target %s role 1 protocol 1 port 4420", n, h.target)
			}
			if n.State > 1 {
				t.Errorf("state %d: snsd acts on 0 and 1 only", n.State)
			}
		}
		h.checked++
		if err := h.p.SendRaw(snsdACK(h.p.MAC(), ns)); err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.State == state {
				if n.Reason != reason {
					t.Fatalf("state %d with reason %d, want %d", state, n.Reason, reason)
				}
				return
			}
		}
	}
}

// TestPrivLinkDownLatency measures, over 200 trials, the time from setting
// the target's access port down on leaf1 (netlink, in leaf1's namespace) to
// the inactive notification read at a raw socket of a host on leaf2, and
// records p50, p99 and the extremes. Each trial then sets the port up, the
// target registers again and the host waits for the active notification.
// Only a generous bound is asserted; the figures are printed.
func TestPrivLinkDownLatency(t *testing.T) {
	requireSwitchRole(t)
	const trials = 200
	f := topo.Start(t, topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "tp", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "hp", Probe: true, NICs: []topo.NIC{{Switch: "leaf2"}}},
		}})
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	tp, hp := f.Node("tp").Probe(0), f.Node("hp").Probe(0)
	if err := hp.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := hp.Query(); err != nil {
		t.Fatal(err)
	}
	if err := tp.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, subNQN); err != nil {
		t.Fatal(err)
	}
	isTarget := func(state inof.State) func(l2proto.Notification) bool {
		return func(n l2proto.Notification) bool { return n.Target == tp.Addr() && n.State == state }
	}
	// awaitActive waits for the target's active notification, registering
	// the target again every second (its first LLDPDU after link up may
	// race the switch seeing carrier back).
	awaitActive := func() {
		t.Helper()
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			if _, err := hp.WaitNotification(time.Second, isTarget(inof.StateActive)); err == nil {
				return
			}
			if err := tp.Reregister(); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("the target never became active at the host")
	}
	awaitActive()
	lat := make([]time.Duration, 0, trials)
	for i := 0; i < trials; i++ {
		at := tp.Link.Cut(t)
		got, err := hp.WaitNotification(wait, isTarget(inof.StateInactive))
		if err != nil {
			t.Fatalf("trial %d: %v", i, err)
		}
		if got.N.Reason != inof.ReasonLinkDown {
			t.Fatalf("trial %d: inactive with reason %v, want link-down", i, got.N.Reason)
		}
		lat = append(lat, got.At.Sub(at))
		tp.Link.Restore(t)
		if err := tp.Reregister(); err != nil {
			t.Fatal(err)
		}
		awaitActive()
	}
	if n := hp.Lost(); n != 0 {
		t.Logf("probe frames lost (not read in time): %d", n)
	}
	report.Record(t, "link-down-latency (cut → inactive frame at the remote probe host, reason 1)", lat)
}
