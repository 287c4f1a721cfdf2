package bgp_test

import (
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestBFDLossLeavesTheSwitchItsRoutes: a reflector that loses BFD to a
// switch ends the session without a Hard Reset, so that the switch (cut
// off, not gone) keeps the reflector's routes under graceful restart: no
// withdraw at the switch, before or after the session comes back. With
// GoBGP's goodbye the switch dropped every route of the reflector (found by
// the soak, TestPrivSoakUplinkFlapKeepsRemoteTargets).
func TestBFDLossLeavesTheSwitchItsRoutes(t *testing.T) {
	bgptest.SkipUnderRace(t)
	gr := bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}
	rm := bfd.NewManager(bfd.ManagerOptions{})
	t.Cleanup(func() { rm.Close() })
	// Confirmation off: the test drives a confirmed down with OnBFD.
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{BFD: rm, GracefulRestart: gr, BFDConfirm: bgp.BFDConfirm{Disabled: true}})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{GracefulRestart: gr})
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{GracefulRestart: gr})
	slow := &bgp.NeighborBFD{DesiredMinTx: time.Second, RequiredMinRx: time.Second, DetectMult: 10}
	bgptest.Connect(t, r, a, func(n *bgp.Neighbor) {
		if n.Address == a.Addr { // the reflector's side
			n.BFD, n.LocalAddress = slow, r.Addr
		}
	})
	bgptest.Connect(t, r, b, nil)
	bgptest.WaitEstablished(t, a, 1)
	bgptest.WaitEstablished(t, b, 1)
	zone := record.ZoneRT(bgptest.ASN, "prod")
	if err := a.Subscribe(t.Context(), zone); err != nil {
		t.Fatal(err)
	}
	rec := bgptest.Device(b.RouterID(), 0)
	if err := b.Publish(t.Context(), rec, zone); err != nil {
		t.Fatal(err)
	}
	a.View.WaitFor(t, "b's record at a", func(m map[string]bgp.RecordEvent) bool { return len(m) == 1 })

	key := bfd.SessionKey{Local: r.Addr, Peer: a.Addr}
	r.OnBFD(bfd.StateChange{Key: key, Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagControlExpired})
	bgptest.WaitState(t, a, r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	r.OnBFD(bfd.StateChange{Key: key, Old: bfd.Down, New: bfd.Up})
	if !sessionUp(t, a, r, 2*time.Minute) {
		t.Fatal("the session never came back")
	}
	a.View.WaitFor(t, "b's record at a, fresh", func(m map[string]bgp.RecordEvent) bool {
		e, ok := m[string(rec.Key())]
		return ok && !e.Stale
	})
	if w := a.View.Withdraws(); w != 0 {
		t.Fatalf("the switch saw %d withdraws: the reflector's goodbye flushed its routes", w)
	}
}
