package bgp_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/syncbuf"
)

// TestLostReflectorDoesNotShadow: two reflectors serve two clients with
// graceful restart. The reflector with the lower address (whose copies win
// GoBGP's tie-break) is killed; its routes would be kept stale for the
// whole restart time and shadow the other reflector's newer copies. A
// record changed after the kill must reach the receiving client through the
// other reflector long before the restart time (120 s here), with no
// withdraw of the unchanged records; and the killed reflector, back, serves
// again.
func TestLostReflectorDoesNotShadow(t *testing.T) {
	ctx := context.Background()
	lf := startLossFabric(t, bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}})
	c1, r1, r2, a, b, zone := lf.c1, lf.r1, lf.r2, lf.a, lf.b, lf.zone

	r1.Kill() // SIGKILL: the sessions die, graceful restart keeps r1's routes
	bgptest.WaitState(t, b, r1.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	bgptest.WaitState(t, a, r1.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	killed := time.Now()

	changed := bgptest.Device(a.RouterID(), 0)
	changed.State, changed.Reason, changed.Changed = inof.StateInactive, inof.ReasonLinkDown, time.UnixMilli(3000)
	if err := a.Publish(ctx, changed, zone); err != nil {
		t.Fatal(err)
	}
	key := string(changed.Key())
	b.View.WaitFor(t, "the change, through the other reflector", func(m map[string]bgp.RecordEvent) bool {
		d, ok := m[key].Record.(*record.Device)
		return ok && d.State == inof.StateInactive
	})
	t.Logf("change seen at the client %v after the kill (restart time 120 s)", time.Since(killed).Round(time.Millisecond))
	b.View.WaitFor(t, "every record from the surviving reflector", allFrom(r2.addr, lossRecords))
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("the client saw %d withdraws while the other reflector served", w)
	}

	// r1 comes back (restarting) and the client peers with it again.
	c1.Restarting = true
	startChildReflector(t, c1)
	bgptest.WaitEstablished(t, b, 2)
	if got := b.Stats(); got.Malformed != 0 {
		t.Fatalf("stats %+v", got)
	}
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("the client saw %d withdraws after the reflector came back", w)
	}
}

// TestLostReflectorWaitsForReturningOne: the soak's seed
// 4501343603921199704 step 16 in two reflectors and two clients. The
// reflector that serves (r2) has just come back from a restart and has not
// re-learned the publishing client's records yet when the other (r1, whose
// copies are best) is lost: the receiving client drops r1 for r2, which
// lacks the records. Their withdraws must be held for the settle time of
// r2's return, and r2 re-learning them within it must leave the client
// with every record and no withdraw.
func TestLostReflectorWaitsForReturningOne(t *testing.T) {
	ctx := context.Background()
	// The settle time is far longer than the test: only r2 re-learning
	// the records ends the hold.
	lf := startLossFabric(t, bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second, SettleTime: 10 * time.Minute}})
	c2, r1, r2, a, b := lf.c2, lf.r1, lf.r2, lf.a, lf.b

	// r2 restarts without a's records: a is not its neighbor meanwhile.
	if err := a.RemoveNeighbor(ctx, r2.addr); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitReceived(t, b, map[netip.Addr]uint64{r1.addr: lossRecords, r2.addr: 0})
	r2.Kill()
	bgptest.WaitState(t, b, r2.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	c2.Restarting = true
	r2 = startChildReflector(t, c2)
	bgptest.WaitNeighbors(t, b, "r2 back with End-of-RIB", func(ns []bgp.NeighborStatus) bool {
		for _, s := range ns {
			if s.Address == r2.addr {
				return s.State == bgp.StateEstablished && s.EndOfRIB
			}
		}
		return false
	})

	// r1 is lost: b drops it for r2, which holds none of the records.
	r1.Kill()
	bgptest.WaitState(t, b, r1.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	// b's records, best from r1 until now, are from nowhere once b has
	// dropped r1: without the hold they are withdrawn.
	bgptest.WaitNeighbors(t, b, "r1 dropped", func([]bgp.NeighborStatus) bool { return b.ReflectorLost(r1.addr) })
	if got := b.View.Withdraws(); got != 0 {
		t.Fatalf("the client saw %d withdraws when it dropped r1 for a reflector back moments ago", got)
	}

	// r2 re-learns them.
	if err := a.AddNeighbor(ctx, bgp.Neighbor{Address: r2.addr, Port: r2.port, LocalAddress: a.Addr}); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "every record from the returned reflector", allFrom(r2.addr, lossRecords))
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("the client saw %d withdraws; the returned reflector re-learned every record within its settle time", w)
	}
}

