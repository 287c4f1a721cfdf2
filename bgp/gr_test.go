package bgp

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/selfexec"
)

// childReflector is a reflector in its own process, so it can be killed.
type childReflector struct {
	*selfexec.Child
	addr netip.Addr
	port uint16
}

func startChildReflector(t *testing.T, c childConfig) *childReflector {
	t.Helper()
	skipUnderRace(t)
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	child, line := selfexec.Start(t, childEnv+"="+string(raw))
	if line != "ready" {
		t.Fatalf("child reflector printed %q", line)
	}
	return &childReflector{Child: child, addr: netip.MustParseAddr(c.RouterID), port: c.Port}
}

// TestGracefulRestart: the reflector process is killed with SIGKILL and
// restarted (as a restarting speaker) within the restart time; the client
// that receives the records sees zero withdraw events throughout, and the
// records are refreshed from the new session.
func TestGracefulRestart(t *testing.T) {
	const n = 20
	cc, r, a, b := grStar(t, 60*time.Second, n)
	b.view.mu.Lock()
	eventsBefore := b.view.events
	b.view.mu.Unlock()

	r.Kill() // SIGKILL: no Cease, the TCP session just dies
	waitState(t, b, r.addr, func(s SessionState) bool { return s != StateEstablished })

	cc.Restarting = true
	startChildReflector(t, cc)
	waitEstablished(t, a, 1)
	waitEstablished(t, b, 1)
	// The restarted reflector re-learns a's records and sends them again;
	// each arrives as a fresh path replacing the stale one.
	b.view.waitFor(t, "records refreshed after the restart", func(m map[string]RecordEvent) bool {
		return b.view.events >= eventsBefore+n && len(m) == n
	})
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("client saw %d withdraw events across the reflector restart", w)
	}
	b.view.mu.Lock()
	defer b.view.mu.Unlock()
	for k, e := range b.view.records {
		if e.Stale {
			t.Errorf("record %x still stale after End-of-RIB", k)
		}
	}
}

// waitState waits until the session to addr satisfies ok.
func waitState(t *testing.T, n *node, peer netip.Addr, ok func(SessionState) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ns, err := n.Neighbors(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ns {
			if s.Address == peer && ok(s.State) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("session %s -> %s never reached the expected state", n.addr, peer)
}

// TestGracefulStopNotification: with RFC 8538 negotiated (Notification),
// a client that stops on purpose (Stop sends a Cease) and starts again as
// a restarting speaker, republishing its records, leaves the other
// clients with zero withdraws: the reflector keeps its records stale
// meanwhile. Without Notification, the same stop withdraws them at once.
func TestGracefulStopNotification(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(map[bool]string{true: "notification", false: "plain"}[notify], func(t *testing.T) {
			ctx := context.Background()
			gr := GracefulRestart{Enabled: true, RestartTime: 60 * time.Second, Notification: notify}
			r := startReflector(t, addr("127.0.0.1"), Options{GracefulRestart: gr})
			a := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: gr})
			b := startClient(t, addr("127.0.0.3"), Options{GracefulRestart: gr})
			connect(t, r, a, nil)
			connect(t, r, b, nil)
			const n = 10
			zone := publishTo(t, a, b, n)
			b.view.waitFor(t, "records", func(m map[string]RecordEvent) bool { return len(m) == n })

			a.Stop() // a Cease to the reflector
			waitState(t, r, a.addr, func(s SessionState) bool { return s != StateEstablished })
			if !notify {
				b.view.waitFor(t, "withdraws without RFC 8538", func(m map[string]RecordEvent) bool { return len(m) == 0 })
				return
			}
			if w := b.view.withdrawCount(); w != 0 {
				t.Fatalf("b saw %d withdraws when a stopped", w)
			}
			restarted := gr
			restarted.Restarting = true
			a2 := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: restarted})
			for i := range n {
				if err := a2.Publish(ctx, device(routerID(a2), i), zone); err != nil {
					t.Fatal(err)
				}
			}
			if err := a2.AddNeighbor(ctx, Neighbor{Address: r.addr, Port: r.port, LocalAddress: a2.addr}); err != nil {
				t.Fatal(err)
			}
			waitEstablished(t, a2, 1)
			marker := device(routerID(a2), n)
			if err := a2.Publish(ctx, marker, zone); err != nil {
				t.Fatal(err)
			}
			b.view.waitFor(t, "the restarted client's records", func(m map[string]RecordEvent) bool { return len(m) == n+1 })
			if w := b.view.withdrawCount(); w != 0 {
				t.Fatalf("b saw %d withdraws across a's stop and restart", w)
			}
		})
	}
}

