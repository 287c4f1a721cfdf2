package bgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

const testASN = 65000

// freePort returns a TCP port free on addr right now.
func freePort(t testing.TB, addr netip.Addr) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// node is one speaker under test with what it has seen.
type node struct {
	*GoBGP
	addr netip.Addr
	port uint16 // listen port; 0 for clients
	view *recordView
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// startReflector starts a reflector listening on a on a free port.
func startReflector(t testing.TB, a netip.Addr, cfg Options) *node {
	t.Helper()
	port := freePort(t, a)
	cfg.Role, cfg.ASN, cfg.RouterID = RoleReflector, testASN, a
	cfg.ListenAddresses, cfg.ListenPort = []netip.Addr{a}, int32(port)
	return startNode(t, a, port, cfg)
}

// startClient starts a client that does not listen.
func startClient(t testing.TB, a netip.Addr, cfg Options) *node {
	t.Helper()
	cfg.Role, cfg.ASN, cfg.RouterID, cfg.ListenPort = RoleClient, testASN, a, -1
	return startNode(t, a, 0, cfg)
}

func startNode(t testing.TB, a netip.Addr, port uint16, cfg Options) *node {
	t.Helper()
	return startNodeWatch(t, a, port, cfg, true)
}

// startNodeWatch starts a node; without watch its view stays empty (for
// benchmarks that must not pay for a watcher).
func startNodeWatch(t testing.TB, a netip.Addr, port uint16, cfg Options, watch bool) *node {
	t.Helper()
	skipUnderRace(t)
	g, err := NewGoBGP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &node{GoBGP: g, addr: a, port: port, view: newRecordView()}
	if watch {
		if err := g.WatchRecords(ctx, n.view.apply); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { cancel(); g.Stop() })
	return n
}

// connect makes client c a client of reflector r (both sides configured).
func connect(t testing.TB, r, c *node, extra func(*Neighbor)) {
	t.Helper()
	rn := Neighbor{Address: c.addr, Passive: true, RRClient: true}
	cn := Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}
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

// peerReflectors joins two reflectors with a plain iBGP session.
func peerReflectors(t testing.TB, a, b *node) {
	t.Helper()
	ctx := context.Background()
	if err := a.AddNeighbor(ctx, Neighbor{Address: b.addr, Port: b.port, LocalAddress: a.addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddNeighbor(ctx, Neighbor{Address: a.addr, Port: a.port, LocalAddress: b.addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
}

// recordView keeps the best record per key as reported by WatchRecords and
// counts withdraw events.
type recordView struct {
	mu        sync.Mutex
	cond      *sync.Cond
	records   map[string]RecordEvent
	withdraws int
	byKey     map[string]int // withdraw events per key
	events    int
}

func newRecordView() *recordView {
	v := &recordView{records: map[string]RecordEvent{}, byKey: map[string]int{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *recordView) apply(e RecordEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.events++
	if e.Withdrawn {
		v.withdraws++
		v.byKey[string(e.Key)]++
		delete(v.records, string(e.Key))
	} else {
		v.records[string(e.Key)] = e
	}
	v.cond.Broadcast()
}

// waitFor waits until cond holds over the records (or fails the test after
// a generous bound that only a broken fabric reaches).
func (v *recordView) waitFor(t testing.TB, what string, cond func(map[string]RecordEvent) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	stop := time.AfterFunc(30*time.Second, func() { v.mu.Lock(); v.cond.Broadcast(); v.mu.Unlock() })
	defer stop.Stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	for !cond(v.records) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; have %d records", what, len(v.records))
		}
		v.cond.Wait()
	}
}

// get returns the record event held for key.
func (v *recordView) get(key []byte) (RecordEvent, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.records[string(key)]
	return e, ok
}

func (v *recordView) has(key []byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.records[string(key)]
	return ok
}

func (v *recordView) withdrawCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.withdraws
}

func device(sw inof.RouterID, i int) *record.Device {
	return &record.Device{Report: inof.Report{Switch: sw, Device: inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next(),
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:t%d", i)},
		Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(2000)}, AccessPort: "swp1", Since: time.UnixMilli(1000)}}
}

// waitEstablished waits until every neighbor of n is established.
func waitEstablished(t testing.TB, n *node, count int) {
	t.Helper()
	waitNeighbors(t, n, fmt.Sprintf("%d established sessions", count), func(ns []NeighborStatus) bool {
		up := 0
		for _, s := range ns {
			if s.State == StateEstablished {
				up++
			}
		}
		return up >= count
	})
}

// waitReceived waits until n holds, from each neighbor of want, that many
// records (its Adj-RIB-In, after import policy).
func waitReceived(t testing.TB, n *node, want map[netip.Addr]uint64) {
	t.Helper()
	waitNeighbors(t, n, fmt.Sprintf("records received per neighbor %v", want), func(ns []NeighborStatus) bool {
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

// waitNeighbors polls n's sessions until ok holds over them, failing the
// test after a generous bound that only a broken fabric reaches.
func waitNeighbors(t testing.TB, n *node, what string, ok func([]NeighborStatus) bool) {
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
			t.Fatalf("%s: timed out waiting for %s: %+v", n.addr, what, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publishTo subscribes b to the zone "prod" and has a publish n device
// records in it; it returns the zone's route target.
func publishTo(t testing.TB, a, b *node, n int) record.RouteTarget {
	t.Helper()
	ctx := context.Background()
	zone := record.ZoneRT(testASN, "prod")
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
			t.Fatal(err)
		}
	}
	return zone
}

// star starts one reflector and two clients a and b connected to it, with
// b subscribed to the given zones, and waits for both sessions.
func star(t *testing.T, zones ...record.RouteTarget) (r, a, b *node) {
	t.Helper()
	r = startReflector(t, addr("127.0.0.1"), Options{})
	a = startClient(t, addr("127.0.0.2"), Options{})
	b = startClient(t, addr("127.0.0.3"), Options{})
	connect(t, r, a, nil)
	connect(t, r, b, nil)
	for _, z := range zones {
		if err := b.Subscribe(context.Background(), z); err != nil {
			t.Fatal(err)
		}
	}
	waitEstablished(t, a, 1)
	waitEstablished(t, b, 1)
	return r, a, b
}

func routerID(n *node) inof.RouterID { return ridOf(n.addr) }
