package table

// Helpers of the table tests: speakers (real GoBGP or the fake) with what
// they have seen. The bgp package's own tests have their counterparts;
// these use only its exported API.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

const testASN = 65000

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func ridOf(a netip.Addr) inof.RouterID { id, _ := inof.RouterIDFrom(a); return id }

func device(sw inof.RouterID, i int) *record.Device {
	return &record.Device{Report: inof.Report{Switch: sw, Device: inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next(),
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:t%d", i)},
		Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(2000)}, AccessPort: "swp1", Since: time.UnixMilli(1000)}}
}

func discoveryRec(sw inof.RouterID, eps ...string) *record.Discovery {
	d := &record.Discovery{Switch: sw, Port: 8009}
	for _, e := range eps {
		d.Endpoints = append(d.Endpoints, netip.MustParsePrefix(e))
	}
	d.Endpoints = record.SortEndpoints(d.Endpoints)
	return d
}

// recordView keeps the best record per key as reported by WatchRecords and
// counts withdraw events.
type recordView struct {
	mu        sync.Mutex
	cond      *sync.Cond
	records   map[string]bgp.RecordEvent
	withdraws int
	byKey     map[string]int // withdraw events per key
	events    int
}

func newRecordView() *recordView {
	v := &recordView{records: map[string]bgp.RecordEvent{}, byKey: map[string]int{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *recordView) apply(e bgp.RecordEvent) {
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
func (v *recordView) waitFor(t testing.TB, what string, cond func(map[string]bgp.RecordEvent) bool) {
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
func (v *recordView) get(key []byte) (bgp.RecordEvent, bool) {
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

func hasKey(k []byte) func(map[string]bgp.RecordEvent) bool {
	return func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(k)]; return ok }
}

// node is a real GoBGP speaker under test with what it has seen.
type node struct {
	*bgp.GoBGP
	addr netip.Addr
	port uint16 // listen port; 0 for clients
	view *recordView
}

func routerID(n *node) inof.RouterID { return ridOf(n.addr) }

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

// startReflector starts a reflector listening on a on a free port.
func startReflector(t testing.TB, a netip.Addr, cfg bgp.Options) *node {
	t.Helper()
	port := freePort(t, a)
	cfg.Role, cfg.ASN, cfg.RouterID = bgp.RoleReflector, testASN, a
	cfg.ListenAddresses, cfg.ListenPort = []netip.Addr{a}, int32(port)
	return startNode(t, a, port, cfg)
}

// startClient starts a client that does not listen.
func startClient(t testing.TB, a netip.Addr, cfg bgp.Options) *node {
	t.Helper()
	cfg.Role, cfg.ASN, cfg.RouterID, cfg.ListenPort = bgp.RoleClient, testASN, a, -1
	return startNode(t, a, 0, cfg)
}

func startNode(t testing.TB, a netip.Addr, port uint16, cfg bgp.Options) *node {
	t.Helper()
	skipUnderRace(t)
	g, err := bgp.NewGoBGP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &node{GoBGP: g, addr: a, port: port, view: newRecordView()}
	if err := g.WatchRecords(ctx, n.view.apply); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); g.Stop() })
	return n
}

// connect makes client c a client of reflector r (both sides configured).
func connect(t testing.TB, r, c *node, extra func(*bgp.Neighbor)) {
	t.Helper()
	rn := bgp.Neighbor{Address: c.addr, Passive: true, RRClient: true}
	cn := bgp.Neighbor{Address: r.addr, Port: r.port, LocalAddress: c.addr}
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
	if err := a.AddNeighbor(ctx, bgp.Neighbor{Address: b.addr, Port: b.port, LocalAddress: a.addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddNeighbor(ctx, bgp.Neighbor{Address: a.addr, Port: a.port, LocalAddress: b.addr, PeerReflector: true}); err != nil {
		t.Fatal(err)
	}
}

// waitEstablished waits until count sessions of n are established.
func waitEstablished(t testing.TB, n *node, count int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ns, err := n.Neighbors(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		up := 0
		for _, s := range ns {
			if s.State == bgp.StateEstablished {
				up++
			}
		}
		if up >= count {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %d established sessions: %+v", n.addr, count, ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitState waits until the session to addr satisfies ok.
func waitState(t *testing.T, n *node, peer netip.Addr, ok func(bgp.SessionState) bool) {
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

// skipUnderRace skips a test that runs the real GoBGP when the race
// detector is on (see the bgp package's tests): those run without -race.
func skipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
}

// fnode is a fake speaker under test with what it has seen.
type fnode struct {
	*bgp.FakeSpeaker
	addr netip.Addr
	view *recordView
	dev  *deviceView
}

func newFakeNode(t testing.TB, f *bgp.FakeFabric, a string, opts bgp.Options) *fnode {
	t.Helper()
	opts.ASN, opts.RouterID = testASN, addr(a)
	if opts.Role == 0 {
		opts.Role = bgp.RoleClient
	}
	s, err := f.NewSpeaker(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &fnode{FakeSpeaker: s, addr: addr(a), view: newRecordView(), dev: newDeviceView()}
	if err := s.WatchRecords(ctx, func(e bgp.RecordEvent) { n.view.apply(e); n.dev.apply(e) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); s.Stop() })
	return n
}

// fakeConnect makes c a client of reflector r.
func fakeConnect(t testing.TB, r, c *fnode, edit func(*bgp.Neighbor)) {
	t.Helper()
	rn := bgp.Neighbor{Address: c.addr, RRClient: true}
	if edit != nil {
		edit(&rn)
	}
	if err := r.AddNeighbor(context.Background(), rn); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNeighbor(context.Background(), bgp.Neighbor{Address: r.addr}); err != nil {
		t.Fatal(err)
	}
}

// fakeStar is a reflector 127.0.0.1 and clients at the given addresses,
// each subscribed to its route targets.
func fakeStar(t testing.TB, clients map[string][]record.RouteTarget) (*bgp.FakeFabric, *fnode, map[string]*fnode) {
	t.Helper()
	f := bgp.NewFakeFabric()
	r := newFakeNode(t, f, "127.0.0.1", bgp.Options{Role: bgp.RoleReflector})
	out := map[string]*fnode{}
	for a, rts := range clients {
		c := newFakeNode(t, f, a, bgp.Options{})
		fakeConnect(t, r, c, nil)
		for _, rt := range rts {
			if err := c.Subscribe(context.Background(), rt); err != nil {
				t.Fatal(err)
			}
		}
		out[a] = c
	}
	return f, r, out
}

// Both speakers replicate configuration.
var (
	_ ConfigSpeaker = (*bgp.GoBGP)(nil)
	_ ConfigSpeaker = (*bgp.FakeSpeaker)(nil)
)
