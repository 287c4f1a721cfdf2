package bgp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// reflection is one of the two setups compared: our Speaker, or plain
// GoBGP servers driven through their API with the same opaque paths.
type reflection interface {
	// publish sends record i from client A.
	publish(i int) error
	// keyOf is record i's key.
	keyOf(i int) []byte
	// connectC attaches a new client C; onKey is called per key it receives.
	connectC(onKey func(key []byte)) error
	// waitReflector blocks until the reflector holds n records.
	waitReflector(n int)
}

// --- our Speaker -----------------------------------------------------------

type oursRefl struct {
	t      testing.TB
	r, a   *bgptest.Node
	zone   record.RouteTarget
	atRefl counter
}

// counter counts records and lets a caller wait for a number.
type counter struct {
	mu   sync.Mutex
	n    int
	cond *sync.Cond
}

func (c *counter) add(n int) {
	c.mu.Lock()
	c.n += n
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *counter) wait(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n < n {
		c.cond.Wait()
	}
}

func newOurs(t testing.TB) reflection {
	o := &oursRefl{t: t, zone: record.ZoneRT(bgptest.ASN, "bench")}
	o.atRefl.cond = sync.NewCond(&o.atRefl.mu)
	port := bgptest.FreePort(t, bgptest.Addr("127.0.0.1"))
	o.r = bgptest.StartNode(t, bgptest.Addr("127.0.0.1"), port, bgp.Options{Role: bgp.RoleReflector, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.1"),
		ListenAddresses: []netip.Addr{bgptest.Addr("127.0.0.1")}, ListenPort: int32(port)}, false)
	if err := o.r.WatchRecords(context.Background(), func(e bgp.RecordEvent) {
		if !e.Withdrawn {
			o.atRefl.add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	o.a = bgptest.StartNode(t, bgptest.Addr("127.0.0.2"), 0, bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.2"), ListenPort: -1}, false)
	bgptest.Connect(t, o.r, o.a, nil)
	bgptest.WaitEstablished(t, o.a, 1)
	return o
}

func (o *oursRefl) publish(i int) error {
	return o.a.Publish(context.Background(), bgptest.Device(o.a.RouterID(), i), o.zone)
}
func (o *oursRefl) keyOf(i int) []byte { return bgptest.Device(o.a.RouterID(), i).Key() }

func (o *oursRefl) connectC(onKey func([]byte)) error {
	c, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: bgptest.Addr("127.0.0.3"), ListenPort: -1})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		return err
	}
	o.t.Cleanup(c.Stop)
	if err := c.WatchRecords(ctx, func(e bgp.RecordEvent) {
		if !e.Withdrawn {
			onKey(e.Key)
		}
	}); err != nil {
		return err
	}
	if err := c.Subscribe(ctx, o.zone); err != nil {
		return err
	}
	if err := o.r.AddNeighbor(ctx, bgp.Neighbor{Address: bgptest.Addr("127.0.0.3"), Passive: true, RRClient: true}); err != nil {
		return err
	}
	return c.AddNeighbor(ctx, bgp.Neighbor{Address: o.r.Addr, Port: o.r.Port, LocalAddress: bgptest.Addr("127.0.0.3")})
}

func (o *oursRefl) waitReflector(n int) { o.atRefl.wait(n) }

// --- plain GoBGP -----------------------------------------------------------

type stockRefl struct {
	t      testing.TB
	r, a   *server.BgpServer
	rPort  uint16
	zone   record.RouteTarget
	atRefl counter
}

func stockServer(t testing.TB, id string, port int32) *server.BgpServer {
	bgptest.SkipUnderRace(t)
	s := server.NewBgpServer(server.LoggerOption(bgp.NewGoBGPLogger(slog.Default())))
	go s.Serve()
	g := &api.Global{Asn: bgptest.ASN, RouterId: id, ListenPort: port}
	if port > 0 {
		g.ListenAddresses = []string{id}
	}
	if err := s.StartBgp(context.Background(), &api.StartBgpRequest{Global: g}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func stockPeer(addr string, port uint32, local string, rrClient, passive bool) *api.Peer {
	p := &api.Peer{Conf: &api.PeerConf{NeighborAddress: addr, PeerAsn: bgptest.ASN},
		Transport: &api.Transport{RemotePort: port, LocalAddress: local, PassiveMode: passive},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, HoldTime: 9, KeepaliveInterval: 3}}}
	if rrClient {
		p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: "127.0.0.1"}
	}
	for _, f := range []*api.Family{bgp.FamilyOpaque, bgp.FamilyRTC} {
		p.AfiSafis = append(p.AfiSafis, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f, Enabled: true}})
	}
	return p
}

func newStock(t testing.TB) reflection {
	s := &stockRefl{t: t, zone: record.ZoneRT(bgptest.ASN, "bench")}
	s.atRefl.cond = sync.NewCond(&s.atRefl.mu)
	s.rPort = bgptest.FreePort(t, bgptest.Addr("127.0.0.1"))
	s.r = stockServer(t, "127.0.0.1", int32(s.rPort))
	s.a = stockServer(t, "127.0.0.2", -1)
	ctx := context.Background()
	if _, err := s.r.AddPath(ctx, &api.AddPathRequest{Path: bgp.RTCPath(0, nil)}); err != nil {
		t.Fatal(err)
	}
	s.r.WatchEvent(ctx, &api.WatchEventRequest{Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{
		{Type: api.WatchEventRequest_Table_Filter_BEST}}}}, func(r *api.WatchEventResponse) {
		n := 0
		for _, p := range r.GetTable().GetPaths() {
			if p.Family.Afi == api.Family_AFI_OPAQUE && !p.IsWithdraw {
				n++
			}
		}
		s.atRefl.add(n)
	})
	if err := s.r.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer("127.0.0.2", 0, "", true, true)}); err != nil {
		t.Fatal(err)
	}
	if err := s.a.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer("127.0.0.1", uint32(s.rPort), "127.0.0.2", false, false)}); err != nil {
		t.Fatal(err)
	}
	waitStock(t, s.a)
	return s
}