// refuser stands in for a reflector that accepts a switch's connection and
// closes it at once: one that holds the switch down after BFD loss, or
// has not configured it yet while it starts. It counts the connections.
type refuser struct {
	ln       net.Listener
	accepted chan struct{}
}

func startRefuser(t *testing.T, at netip.AddrPort) *refuser {
	t.Helper()
	ln, err := net.Listen("tcp", at.String())
	if err != nil {
		t.Fatal(err)
	}
	r := &refuser{ln: ln, accepted: make(chan struct{}, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case r.accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return r
}

// waitRefused waits until n connections were refused.
func (r *refuser) waitRefused(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.accepted:
		case <-time.After(60 * time.Second):
			t.Fatalf("fewer than %d reconnects reached the refusing listener in a minute", n)
		}
	}
}

// grStar starts a reflector in its own process and two clients a and b,
// all with graceful restart (restart time rt); a publishes n records in a
// zone b subscribes to, and grStar returns once b holds them all.
func grStar(t *testing.T, rt time.Duration, n int) (cc childConfig, r *childReflector, a, b *node) {
	t.Helper()
	ctx := context.Background()
	rAddr := addr("127.0.0.1")
	cc = childConfig{RouterID: rAddr.String(), Port: freePort(t, rAddr), Clients: []string{"127.0.0.2", "127.0.0.3"},
		RestartTime: rt}
	r = startChildReflector(t, cc)
	gr := Options{GracefulRestart: GracefulRestart{Enabled: true, RestartTime: rt}}
	a = startClient(t, addr("127.0.0.2"), gr)
	b = startClient(t, addr("127.0.0.3"), gr)
	for _, c := range []*node{a, b} {
		if err := c.AddNeighbor(ctx, Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}); err != nil {
			t.Fatal(err)
		}
	}
	publishTo(t, a, b, n)
	b.view.waitFor(t, "the records at the receiving client", func(m map[string]RecordEvent) bool { return len(m) == n })
	return cc, r, a, b
}

// killedWithRefuser starts grStar's fabric, kills the reflector and puts a
// refuser on its port.
func killedWithRefuser(t *testing.T, rt time.Duration) (cc childConfig, b *node, ref *refuser) {
	t.Helper()
	cc, r, _, b := grStar(t, rt, refusedRecords)
	r.Kill()
	waitState(t, b, r.addr, func(s SessionState) bool { return s != StateEstablished })
	return cc, b, startRefuser(t, netip.AddrPortFrom(r.addr, r.port))
}

const refusedRecords = 20

// TestRefusedReconnectKeepsStaleRecords: the only reflector is killed and
// its address accepts the client's reconnects and closes them (as a
// reflector does for a switch it holds down, or has not configured yet).
// GoBGP drops a restarting neighbor's stale routes at the first such
// attempt (OpenSent to Idle), long before the restart time; the client's
// record watch must hold those withdraws (without the hold, every record
// was withdrawn at the first refused reconnect in 2 of 2 runs), and the
// reflector, back, must refresh them all with no withdraw.
func TestRefusedReconnectKeepsStaleRecords(t *testing.T) {
	cc, b, ref := killedWithRefuser(t, 120*time.Second)
	ref.waitRefused(t, 2)
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the client saw %d withdraws after refused reconnects, within the restart time", w)
	}
	ref.ln.Close()
	b.view.mu.Lock()
	eventsBefore := b.view.events
	b.view.mu.Unlock()
	cc.Restarting = true
	startChildReflector(t, cc)
	waitEstablished(t, b, 1)
	b.view.waitFor(t, "records refreshed after the restart", func(m map[string]RecordEvent) bool {
		return b.view.events >= eventsBefore+refusedRecords && len(m) == refusedRecords
	})
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("the client saw %d withdraws across the refused reconnects and the restart", w)
	}
}

