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