func waitStock(t testing.TB, s *server.BgpServer) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		up := false
		s.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
			up = up || p.GetState().GetSessionState() == api.PeerState_ESTABLISHED
		})
		if up {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("stock session never established")
}

func (s *stockRefl) keyOf(i int) []byte { return bgptest.Device(0x7f000002, i).Key() }

func (s *stockRefl) publish(i int) error {
	d := bgptest.Device(0x7f000002, i)
	v, _ := d.MarshalValue()
	p, err := bgp.OpaquePath(d.Key(), v, []record.RouteTarget{s.zone})
	if err != nil {
		return err
	}
	_, err = s.a.AddPath(context.Background(), &api.AddPathRequest{Path: p})
	return err
}

func (s *stockRefl) connectC(onKey func([]byte)) error {
	c := stockServer(s.t, "127.0.0.3", -1)
	ctx := context.Background()
	c.WatchEvent(ctx, &api.WatchEventRequest{Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{
		{Type: api.WatchEventRequest_Table_Filter_BEST, Init: true}}}}, func(r *api.WatchEventResponse) {
		for _, p := range r.GetTable().GetPaths() {
			var o api.OpaqueNLRI
			if !p.IsWithdraw && p.Family.Afi == api.Family_AFI_OPAQUE && p.Nlri.UnmarshalTo(&o) == nil {
				onKey(o.Key)
			}
		}
	})
	if _, err := c.AddPath(ctx, &api.AddPathRequest{Path: bgp.RTCPath(bgptest.ASN, &s.zone)}); err != nil {
		return err
	}
	if err := s.r.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer("127.0.0.3", 0, "", true, true)}); err != nil {
		return err
	}
	return c.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer("127.0.0.1", uint32(s.rPort), "127.0.0.3", false, false)})
}

func (s *stockRefl) waitReflector(n int) { s.atRefl.wait(n) }

// --- measurements ----------------------------------------------------------

// latency publishes n records one at a time and returns the A→reflector→C
// latency of each.
func latency(t testing.TB, r reflection, n int) []time.Duration {
	got := make(chan []byte, 16)
	if err := r.connectC(func(k []byte) { got <- k }); err != nil {
		t.Fatal(err)
	}
	// Warm up: the first record also waits for the session.
	if err := r.publish(1_000_000); err != nil {
		t.Fatal(err)
	}
	<-got
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := r.publish(i); err != nil {
			t.Fatal(err)
		}
		want := string(r.keyOf(i))
		for k := range got {
			if string(k) == want {
				break
			}
		}
		out = append(out, time.Since(start))
	}
	return out
}

// syncTime loads n records into the reflector, then measures how long a new
// client takes to receive them all from its first one, and the process heap
// per record.
func syncTime(t testing.TB, r reflection, n int) (time.Duration, float64) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		if err := r.publish(i); err != nil {
			t.Fatal(err)
		}
	}
	r.waitReflector(n)
	// The clock starts with the first record, so that session set-up
	// (connect retries) is not counted.
	var mu sync.Mutex
	seen := 0
	var start time.Time
	done := make(chan struct{})
	if err := r.connectC(func([]byte) {
		mu.Lock()
		if seen == 0 {
			start = time.Now()
		}
		seen++
		if seen == n {
			close(done)
		}
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	return elapsed, float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkReflectionLatency: A→reflector→C latency over 1,000 records,
// ours and plain GoBGP side by side (one iteration is the whole run).
func BenchmarkReflectionLatency(b *testing.B) {
	for _, c := range []struct {
		name string
		mk   func(testing.TB) reflection
	}{{"ours", newOurs}, {"stock", newStock}} {
		b.Run(c.name, func(b *testing.B) {
			var all []time.Duration
			for b.Loop() {
				all = append(all, latency(b, c.mk(b), 1000)...)
			}
			b.ReportMetric(float64(pct(all, 0.50).Microseconds()), "p50-µs")
			b.ReportMetric(float64(pct(all, 0.99).Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkReflectionSync: time for a new client to receive 10k and 100k
// records, the rate, and process heap per record (A, reflector and C).
func BenchmarkReflectionSync(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, c := range []struct {
			name string
			mk   func(testing.TB) reflection
		}{{"ours", newOurs}, {"stock", newStock}} {
			b.Run(fmt.Sprintf("%s/%dk", c.name, n/1000), func(b *testing.B) {
				var total time.Duration
				var heap float64
				for b.Loop() {
					d, h := syncTime(b, c.mk(b), n)
					total += d
					heap = h
				}
				b.ReportMetric(total.Seconds()/float64(b.N), "sync-s")
				b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
				b.ReportMetric(heap, "heap-B/record")
			})
		}
	}
}