// TestLostReflectorNotDroppedForStalledOne: the soak's seed
// 12092418969741957540 step 4 in two reflectors and two clients. The
// reflector that would serve (r2) hangs: its sessions stay established
// until their hold time runs out, but it delivers nothing. A record changes
// meanwhile and reaches the receiving client only through r1; then r1 is
// lost. Dropping r1's routes for r2's would take the client back to r2's
// older copy (in the soak: records of memberships taken while cut off from
// one reflector, gone when the other restarted, and hosts told their
// targets were lost). The client must keep r1's routes, and drop them for
// r2's once r2 delivers again.
func TestLostReflectorNotDroppedForStalledOne(t *testing.T) {
	ctx := context.Background()
	var logged syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	lf := startLossFabric(t, bgp.Options{Logger: logger, GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: 120 * time.Second}})
	r1, r2, a, b, zone := lf.r1, lf.r2, lf.a, lf.b, lf.zone

	if err := r2.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	changed := bgptest.Device(a.RouterID(), 0)
	changed.State, changed.Reason, changed.Changed = inof.StateInactive, inof.ReasonLinkDown, time.UnixMilli(3000)
	if err := a.Publish(ctx, changed, zone); err != nil {
		t.Fatal(err)
	}
	key := string(changed.Key())
	isChanged := func(m map[string]bgp.RecordEvent) bool {
		d, ok := m[key].Record.(*record.Device)
		return ok && d.State == inof.StateInactive
	}
	b.View.WaitFor(t, "the change, through r1", isChanged)
	// r2's keepalives stop: after the interval and the margin its session
	// to b reads as stalled, while still established (hold time 9 s).
	deadline := time.Now().Add(30 * time.Second)
	for bgp.StalledSession(b.Addr, r2.addr, 3*time.Second) == "" {
		if time.Now().After(deadline) {
			t.Fatal("b's session to the hung r2 never read as stalled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r1.Kill()
	bgptest.WaitState(t, b, r1.addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(logged.String(), `msg="reflector lost; keeping its routes (no other reflector serves)" router_id=127.0.0.3 neighbor=127.0.0.1`) {
		if strings.Contains(logged.String(), `msg="reflector lost; dropping its routes, another reflector serves" router_id=127.0.0.3`) {
			t.Fatalf("b dropped r1 for the hung r2:\n%s", logged.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never judged r1's loss:\n%s", logged.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !isChanged(b.View.Records()) {
		t.Fatal("b went back to r2's older copy of the changed record")
	}

	// r2 delivers again (before its hold time ran out at b, or after, back
	// with its table): b takes it, and the changed record stays.
	if err := r2.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	b.View.WaitFor(t, "every record from r2, the changed one too", func(m map[string]bgp.RecordEvent) bool {
		return allFrom(r2.addr, lossRecords)(m) && isChanged(m)
	})
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("the client saw %d withdraws", w)
	}
}

// lossFabric is two child reflectors (r1 with the lower address, whose
// copies win GoBGP's tie-break) serving clients a and b; a published
// lossRecords records in zone, which b subscribes to.
type lossFabric struct {
	c1, c2 childConfig
	r1, r2 *childReflector
	a, b   *bgptest.Node
	zone   record.RouteTarget
}

const lossRecords = 10

// startLossFabric starts it with the clients' options opts and waits until
// b holds every record best from r1 and both reflectors' copies.
func startLossFabric(t *testing.T, opts bgp.Options) lossFabric {
	t.Helper()
	ctx := context.Background()
	r1Addr, r2Addr := bgptest.Addr("127.0.0.1"), bgptest.Addr("127.0.0.4")
	clients := []string{"127.0.0.2", "127.0.0.3"}
	lf := lossFabric{
		c1:   childConfig{RouterID: r1Addr.String(), Port: bgptest.FreePort(t, r1Addr), Clients: clients, RestartTime: 120 * time.Second},
		c2:   childConfig{RouterID: r2Addr.String(), Port: bgptest.FreePort(t, r2Addr), Clients: clients, RestartTime: 120 * time.Second},
		zone: record.ZoneRT(bgptest.ASN, "prod"),
	}
	lf.r1, lf.r2 = startChildReflector(t, lf.c1), startChildReflector(t, lf.c2)
	lf.a = bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), opts)
	lf.b = bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), opts)
	for _, c := range []*bgptest.Node{lf.a, lf.b} {
		for _, r := range []*childReflector{lf.r1, lf.r2} {
			if err := c.AddNeighbor(ctx, bgp.Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.Addr}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bgptest.WaitEstablished(t, lf.a, 2)
	bgptest.WaitEstablished(t, lf.b, 2)
	if err := lf.b.Subscribe(ctx, lf.zone); err != nil {
		t.Fatal(err)
	}
	for i := range lossRecords {
		if err := lf.a.Publish(ctx, bgptest.Device(lf.a.RouterID(), i), lf.zone); err != nil {
			t.Fatal(err)
		}
	}
	lf.b.View.WaitFor(t, "every record best from the lower-addressed reflector", allFrom(lf.r1.addr, lossRecords))
	// The other reflector's copies must have arrived too before r1 goes:
	// best from r1 says nothing of them, and a record r2 has not reflected
	// yet is withdrawn when b drops r1 (TestLostReflectorDoesNotShadow
	// used to fail so, "the client saw N withdraws", on a loaded machine).
	bgptest.WaitReceived(t, lf.b, map[netip.Addr]uint64{lf.r1.addr: lossRecords, lf.r2.addr: lossRecords})
	return lf
}

// allFrom: a view holds n records, each best from r and not stale.
func allFrom(r netip.Addr, n int) func(map[string]bgp.RecordEvent) bool {
	return func(m map[string]bgp.RecordEvent) bool {
		if len(m) != n {
			return false
		}
		for _, e := range m {
			if e.Source != r || e.Stale {
				return false
			}
		}
		return true
	}
}
