package bgptest

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
)

// Node is a real GoBGP speaker under test with what it has seen.
type Node struct {
	*bgp.GoBGP
	Addr netip.Addr  // its router-id and the address it speaks from
	Port uint16      // its listen port; 0 for a client
	View *RecordView // its record watch; empty when started without one
}

// RouterID is the node's router-id.
func (n *Node) RouterID() inof.RouterID { return RouterID(n.Addr) }

// StartReflector starts a reflector listening on a, on a free port, with
// its record watch.
func StartReflector(t testing.TB, a netip.Addr, cfg bgp.Options) *Node {
	t.Helper()
	port := FreePort(t, a)
	cfg.Role, cfg.ASN, cfg.RouterID = bgp.RoleReflector, ASN, a
	cfg.ListenAddresses, cfg.ListenPort = []netip.Addr{a}, int32(port)
	return StartNode(t, a, port, cfg, true)
}

// StartClient starts a client at a that does not listen, with its record
// watch.
func StartClient(t testing.TB, a netip.Addr, cfg bgp.Options) *Node {
	t.Helper()
	cfg.Role, cfg.ASN, cfg.RouterID, cfg.ListenPort = bgp.RoleClient, ASN, a, -1
	return StartNode(t, a, 0, cfg, true)
}

// StartNode starts a speaker with cfg as given, stopped when the test ends;
// without watch its View stays empty (for benchmarks that must not pay for
// a watcher). It skips the test under the race detector (SkipUnderRace).
func StartNode(t testing.TB, a netip.Addr, port uint16, cfg bgp.Options, watch bool) *Node {
	t.Helper()
	SkipUnderRace(t)
	g, err := bgp.NewGoBGP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Node{GoBGP: g, Addr: a, Port: port, View: start(t, g, watch)}
}

// start starts s, stopped when the test ends, and returns the view its
// record watch feeds (none without watch: the view stays empty).
func start(t testing.TB, s bgp.Speaker, watch bool) *RecordView {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Stop() })
	v := NewRecordView()
	if watch {
		if err := s.WatchRecords(ctx, v.Apply); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// Connect makes client c a client of reflector r (both sides configured);
// extra, if not nil, edits both sides' neighbor.
func Connect(t testing.TB, r, c *Node, extra func(*bgp.Neighbor)) {
	t.Helper()
	rn := bgp.Neighbor{Address: c.Addr, Passive: true, RRClient: true}
	cn := bgp.Neighbor{Address: r.Addr, Port: r.Port, LocalAddress: c.Addr}
	if extra != nil {
		extra(&rn)
		extra(&cn)
	}
	ctx := context.Background()
	if err := r.AddNeighbor(ctx, rn); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNeighbor(ctx, cn); err != nil {
		t.Fatal(err)
	}
}

// PeerReflectors joins two reflectors with a plain iBGP session.
func PeerReflectors(t testing.TB, a, b *Node) {
	t.Helper()
	ctx := context.Background()
	if err := a.AddNeighbor(ctx, bgp.Neighbor{Address: b.Addr, Port: b.Port, LocalAddress: a.Addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddNeighbor(ctx, bgp.Neighbor{Address: a.Addr, Port: a.Port, LocalAddress: b.Addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
}

// WaitEstablished waits until at least count sessions of n are
// established.
func WaitEstablished(t testing.TB, n *Node, count int) {
	t.Helper()
	WaitNeighbors(t, n, fmt.Sprintf("%d established sessions", count), func(ns []bgp.NeighborStatus) bool {
		up := 0
		for _, s := range ns {
			if s.State == bgp.StateEstablished {
				up++
			}
		}
		return up >= count
	})
}

// WaitState waits until n's session to peer is in a state ok accepts.
func WaitState(t testing.TB, n *Node, peer netip.Addr, ok func(bgp.SessionState) bool) {
	t.Helper()
	WaitNeighbors(t, n, fmt.Sprintf("the expected state of the session to %s", peer), func(ns []bgp.NeighborStatus) bool {
		for _, s := range ns {
			if s.Address == peer && ok(s.State) {
				return true
			}
		}
		return false
	})
}

// WaitReceived waits until n holds, from each neighbor of want, that many
// records (its Adj-RIB-In, after import policy).
func WaitReceived(t testing.TB, n *Node, want map[netip.Addr]uint64) {
	t.Helper()
	WaitNeighbors(t, n, fmt.Sprintf("records received per neighbor %v", want), func(ns []bgp.NeighborStatus) bool {
		got := map[netip.Addr]uint64{}
		for _, s := range ns {
			got[s.Address] = s.Received
		}
		for a, w := range want {
			if got[a] != w {
				return false
			}
		}
		return true
	})
}

// WaitNeighbors polls n's sessions until ok holds over them, failing the
// test after a generous bound that only a broken fabric reaches.
func WaitNeighbors(t testing.TB, n *Node, what string, ok func([]bgp.NeighborStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := n.Neighbors(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(ns) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s: %+v", n.Addr, what, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