// TestRefusedReconnectHoldEnds: the hold of
// TestRefusedReconnectKeepsStaleRecords lasts the restart time, not
// longer: a reflector that never comes back loses its records then.
func TestRefusedReconnectHoldEnds(t *testing.T) {
	_, b, ref := killedWithRefuser(t, 5*time.Second)
	ref.waitRefused(t, 1)
	b.view.waitFor(t, "every record withdrawn once the restart time is over", func(m map[string]RecordEvent) bool { return len(m) == 0 })
	if w := b.view.withdrawCount(); w != refusedRecords {
		t.Fatalf("the client saw %d withdraws, want %d", w, refusedRecords)
	}
}

// TestRestartedClientLateReflectorKeepsRecords: a switch stopped
// gracefully (both reflectors keep its records stale) comes back as a
// restarting speaker; one reflector's session comes up and sends
// End-of-RIB, which ends GoBGP's restart sync, and the other's session only
// later, as a normal one. The switch must send that reflector its records
// before its End-of-RIB: GoBGP sent its table at once, filtered by the
// reflector's route-target memberships, which it did not hold yet, so the
// End-of-RIB came first and the reflector dropped every stale record,
// withdrawn from its other clients until the records followed ms later
// (soak seed 2266060917834395947 step 66: 6 × reason 7 at remote hosts).
func TestRestartedClientLateReflectorKeepsRecords(t *testing.T) {
	const n = 20
	ctx := context.Background()
	gr := GracefulRestart{Enabled: true, RestartTime: 60 * time.Second, Notification: true}
	r1 := startReflector(t, addr("127.0.0.1"), Options{GracefulRestart: gr})
	r2 := startReflector(t, addr("127.0.0.4"), Options{GracefulRestart: gr})
	a := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: gr})
	b := startClient(t, addr("127.0.0.3"), Options{GracefulRestart: gr})
	connect(t, r1, a, nil)
	connect(t, r2, a, nil)
	connect(t, r1, b, nil) // b hears a only through r1
	publishTo(t, a, b, n)
	b.view.waitFor(t, "a's records at b", func(m map[string]RecordEvent) bool { return len(m) == n })
	waitEstablished(t, a, 2)

	a.Stop() // Cease with the N bit: both reflectors keep a's records stale
	waitState(t, b, r1.addr, func(s SessionState) bool { return s == StateEstablished })

	restarted := gr
	restarted.Restarting = true
	a2 := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: restarted})
	if err := a2.AddNeighbor(ctx, Neighbor{Address: r2.addr, Port: r2.port, LocalAddress: a2.addr}); err != nil {
		t.Fatal(err)
	}
	zone := record.ZoneRT(testASN, "prod")
	for i := range n {
		if err := a2.Publish(ctx, device(routerID(a2), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	waitEstablished(t, a2, 1)
	waitNeighbors(t, a2, "the restart sync over", func([]NeighborStatus) bool { return !a2.restartPending(ctx) })
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("b saw %d withdraws before a's late session to r1 came up", w)
	}
	if err := a2.AddNeighbor(ctx, Neighbor{Address: r1.addr, Port: r1.port, LocalAddress: a2.addr}); err != nil {
		t.Fatal(err)
	}
	waitEstablished(t, a2, 2)
	b.view.waitFor(t, "a's records refreshed at b", func(m map[string]RecordEvent) bool {
		if len(m) != n {
			return false
		}
		for _, e := range m {
			if e.Stale {
				return false
			}
		}
		return true
	})
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("b saw %d withdraws of a's records when a's late session to r1 came up", w)
	}
}
