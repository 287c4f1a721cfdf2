package bgp

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/integration/selfexec"
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
	ctx := context.Background()
	rAddr := addr("127.0.0.1")
	cc := childConfig{RouterID: rAddr.String(), Port: freePort(t, rAddr), Clients: []string{"127.0.0.2", "127.0.0.3"},
		RestartTime: 60 * time.Second}
	r := startChildReflector(t, cc)
	gr := Options{GracefulRestart: GracefulRestart{Enabled: true, RestartTime: 60 * time.Second}}
	a := startClient(t, addr("127.0.0.2"), gr)
	b := startClient(t, addr("127.0.0.3"), gr)
	for _, c := range []*node{a, b} {
		if err := c.AddNeighbor(ctx, Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}); err != nil {
			t.Fatal(err)
		}
	}
	zone := ZoneRT(testASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	count := func(want int) func(map[string]RecordEvent) bool {
		return func(m map[string]RecordEvent) bool { return len(m) == want }
	}
	b.view.waitFor(t, "records before the kill", count(n))
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
			zone := ZoneRT(testASN, "prod")
			if err := b.Subscribe(ctx, zone); err != nil {
				t.Fatal(err)
			}
			const n = 10
			for i := range n {
				if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
					t.Fatal(err)
				}
			}
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
