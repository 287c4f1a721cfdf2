package bgp_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/internal/selfexec"
	"github.com/openinof/inof/internal/syncbuf"
)

// TestReconnectWhenClosedWithBFDUp: a reflector that does not take a
// switch yet (here disabled; in a fabric, a switch it declared gone until
// BFD is back) closes the switch's connection before its session comes
// up. With BFD towards that reflector up, the switch tries again after a
// short idle hold rather than GoBGP's 5 s: the log says so, and the
// session is back once the reflector takes it. (A reflector holds a
// switch it declared gone disabled until BFD is up: a restarted switch's
// connection just before that was closed and waited GoBGP's 5 s.)
// Addresses 127.0.48.x: no other test's BFD.
func TestReconnectWhenClosedWithBFDUp(t *testing.T) {
	var logs syncbuf.Buffer
	am := bfd.NewManager(bfd.ManagerOptions{})
	t.Cleanup(am.Close)
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.48.1"), bgp.Options{})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.48.2"), bgp.Options{BFD: am,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	fast := &bgp.NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}
	bgptest.Connect(t, r, a, func(n *bgp.Neighbor) {
		if n.Address == r.Addr { // a's side
			n.BFD = fast
		}
	})
	selfexec.Start(t, bfdChildEnv+"="+r.Addr.String()+","+a.Addr.String())
	waitBFDState(t, am, r.Addr, bfd.Up)
	bgptest.WaitEstablished(t, a, 1)

	ctx := context.Background()
	if err := r.Server().DisablePeer(ctx, &api.DisablePeerRequest{Address: a.Addr.String(), Communication: "test"}); err != nil {
		t.Fatal(err)
	}
	const line = `why="connection closed before the session came up"`
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no prompt reconnect after the reflector closed a's connection with BFD up; a's log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Server().EnablePeer(ctx, &api.EnablePeerRequest{Address: a.Addr.String()}); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitState(t, a, r.Addr, func(s bgp.SessionState) bool { return s == bgp.StateEstablished })
}
