package bgp

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
)

func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100000A:00B3":                         "10.0.0.1",
		"0100007F:1F90":                         "127.0.0.1",
		"0000000000000000FFFF00000B00000A:C350": "10.0.0.11", // IPv4-mapped
		"00000000000000000000000001000000:0016": "::1",
	} {
		got, ok := procAddr(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("procAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := procAddr("zz:00"); ok {
		t.Error("garbage parsed")
	}
}

// TestShutdownSessionsEndsOwnConnection: a connection this process holds is
// found through /proc and shut down; the far end reads EOF at once.
func TestShutdownSessionsEndsOwnConnection(t *testing.T) {
	_, far := loopbackConn(t, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"))
	n, err := shutdownSessions(netip.Addr{}, netip.MustParseAddr("127.0.0.1"))
	if err != nil || n == 0 {
		t.Fatalf("shut down %d connections: %v", n, err)
	}
	far.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := far.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("far end read %v, want EOF", err)
	}
}

// TestBFDLossLeavesTheSwitchItsRoutes: a reflector that loses BFD to a
// switch ends the session without a Hard Reset, so that the switch (cut
// off, not gone) keeps the reflector's routes under graceful restart: no
// withdraw at the switch, before or after the session comes back. With
// GoBGP's goodbye the switch dropped every route of the reflector (found by
// the soak, TestPrivSoakUplinkFlapKeepsRemoteTargets).
func TestBFDLossLeavesTheSwitchItsRoutes(t *testing.T) {
	skipUnderRace(t)
	gr := GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}
	rm := bfd.NewManager(bfd.ManagerOptions{})
	t.Cleanup(func() { rm.Close() })
	// Confirmation off: the test drives a confirmed down with onBFD.
	r := startReflector(t, addr("127.0.0.1"), Options{BFD: rm, GracefulRestart: gr, BFDConfirm: BFDConfirm{Disabled: true}})
	a := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: gr})
	b := startClient(t, addr("127.0.0.3"), Options{GracefulRestart: gr})
	slow := &NeighborBFD{DesiredMinTx: time.Second, RequiredMinRx: time.Second, DetectMult: 10}
	connect(t, r, a, func(n *Neighbor) {
		if n.Address == a.addr { // the reflector's side
			n.BFD, n.LocalAddress = slow, r.addr
		}
	})
	connect(t, r, b, nil)
	waitEstablished(t, a, 1)
	waitEstablished(t, b, 1)
	zone := record.ZoneRT(testASN, "prod")
	if err := a.Subscribe(t.Context(), zone); err != nil {
		t.Fatal(err)
	}
	rec := device(routerID(b), 0)
	if err := b.Publish(t.Context(), rec, zone); err != nil {
		t.Fatal(err)
	}
	a.view.waitFor(t, "b's record at a", func(m map[string]RecordEvent) bool { return len(m) == 1 })

	key := bfd.SessionKey{Local: r.addr, Peer: a.addr}
	r.onBFD(bfd.StateChange{Key: key, Old: bfd.Up, New: bfd.Down, Diag: bfd.DiagControlExpired})
	waitState(t, a, r.addr, func(s SessionState) bool { return s != StateEstablished })
	r.onBFD(bfd.StateChange{Key: key, Old: bfd.Down, New: bfd.Up})
	if !sessionUp(t, a, r, 2*time.Minute) {
		t.Fatal("the session never came back")
	}
	a.view.waitFor(t, "b's record at a, fresh", func(m map[string]RecordEvent) bool {
		e, ok := m[string(rec.Key())]
		return ok && !e.Stale
	})
	if w := a.view.withdrawCount(); w != 0 {
		t.Fatalf("the switch saw %d withdraws: the reflector's goodbye flushed its routes", w)
	}
}
