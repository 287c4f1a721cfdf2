package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/switchagent"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/bench/result"
	"github.com/openinof/inof/internal/selfexec"
	"github.com/openinof/inof/l2proto"
)

func TestMain(m *testing.M) {
	if k := os.Getenv(childEnv); k != "" {
		runChild(k)
		return
	}
	os.Exit(m.Run())
}

// newClient is the address (and router-id) of the switch that joins.
var newClient = netip.MustParseAddr("127.2.0.1")

// loadTimeout bounds loading a reflector, and one client's convergence.
const loadTimeout = 20 * time.Minute

// sessionsTimeout bounds loading the many-sessions fabric: the issue's
// 256 sessions × 8k devices take GoBGP the better part of an hour on 2
// cores (a reflector's work per record grows with the sessions).
func sessionsTimeout(p Plan) time.Duration {
	if p.Devices > 1_000_000 {
		return 75 * time.Minute
	}
	return loadTimeout
}

// refl is a reflector in its own process.
type refl interface {
	addr() netip.AddrPort
	// figures reads the records it accepted and its usage; gc also runs a
	// GC first and reports the heap (-1 where unknown).
	figures(ctx context.Context, gc bool) (childFigures, error)
	stop()
}

// childRefl is the test binary re-executed as a reflector.
type childRefl struct {
	c    *selfexec.Child
	url  string
	port uint16
}

func freePort(tb testing.TB) uint16 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

func clientList(p Plan, withNew bool) []string {
	var out []string
	for s := range p.Switches {
		out = append(out, SwitchID(s).String())
	}
	if withNew {
		out = append(out, newClient.String())
	}
	return out
}

func startChild(tb testing.TB, kind string, p Plan, rtc, withNew bool) *childRefl {
	port := freePort(tb)
	args, err := json.Marshal(childArgs{Port: int(port), Clients: clientList(p, withNew), Plan: p,
		StateDir: tb.TempDir(), RTC: rtc})
	if err != nil {
		tb.Fatal(err)
	}
	c, line := selfexec.Start(tb, childEnv+"="+kind, argsEnv+"="+string(args))
	hostport, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		tb.Fatalf("child %s said %q", kind, line)
	}
	return &childRefl{c: c, url: "http://" + hostport, port: port}
}

func (c *childRefl) addr() netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), c.port)
}

func (c *childRefl) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s: %s", path, resp.Status, b)
	}
	return b, err
}

func (c *childRefl) figures(ctx context.Context, gc bool) (childFigures, error) {
	var f childFigures
	path := "/figures"
	if gc {
		path += "?gc=1"
	}
	b, err := c.get(ctx, path)
	if err != nil {
		return f, err
	}
	err = json.Unmarshal(b, &f)
	if !gc {
		f.Heap = -1
	}
	return f, err
}

func (c *childRefl) stop() { c.c.Kill() }

