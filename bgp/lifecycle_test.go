package bgp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestStartContextBoundsStartOnly: the context given to Start bounds the
// start; the graceful-restart tracker keeps running after it ends.
func TestStartContextBoundsStartOnly(t *testing.T) {
	bgptest.SkipUnderRace(t)
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.2"), ListenPort: -1,
		GracefulRestart: bgp.GracefulRestart{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	cancel()
	c := &bgptest.Node{GoBGP: g, Addr: bgptest.Addr("127.0.0.2"), View: bgptest.NewRecordView()}
	bgptest.Connect(t, r, c, nil)
	bgptest.WaitEstablished(t, c, 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !g.FirstUp(r.Addr).IsZero() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the graceful-restart tracker did not see the session come up: it ended with Start's context")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStopEndsWatchesGoBGP: Stop ends every watch (ours and GoBGP's
// watcher goroutines) even when the watches' contexts never end.
func TestStopEndsWatchesGoBGP(t *testing.T) {
	bgptest.SkipUnderRace(t)
	g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.2"), ListenPort: -1,
		GracefulRestart: bgp.GracefulRestart{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testStopEndsWatches(t, g, g.Stop, "server.(*BgpServer).WatchEvent")
}

// TestAddNeighborRefusedLeavesNoTrace: a neighbor refused by AddNeighbor
// is not left in the reflector's policy neighbor sets.
func TestAddNeighborRefusedLeavesNoTrace(t *testing.T) {
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{TTLSecurity: true})
	ctx := context.Background()
	peer := bgptest.Addr("127.0.0.4")
	if err := r.AddNeighbor(ctx, bgp.Neighbor{Address: peer, LocalAddress: r.Addr, PeerReflector: true}); err == nil {
		t.Fatal("neighbor without GTSM accepted by a GTSM speaker")
	}
	if err := r.AddNeighbor(ctx, bgp.Neighbor{Address: bgptest.Addr("127.0.0.2"), Passive: true, RRClient: true, TTLSecurity: true}); err != nil {
		t.Fatal(err)
	}
	if err := r.AddNeighbor(ctx, bgp.Neighbor{Address: bgptest.Addr("127.0.0.2"), Passive: true, RRClient: true, TTLSecurity: true, NoDefaultRT: true}); err == nil {
		t.Fatal("the same neighbor added twice")
	}
	err := r.Server().ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: api.DefinedType_NEIGHBOR}, func(s *api.DefinedSet) {
		for _, e := range s.List {
			if e != bgp.SentinelNeighbor {
				t.Errorf("neighbor set %s holds %s after refused neighbors", s.Name, e)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGoBGPFatalStopsSpeaker: a fatal error GoBGP reports through its
// logger (after which GoBGP goes on as if the process had exited) stops the
// speaker and reaches the daemon through Done and Err; its sessions drop.
func TestGoBGPFatalStopsSpeaker(t *testing.T) {
	_, a, b := star(t)
	select {
	case <-a.Done():
		t.Fatal("Done closed before anything happened")
	default:
	}
	a.GoBGPLogger().Fatal("path's nlri is nil", gobgplog.Fields{"Topic": "Table"})
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case <-a.Done():
	case <-deadline.C:
		t.Fatal("speaker still running after GoBGP's fatal error")
	}
	if err := a.Err(); err == nil || !strings.Contains(err.Error(), "nlri is nil") {
		t.Fatalf("Err() = %v", err)
	}
	if b.Err() != nil {
		t.Fatalf("the other speaker failed too: %v", b.Err())
	}
	if err := a.Publish(context.Background(), bgptest.Device(1, 1), record.ZoneRT(bgptest.ASN, "x")); err == nil {
		t.Fatal("a stopped speaker accepted a record")
	}
}

// TestWatchResyncGoBGP: a slow consumer of a real speaker's watch is
// resynchronised from the table and converges to it.
func TestWatchResyncGoBGP(t *testing.T) {
	red := record.ZoneRT(bgptest.ASN, "red")
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{})
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{WatchQueue: 4})
	bgptest.Connect(t, r, a, nil)
	bgptest.Connect(t, r, b, nil)
	if err := b.Subscribe(context.Background(), red); err != nil {
		t.Fatal(err)
	}
	bgptest.WaitEstablished(t, a, 1)
	bgptest.WaitEstablished(t, b, 1)
	testWatchResync(t, a, b, red, func() bool { return b.Stats().Resyncs > 0 })
}
