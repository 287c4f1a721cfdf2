//go:build privileged

package fabric

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// TestPrivHostAfterTargetToldWithoutQuery (docs/realhost.md finding 6): the
// target registers on leaf1 first; then a host registers whose zone query
// the switch never heard (it sends only its LLDPDU, as an nvme-snsd host
// whose query went out before the agent listened). Its registration alone
// must tell it the target, through the reliable notifier; a host that
// registers and queries at once is told the target once, not twice, and
// so is one whose query is read after its registration told it; so is a
// host that registered before the target. When the target's link goes
// down each host has been told "active" exactly once before "inactive".
func TestPrivHostAfterTargetToldWithoutQuery(t *testing.T) {
	requireSwitchRole(t)
	f := topo.Start(t, topo.Spec{Reflectors: []string{"rr1"}, Switches: []string{"leaf1"},
		Devices: []topo.Device{target(false), probeHost("early", "leaf1"), probeHost("quiet", "leaf1"), probeHost("asker", "leaf1"),
			probeHost("late", "leaf1")},
		Passive: []string{"tgt"}})
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	early, quiet, asker, late := f.Node("early").Probe(0), f.Node("quiet").Probe(0), f.Node("asker").Probe(0), f.Node("late").Probe(0)
	subscribe(t, early)
	tgt := f.Node("tgt")
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	tl := tgt.Links[0]
	// The early host hearing the target shows leaf1 took its registration.
	told := map[*topo.Probe]uint32{} // the sequence number of each host's "active"
	told[early] = await(t, early, tl.Addr(), inof.StateActive).N.Seq

	if err := quiet.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	got := await(t, quiet, tl.Addr(), inof.StateActive)
	if got.N.Port != 4420 || got.N.NQN != subNQN {
		t.Errorf("the quiet host was told %+v, want port 4420 and %s", got.N, subNQN)
	}
	told[quiet] = got.N.Seq
	subscribe(t, asker)
	told[asker] = await(t, asker, tl.Addr(), inof.StateActive).N.Seq

	// A host whose query, sent right after its LLDPDU (no other LLDPDU
	// follows: SetLLDP), is read after its registration told it the
	// target: the query adds nothing. A query for an address nobody
	// registered, from the same port, is handled after it; once leaf1
	// counts that one, the first was handled.
	if err := late.SetLLDP(2*time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if err := late.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	told[late] = await(t, late, tl.Addr(), inof.StateActive).N.Seq
	if err := late.Query(); err != nil {
		t.Fatal(err)
	}
	own := late.Addr()
	late.SetAddr(netip.MustParseAddr("10.99.0.99"))
	if err := late.Query(); err != nil {
		t.Fatal(err)
	}
	late.SetAddr(own)
	if _, err := f.Node("leaf1").WaitMetric(wait, func(v float64) bool { return v >= 1 },
		"inof_switch_frames_dropped_total", "reason", "query-unregistered-host"); err != nil {
		t.Fatal(err)
	}

	tl.Cut(t)
	for _, p := range []*topo.Probe{early, quiet, asker, late} {
		// await consumed the first "active"; any other one before the
		// "inactive" (not a retransmitted copy of it: the same sequence
		// number) is a duplicate.
		deadline := time.Now().Add(wait)
		for done := false; !done; {
			r, ok := p.Next(time.Until(deadline))
			if !ok {
				t.Fatalf("%s: no inactive notification for %s after its link went down", p.Link.Device.Name, tl.Addr())
			}
			for _, n := range topo.Notices([]topo.Received{r}) {
				if n.N.Host != p.Addr() || n.N.Target != tl.Addr() {
					continue
				}
				if n.N.State == inof.StateActive && n.N.Seq != told[p] {
					t.Errorf("%s was told %s active a second time", p.Link.Device.Name, tl.Addr())
					continue
				}
				if n.N.State == inof.StateActive {
					continue
				}
				if n.N.Reason != inof.ReasonLinkDown {
					t.Errorf("%s: inactive with reason %v, want %v", p.Link.Device.Name, n.N.Reason, inof.ReasonLinkDown)
				}
				done = true
			}
		}
	}
}