// load connects one feeder per switch of p and sends its records, and
// waits until the reflector has accepted them all. It returns the feeders,
// open (closing them withdraws the records): the caller closes them with
// closeAll, also when load fails.
func load(ctx context.Context, tb testing.TB, r refl, p Plan) (feeders []*Feeder) {
	feeders = make([]*Feeder, p.Switches)
	defer func() {
		if tb.Failed() {
			closeAll(feeders)
		}
	}()
	errs := make(chan error, p.Switches)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for s := range p.Switches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			recs, err := p.SwitchRecords(s) // per device or in sets, as p says
			if err != nil {
				errs <- err
				return
			}
			f, err := Dial(ctx, SwitchID(s), r.addr(), ASN)
			if err != nil {
				errs <- err
				return
			}
			feeders[s] = f
			if err := f.Send(recs); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		tb.Fatal(err)
	}
	for {
		f, err := r.figures(ctx, false)
		if err != nil {
			tb.Fatal(err)
		}
		if f.Count >= p.Devices {
			return feeders
		}
		for _, fd := range feeders {
			if err := fd.Err(); err != nil {
				tb.Fatalf("feeder session ended: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("reflector accepted %d of %d records: %v", f.Count, p.Devices, ctx.Err())
		case <-time.After(250 * time.Millisecond): // each poll costs the reflector a neighbor listing
		}
	}
}

// closeAll closes the feeders load opened.
func closeAll(feeders []*Feeder) {
	for _, f := range feeders {
		if f != nil {
			f.Close()
		}
	}
}

func collect(ch <-chan error) []error {
	var out []error
	for e := range ch {
		out = append(out, e)
	}
	return out
}

// countingSpeaker passes everything to the speaker the agent would build,
// and counts the records from neighbors its WatchRecords has handed to the
// agent (the agent's loop applies them right after).
type countingSpeaker struct {
	bgp.Speaker
	n     atomic.Int64
	first atomic.Int64 // when the first device record came (Unix ns)
	up    atomic.Int64 // when a session was first established (Unix ns)
	anyRT atomic.Int64 // when the agent first subscribed to every record (Unix ns)
	subs  atomic.Int64 // Subscribe and Unsubscribe calls
}

// Subscribe notes when the agent asks for every record.
func (c *countingSpeaker) Subscribe(ctx context.Context, rt record.RouteTarget) error {
	c.subs.Add(1)
	if rt == record.AnyRT {
		c.anyRT.CompareAndSwap(0, time.Now().UnixNano())
	}
	return c.Speaker.Subscribe(ctx, rt)
}

// Unsubscribe counts.
func (c *countingSpeaker) Unsubscribe(ctx context.Context, rt record.RouteTarget) error {
	c.subs.Add(1)
	return c.Speaker.Unsubscribe(ctx, rt)
}

// WatchNeighbors notes when the first session comes up.
func (c *countingSpeaker) WatchNeighbors(ctx context.Context, fn func(bgp.NeighborEvent)) error {
	return c.Speaker.WatchNeighbors(ctx, func(ev bgp.NeighborEvent) {
		if ev.State == bgp.StateEstablished {
			c.up.CompareAndSwap(0, time.Now().UnixNano())
		}
		fn(ev)
	})
}

// synced is what a new client's convergence measured.
type synced struct {
	total time.Duration // client start → every record held
	// up is client start → its session established: GoBGP's FSM waits a
	// random 1–2 s before it first dials (connectLoop), ours and stock.
	up  time.Duration
	cpu time.Duration // this process's CPU (user+system) from start to every record held
}

// since returns the time from start to the Unix-ns instant at (0: never).
func since(start time.Time, at int64) time.Duration {
	if at == 0 {
		return -1
	}
	return time.Duration(at - start.UnixNano())
}

// cpuSince is this process's CPU time used since u0 was read.
func cpuSince(tb testing.TB, u0 Usage) time.Duration {
	u, err := ProcUsage(0)
	if err != nil {
		tb.Fatal(err)
	}
	return u.CPU - u0.CPU
}

func (c *countingSpeaker) WatchRecords(ctx context.Context, fn func(bgp.RecordEvent)) error {
	return c.Speaker.WatchRecords(ctx, func(ev bgp.RecordEvent) {
		fn(ev)
		if ev.Withdrawn || ev.Local() {
			return
		}
		n := int64(0)
		switch r := ev.Record.(type) {
		case *record.Device:
			n = 1
		case *record.DeviceSet:
			n = int64(len(r.Devices))
		}
		if n > 0 && c.n.Add(n) == n {
			c.first.Store(time.Now().UnixNano())
		}
	})
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// convergeOurs starts a real switch agent (GoBGP speaker, engine, device
// table; in-memory access port with one unzoned target, so that with soft
// zoning it subscribes to every zone) and measures the time from its start
// until its device table holds every record of p, and this process's CPU
// over that time (not its teardown).
func convergeOurs(ctx context.Context, tb testing.TB, r refl, p Plan) synced {
	o := switchagent.DefaultOptions()
	o.StateDir, o.RouterID, o.ASN, o.LocalAddress = tb.TempDir(), newClient.String(), ASN, newClient.String()
	o.Reflectors = []switchagent.ReflectorOptions{{Address: r.addr().Addr().String(), Port: r.addr().Port()}}
	o.BFD.Enabled, o.MetricsListen, o.AccessPorts = false, "", []string{"swp1"}
	log := quietLog()
	defer daemon.StartRuntime(o.Runtime, log)() // as inofd runs it
	near, far := l2proto.NewMemPair("swp1", net.HardwareAddr{2, 0, 0, 0, 0, 1}, "dev", net.HardwareAddr{2, 0, 0, 0, 0, 2})
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := far.ReadFrame(buf); err != nil {
				return
			}
		}
	}()
	u0, err := ProcUsage(0)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	sp, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: o.ASN, RouterID: newClient, ListenPort: -1, Logger: log,
		GracefulRestart: bgp.GracefulRestart{Enabled: o.GracefulRestart.Enabled, RestartTime: o.GracefulRestart.RestartTime,
			Notification: true}})
	if err != nil {
		tb.Fatal(err)
	}
	cs := &countingSpeaker{Speaker: sp}
	agent, err := switchagent.New(switchagent.Config{Options: o, Speaker: cs, Logger: log,
		OpenLink:   func(string) (l2proto.Link, error) { return near, nil },
		WatchStray: func(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil },
		WatchLinks: func(ctx context.Context, _ func(l2proto.LinkState)) error { <-ctx.Done(); return nil }})
	if err != nil {
		tb.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agent.Run(actx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("agent: %v", err)
		}
		far.Close()
	}()
	// The one local device: an unzoned target (targets are told nothing,
	// so no notification traffic skews the figure).
	mac := far.HardwareAddr()
	l := &l2proto.LLDPDU{ChassisSubtype: 4, ChassisID: mac, PortSubtype: 5, PortID: []byte("tgt"), TTL: 120,
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Addr: netip.MustParseAddr("10.250.0.1"),
			Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, ProtoVer: l2proto.ProtocolVersion1, Port: 4420,
			NQN: "nqn.2014-08.org.example:local"}}
	frame, err := l2proto.LLDPFrame(mac, l)
	if err != nil {
		tb.Fatal(err)
	}
	if err := far.WriteFrame(frame); err != nil {
		tb.Fatal(err)
	}
	for cs.n.Load() < int64(p.Devices) {
		select {
		case <-ctx.Done():
			tb.Fatalf("agent received %d of %d records: %v", cs.n.Load(), p.Devices, ctx.Err())
		case err := <-done:
			tb.Fatalf("agent stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	handed := time.Since(start)
	// The count is cheap (the device list copies and sorts every record,
	// and would be timed with them); it holds the agent's own device too,
	// so p.Devices+1 means every remote one. Records taken while the zone
	// configuration is held are not judged yet: the count is not enough
	// until the configuration is in force.
	for agent.DeviceCount() < p.Devices+1 || agent.ConfigHeld() {
		select {
		case <-ctx.Done():
			tb.Fatalf("agent table holds %d of %d records (and its own), configuration held %v: %v",
				agent.DeviceCount(), p.Devices, agent.ConfigHeld(), ctx.Err())
		case err := <-done:
			tb.Fatalf("agent stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	s := synced{total: time.Since(start), up: since(start, cs.up.Load()), cpu: cpuSince(tb, u0)}
	devs, err := agent.API().Devices(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, d := range devs {
		if d.Switch.Addr() != newClient {
			n++
		}
	}
	if n < p.Devices {
		tb.Fatalf("agent's device list holds %d of the %d remote records its table counted", n, p.Devices)
	}
	tb.Logf("agent: session up after %v, subscribed to every record after %v (%d subscription changes), first device record after %v, all handed to the agent after %v, all in its table, configuration in force, after %v",
		s.up.Round(time.Millisecond), since(start, cs.anyRT.Load()).Round(time.Millisecond), cs.subs.Load(),
		since(start, cs.first.Load()).Round(time.Millisecond), handed.Round(time.Millisecond), s.total.Round(time.Millisecond))
	return s
}

// convergeStock starts a plain GoBGP v3.37 server as the new client and
// measures the time from its start until its best table holds every record
// of p. With rtc it asks for what a switch that sees every zone needs: the
// configuration RT, the default zone's and every zone's, one membership
// each, or (wildcard) the configuration RT and the default membership, as
// our agent does.
func convergeStock(ctx context.Context, tb testing.TB, r refl, p Plan, rtc, wildcard bool) synced {
	u0, err := ProcUsage(0)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	s := server.NewBgpServer(server.LoggerOption(quiet{}))
	go s.Serve()
	defer s.Stop()
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: ASN, RouterId: newClient.String(), ListenPort: -1}}); err != nil {
		tb.Fatal(err)
	}
	defer s.StopBgp(context.Background(), &api.StopBgpRequest{})
	var n, up, first atomic.Int64
	all := make(chan struct{})
	err = s.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, func(resp *api.WatchEventResponse) {
		if pe := resp.GetPeer(); pe != nil && pe.GetPeer().GetState().GetSessionState() == api.PeerState_ESTABLISHED {
			up.CompareAndSwap(0, time.Now().UnixNano())
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	err = s.WatchEvent(ctx, &api.WatchEventRequest{Table: &api.WatchEventRequest_Table{Filters: []*api.WatchEventRequest_Table_Filter{
		{Type: api.WatchEventRequest_Table_Filter_BEST}}}}, func(resp *api.WatchEventResponse) {
		for _, path := range resp.GetTable().GetPaths() {
			var o api.OpaqueNLRI
			if path.IsWithdraw || path.Family.GetAfi() != famOpaque.Afi || path.Nlri.UnmarshalTo(&o) != nil {
				continue
			}
			switch n.Add(1) {
			case 1:
				first.Store(time.Now().UnixNano())
			case int64(p.Devices):
				close(all)
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	if rtc {
		cfgRT := record.ConfigRT(ASN)
		rts := []*record.RouteTarget{&cfgRT, nil}
		if !wildcard {
			rts[1] = &record.RouteTarget{}
			*rts[1] = record.ZoneRT(ASN, "default")
			for z := range p.Zones {
				rt := record.ZoneRT(ASN, ZoneName(z))
				rts = append(rts, &rt)
			}
		}
		for _, rt := range rts {
			path, err := rtcPath(rt)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := s.AddPath(ctx, &api.AddPathRequest{Path: path}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	ra := r.addr()
	if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer(ra.Addr().String(), false, rtc, uint32(ra.Port()), newClient.String())}); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-all:
		s := synced{total: time.Since(start), up: since(start, up.Load()), cpu: cpuSince(tb, u0)}
		tb.Logf("stock client: session up after %v, first device record after %v, all in its table after %v",
			s.up.Round(time.Millisecond), since(start, first.Load()).Round(time.Millisecond), s.total.Round(time.Millisecond))
		return s
	case <-ctx.Done():
		tb.Fatalf("stock client received %d of %d records: %v", n.Load(), p.Devices, ctx.Err())
		return synced{}
	}
}

// setup is one reflector implementation the benchmark measures.
type setup struct {
	name  string
	start func(tb testing.TB, p Plan, withNew bool) refl
	// converge runs the new client that matches it.
	converge func(ctx context.Context, tb testing.TB, r refl, p Plan) synced
	// optIn setups run only when BENCH_SCALE_ONLY names them: one RT
	// membership per zone costs GoBGP a scan of the whole table per
	// membership and a comparison per membership per record, minutes at
	// the full size.
	optIn bool
	// sessions: measure the many-sessions plan too. Not for setups
	// without RT-constraint (every record would go to every other session:
	// Sessions² UPDATEs) nor for those whose reflector another setup runs.
	sessions bool
	// plan adjusts the plans (the record format); nil keeps them.
	plan func(Plan) Plan
}

// inSets publishes a plan in device sets, each switch serving whole zones.
func inSets(p Plan) Plan { p.Sets, p.Rack = true, true; return p }

// adjusted is p as setup s measures it.
func (s setup) adjusted(p Plan) Plan {
	if s.plan == nil {
		return p
	}
	return s.plan(p)
}

func setups() []setup {
	stock := func(rtc, wildcard bool) setup {
		name := "stock GoBGP 3.37"
		switch {
		case !rtc:
			name += " no RTC"
		}
		s := setup{name: name, sessions: rtc && wildcard,
			start: func(tb testing.TB, p Plan, withNew bool) refl { return startChild(tb, "stock", p, rtc, withNew) },
			converge: func(ctx context.Context, tb testing.TB, r refl, p Plan) synced {
				return convergeStock(ctx, tb, r, p, rtc, wildcard)
			}}
		if rtc && !wildcard {
			s.name += " RTC per zone"
			s.optIn = true
		}
		return s
	}
	return []setup{
		{name: "ours", sessions: true,
			start:    func(tb testing.TB, p Plan, withNew bool) refl { return startChild(tb, "ours", p, true, withNew) },
			converge: convergeOurs},
		{name: "ours sets", sessions: true, plan: inSets,
			start:    func(tb testing.TB, p Plan, withNew bool) refl { return startChild(tb, "ours", p, true, withNew) },
			converge: convergeOurs},
		stock(true, true),
		stock(false, false),
		stock(true, false),
		gobgpdSetup(true),
		gobgpdSetup(false),
	}
}

// convergence is what one setup measured on the convergence plan.
type convergence struct {
	sync       time.Duration // new client: start → every record
	afterUp    time.Duration // new client: session established → every record
	load       time.Duration // feeders: connect → reflector accepted all
	heapPerRec float64       // reflector Go heap growth per record (bytes; <0 unknown)
	rssPerRec  float64
	rss        int64 // reflector RSS with every record and the new client
	// CPU used during the new client's convergence (start to every
	// record held, not its teardown) by the reflector and by this process
	// (the new client; the idle feeders cost nothing).
	reflCPU, clientCPU time.Duration
	loadCPU            time.Duration // the reflector's, loading every record
}

func measureConvergence(tb testing.TB, s setup, p Plan, profDir string) convergence {
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	r := s.start(tb, p, true)
	defer r.stop()
	before, err := r.figures(ctx, true)
	if err != nil {
		tb.Fatal(err)
	}
	stopProf := profile(tb, r, profDir, s.name+" load")
	t0 := time.Now()
	defer closeAll(load(ctx, tb, r, p))
	var c convergence
	c.load = time.Since(t0)
	stopProf()
	after, err := r.figures(ctx, true)
	if err != nil {
		tb.Fatal(err)
	}
	c.loadCPU = time.Duration(after.CPUns - before.CPUns)
	c.heapPerRec = -1
	if before.Heap >= 0 && after.Heap >= 0 {
		c.heapPerRec = float64(after.Heap-before.Heap) / float64(p.Devices)
	}
	c.rssPerRec = float64(after.RSS-before.RSS) / float64(p.Devices)
	stopProf = profile(tb, r, profDir, s.name)
	cctx, ccancel := context.WithTimeout(context.Background(), loadTimeout)
	defer ccancel()
	sy := s.converge(cctx, tb, r, p)
	c.sync, c.clientCPU, c.afterUp = sy.total, sy.cpu, -1
	if sy.up >= 0 {
		c.afterUp = sy.total - sy.up
	}
	stopProf()
	end, err := r.figures(ctx, false)
	if err != nil {
		tb.Fatal(err)
	}
	c.rss = end.RSS
	c.reflCPU = time.Duration(end.CPUns - after.CPUns)
	tb.Logf("%s: %d records loaded in %v; new client synced in %v, %v after its session came up (CPU: client %.2f s, reflector %.2f s); reflector heap %.0f B/record, RSS %.0f B/record, %d MB",
		s.name, p.Devices, c.load.Round(time.Millisecond), c.sync.Round(time.Millisecond), c.afterUp.Round(time.Millisecond),
		c.clientCPU.Seconds(), c.reflCPU.Seconds(), c.heapPerRec, c.rssPerRec, c.rss>>20)
	return c
}

// sessions is what one setup measured on the sessions plan.
type sessions struct {
	load     time.Duration
	rss      int64
	peakRSS  int64
	cpu      time.Duration // reflector CPU from the first session to every record held
	heap     int64
	accepted int
}

func measureSessions(tb testing.TB, s setup, p Plan) sessions {
	ctx, cancel := context.WithTimeout(context.Background(), sessionsTimeout(p))
	defer cancel()
	r := s.start(tb, p, false)
	defer r.stop()
	f0, err := r.figures(ctx, false)
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	defer closeAll(load(ctx, tb, r, p))
	var m sessions
	m.load = time.Since(t0)
	f, err := r.figures(ctx, false)
	if err != nil {
		tb.Fatal(err)
	}
	m.rss, m.peakRSS, m.cpu, m.accepted = f.RSS, f.PeakRSS, time.Duration(f.CPUns-f0.CPUns), f.Count
	if g, err := r.figures(ctx, true); err == nil {
		m.heap = g.Heap
	}
	tb.Logf("%s: %d sessions × %d records loaded in %v; reflector RSS %d MB (peak %d MB), heap %d MB, CPU %.1f s",
		s.name, p.Switches, p.Devices/p.Switches, m.load.Round(time.Millisecond), m.rss>>20, m.peakRSS>>20, m.heap>>20, m.cpu.Seconds())
	return m
}

// profile, when dir is set, takes a CPU profile of the reflector and of
// this process (the new client) until the returned func is called, then an
// allocation profile of both.
func profile(tb testing.TB, r refl, dir, name string) func() {
	if dir == "" {
		return func() {}
	}
	base := filepath.Join(dir, strings.NewReplacer(" ", "-", ".", "").Replace(name))
	c, _ := r.(*childRefl)
	ctx := context.Background()
	if c != nil {
		if _, err := c.get(ctx, "/cpu/start?file="+base+"-reflector.cpu.pprof"); err != nil {
			tb.Fatal(err)
		}
	}
	f, err := os.Create(base + "-client.cpu.pprof")
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(base + "-client.allocs.pprof"); err == nil {
			pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
		if c != nil {
			if _, err := c.get(ctx, "/cpu/stop?allocs="+base+"-reflector.allocs.pprof"); err != nil {
				tb.Error(err)
			}
		}
	}
}

// BenchmarkScale measures the scale figures of issue #16 for our reflector
// and switch agent and for stock GoBGP (library with and without
// RT-constraint, and Debian's gobgpd when installed), and writes them as
// the "scale" rows of the bench result. BENCH_SCALE=small or -short:
// smoke sizes. BENCH_SCALE_ONLY=ours,… limits the setups;
// BENCH_SCALE_PROFILE=DIR writes CPU and allocation profiles of the
// convergence.
func BenchmarkScale(b *testing.B) {
	sizes, err := SizesFromEnv(testing.Short())
	if err != nil {
		b.Fatal(err)
	}
	only := os.Getenv("BENCH_SCALE_ONLY")
	profDir := os.Getenv("BENCH_SCALE_PROFILE")
	for b.Loop() {
		conv := map[string]convergence{}
		sess := map[string]sessions{}
		many := map[string]manySessions{}
		var names []string
		for _, s := range setups() {
			named := strings.Contains(","+only+",", ","+s.name+",")
			if s.start == nil || only != "" && !named || s.optIn && !named {
				continue
			}
			names = append(names, s.name)
			conv[s.name] = measureConvergence(b, s, s.adjusted(sizes.Convergence), profDir)
			if os.Getenv("BENCH_SCALE_SKIP_SESSIONS") == "" && s.sessions {
				sess[s.name] = measureSessions(b, s, s.adjusted(sizes.Sessions))
			}
			if os.Getenv("BENCH_SCALE_SKIP_MANY") == "" && s.sessions {
				many[s.name] = measureMany(b, s, s.adjusted(sizes.Many))
			}
		}
		rows := scaleRows(sizes, names, conv, sess)
		rows = append(rows, manyRows(sizes.Many, names, many)...)
		if err := result.Write(result.Dir(), "scale", rows); err != nil {
			b.Fatal(err)
		}
		if err := result.Table(os.Stdout, rows); err != nil {
			b.Fatal(err)
		}
	}
}

// scaleRows turns the measurements into result rows: each of our figures
// with each stock setup's as the baseline.
func scaleRows(sz Sizes, names []string, conv map[string]convergence, sess map[string]sessions) []result.Row {
	cp, sp := sz.Convergence, sz.Sessions
	convName := fmt.Sprintf("%dk records in %d zones → new switch agent, start to all in table", cp.Devices/1000, cp.Zones)
	sessName := fmt.Sprintf("one reflector, %d sessions × %d devices", sp.Switches, sp.Devices/sp.Switches)
	var rows []result.Row
	add := func(name, unit, goal string, stock map[string]float64, note string) {
		rows = append(rows, oursVsStock(names, name, unit, goal, stock, note)...)
	}
	pick := func(f func(string) (float64, bool)) map[string]float64 {
		m := map[string]float64{}
		for _, n := range names {
			if v, ok := f(n); ok {
				m[n] = v
			}
		}
		return m
	}
	conv1 := func(f func(convergence) float64) map[string]float64 {
		return pick(func(n string) (float64, bool) {
			c, ok := conv[n]
			if !ok {
				return 0, false
			}
			v := f(c)
			return v, v >= 0
		})
	}
	sess1 := func(f func(sessions) float64) map[string]float64 {
		return pick(func(n string) (float64, bool) {
			s, ok := sess[n]
			if !ok {
				return 0, false
			}
			v := f(s)
			return v, v > 0
		})
	}
	add(convName, "s", "≤ 5 s and ≤ 1.1× stock", conv1(func(c convergence) float64 { return c.sync.Seconds() }),
		"ours: real switch agent (GoBGP speaker, device table, engine) wanting every zone; stock: plain GoBGP client, with RTC asking for the configuration RT and the wildcard as ours does; includes GoBGP's random 1–2 s first-connect delay")
	add(convName+": session established to all in table", "s", "", conv1(func(c convergence) float64 { return c.afterUp.Seconds() }),
		"the same without GoBGP's random 1–2 s wait before its first dial and the OPEN exchange")
	add(convName+": new client's CPU", "s", "", conv1(func(c convergence) float64 { return c.clientCPU.Seconds() }),
		"user+system of the process running the new client, start to all in table (not its teardown); robust to other load on the machine")
	add(convName+": reflector's CPU", "s", "", conv1(func(c convergence) float64 { return c.reflCPU.Seconds() }),
		"user+system of the reflector process over the same time")
	add(fmt.Sprintf("load %dk records from %d switches into the reflector", cp.Devices/1000, cp.Switches), "s", "",
		conv1(func(c convergence) float64 { return c.load.Seconds() }), "raw BGP feeder sessions, one UPDATE per record")
	add(fmt.Sprintf("reflector CPU loading %dk records", cp.Devices/1000), "s", "",
		conv1(func(c convergence) float64 { return c.loadCPU.Seconds() }), "user+system")
	add("reflector Go heap per record", "B", "", conv1(func(c convergence) float64 { return c.heapPerRec }), "after GC; gobgpd: not measurable")
	add("reflector RSS per record", "B", "", conv1(func(c convergence) float64 { return c.rssPerRec }), "")
	add(fmt.Sprintf("reflector RSS with %dk records", cp.Devices/1000), "MB", "",
		conv1(func(c convergence) float64 { return float64(c.rss) / (1 << 20) }), "")
	add(sessName+": reflector RSS", "MB", "≤ 1 GB", sess1(func(s sessions) float64 { return float64(s.rss) / (1 << 20) }),
		"every session sends all its records at once")
	add(sessName+": reflector peak RSS", "MB", "", sess1(func(s sessions) float64 { return float64(s.peakRSS) / (1 << 20) }),
		"GoBGP queues what it has read but not yet processed without bound")
	add(sessName+": reflector Go heap after GC", "MB", "", sess1(func(s sessions) float64 { return float64(s.heap) / (1 << 20) }), "")
	add(sessName+": reflector CPU, sessions up and all records in", "s", "", sess1(func(s sessions) float64 { return s.cpu.Seconds() }), "user+system")
	add(sessName+": load time", "s", "", sess1(func(s sessions) float64 { return s.load.Seconds() }), "")
	return rows
}

// ourSetups are the setups that run our reflector, and what their rows
// are called.
var ourSetups = []struct{ name, suffix string }{{"ours", ""}, {"ours sets", " [device sets]"}}

// oursVsStock is one figure's rows: each of our setups' value with each
// stock setup's as the baseline (the goal on the first), or, when none of
// ours ran, one row per baseline.
func oursVsStock(names []string, name, unit, goal string, stock map[string]float64, note string) []result.Row {
	var rows []result.Row
	anyOurs := false
	for _, o := range ourSetups {
		ours, hasOurs := stock[o.name]
		if !hasOurs {
			continue
		}
		anyOurs = true
		first := true
		for _, n := range names {
			x, ok := stock[n]
			if strings.HasPrefix(n, "ours") || !ok {
				continue
			}
			r := result.Row{Group: "scale", Name: name + o.suffix, Unit: unit, Value: ours, Stock: x, Baseline: n, Note: note}
			if x > 0 {
				r.Ratio = ours / x
			}
			if first {
				r.Goal = goal
				first = false
			}
			rows = append(rows, r)
		}
		if first {
			rows = append(rows, result.Row{Group: "scale", Name: name + o.suffix, Unit: unit, Value: ours, Goal: goal, Note: note})
		}
	}
	if anyOurs {
		return rows
	}
	for _, n := range names {
		if x, ok := stock[n]; ok {
			rows = append(rows, result.Row{Group: "scale", Name: name + " [" + n + "]", Unit: unit, Value: x, Note: note})
		}
	}
	return rows
}
