package switchagent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/porthealth"
)

const testASN = 65000

// simHost plays a host (or target) on the far end of an in-memory access
// port: it registers, queries, and ACKs and records every notification.
type simHost struct {
	t    *testing.T
	link *l2proto.MemLink
	dev  inof.Device
	mu   sync.Mutex
	got  []l2proto.Notification
	seen map[l2proto.AckKey]bool
	cond *sync.Cond
}

func newSimHost(t *testing.T, link *l2proto.MemLink, dev inof.Device) *simHost {
	h := &simHost{t: t, link: link, dev: dev, seen: map[l2proto.AckKey]bool{}}
	h.cond = sync.NewCond(&h.mu)
	go h.read()
	return h
}

// register sends an LLDPDU and, for a host, a zone query, as a host does
// when its port comes up.
func (h *simHost) register(ttl uint16) {
	h.t.Helper()
	h.refresh(ttl)
	if !h.dev.Role.IsHost() {
		return
	}
	q, err := l2proto.MessageFrame(h.link.HardwareAddr(), &l2proto.Message{Version: 1, Queries: []l2proto.ZoneQuery{{Host: h.dev.Addr}}})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.link.WriteFrame(q); err != nil {
		h.t.Fatal(err)
	}
}

// refresh sends only the LLDPDU, as a host does every 30 s.
func (h *simHost) refresh(ttl uint16) {
	h.t.Helper()
	mac := h.link.HardwareAddr()
	l := &l2proto.LLDPDU{ChassisSubtype: 4, ChassisID: mac, PortSubtype: 5, PortID: []byte("sim_" + h.dev.Addr.String()), TTL: ttl,
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Addr: h.dev.Addr, Role: h.dev.Role,
			Protocol: h.dev.Protocol, ProtoVer: l2proto.ProtocolVersion1, Port: h.dev.Port, NQN: h.dev.NQN}}
	f, err := l2proto.LLDPFrame(mac, l)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.link.WriteFrame(f); err != nil {
		h.t.Fatal(err)
	}
}

func (h *simHost) read() {
	buf := make([]byte, 2048)
	for {
		n, err := h.link.ReadFrame(buf)
		if err != nil {
			return
		}
		f, err := l2proto.DecodeFrame(buf[:n])
		if err != nil || f.Message == nil {
			continue
		}
		var acks []l2proto.Ack
		h.mu.Lock()
		for _, nt := range f.Message.Notifications {
			acks = append(acks, l2proto.Ack{Target: nt.Target, Host: nt.Host, Seq: nt.Seq})
			if !h.seen[nt.Key()] {
				h.seen[nt.Key()] = true
				h.got = append(h.got, nt)
			}
		}
		h.cond.Broadcast()
		h.mu.Unlock()
		if len(acks) > 0 {
			if fr, err := l2proto.MessageFrame(h.link.HardwareAddr(), &l2proto.Message{Version: 1, Acks: acks}); err == nil {
				h.link.WriteFrame(fr)
			}
		}
	}
}

// waitFor waits until the notifications received satisfy ok.
func (h *simHost) waitFor(what string, ok func([]l2proto.Notification) bool) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	wake := time.AfterFunc(30*time.Second, func() { h.mu.Lock(); h.cond.Broadcast(); h.mu.Unlock() })
	defer wake.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for !ok(h.got) {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: timed out; host %s received %+v", what, h.dev.Addr, h.got)
		}
		h.cond.Wait()
	}
}

func (h *simHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// last returns a condition: the newest notification about target has
// this state and reason.
func last(target netip.Addr, st inof.State, r inof.Reason) func([]l2proto.Notification) bool {
	return func(ns []l2proto.Notification) bool {
		for i := len(ns) - 1; i >= 0; i-- {
			if ns[i].Target == target {
				return ns[i].State == st && ns[i].Reason == r
			}
		}
		return false
	}
}

// testSwitch is one agent on the fake fabric with in-memory access ports.
type testSwitch struct {
	agent  *Agent
	cancel context.CancelFunc
	done   chan error
	far    map[string]*l2proto.MemLink // the device ends of the access ports
	links  chan l2proto.LinkState
}

// watchLinks is the agent's carrier watch: what the test sends on s.links.
func (s *testSwitch) watchLinks(ctx context.Context, fn func(l2proto.LinkState)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case st := <-s.links:
			fn(st)
		}
	}
}

func startSwitch(t *testing.T, f *bgp.FakeFabric, reflector netip.Addr, id, stateDir string, ports ...string) *testSwitch {
	t.Helper()
	near, far := memPorts(id, ports...)
	s := runSwitch(t, f, reflector, id, stateDir, nil, func(o *Options) { o.AccessPorts = ports }, near)
	s.far = far
	return s
}

// memPorts makes in-memory access ports: the switch's ends and the
// devices' ends, by port name.
func memPorts(id string, ports ...string) (near map[string]l2proto.Link, far map[string]*l2proto.MemLink) {
	near, far = map[string]l2proto.Link{}, map[string]*l2proto.MemLink{}
	for i, p := range ports {
		a, b := l2proto.NewMemPair(p, net.HardwareAddr{2, 0, 0, 0, byte(len(id)), byte(i)}, "dev", net.HardwareAddr{2, 1, 0, 0, byte(len(id)), byte(i)})
		near[p], far[p] = a, b
	}
	return near, far
}

// runSwitch starts an agent whose access ports open from links; edit
// changes the test's default options; reg, if set, gets its metrics.
func runSwitch(t *testing.T, f *bgp.FakeFabric, reflector netip.Addr, id, stateDir string, reg *prometheus.Registry,
	edit func(*Options), links map[string]l2proto.Link) *testSwitch {
	t.Helper()
	return runSwitchLogged(t, f, reflector, id, stateDir, reg, nil, edit, links)
}

// runSwitchLogged is runSwitch with the agent's log going to log (nil: the
// default logger).
func runSwitchLogged(t *testing.T, f *bgp.FakeFabric, reflector netip.Addr, id, stateDir string, reg *prometheus.Registry,
	log *slog.Logger, edit func(*Options), links map[string]l2proto.Link) *testSwitch {
	t.Helper()
	return runSwitchHealth(t, f, reflector, id, stateDir, reg, log, edit, links, nil)
}

// runSwitchHealth is runSwitchLogged with health as the port health
// source (nil: none unless the options name one).
func runSwitchHealth(t *testing.T, f *bgp.FakeFabric, reflector netip.Addr, id, stateDir string, reg *prometheus.Registry,
	log *slog.Logger, edit func(*Options), links map[string]l2proto.Link, health porthealth.Source) *testSwitch {
	t.Helper()
	sp, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr(id)})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.StateDir, o.RouterID, o.ASN = stateDir, id, testASN
	o.Reflectors = []ReflectorOptions{{Address: reflector.String()}}
	o.BFD.Enabled = false
	o.HoldDown = time.Hour
	o.Settle = 300 * time.Millisecond
	edit(&o)
	s := &testSwitch{links: make(chan l2proto.LinkState, 16), done: make(chan error, 1)}
	var registry prometheus.Registerer
	if reg != nil {
		registry = reg // not a typed nil in the interface
	}
	s.agent, err = New(Config{Options: o, Speaker: sp, Registry: registry, Logger: log,
		OpenLink: func(p string) (l2proto.Link, error) {
			if l := links[p]; l != nil {
				return l, nil
			}
			return nil, fmt.Errorf("no link %s", p)
		},
		WatchStray:   func(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil },
		WatchLinks:   s.watchLinks,
		HealthSource: health})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.done <- s.agent.Run(ctx) }()
	t.Cleanup(s.stop)
	return s
}

func (s *testSwitch) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
}

func (s *testSwitch) waitSettled(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !s.agent.settled.Load() {
		if time.Now().After(deadline) {
			t.Fatal("agent never settled")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startReflector(t *testing.T, f *bgp.FakeFabric, clients ...string) netip.Addr {
	t.Helper()
	ra := netip.MustParseAddr("10.255.0.1")
	r, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleReflector, ASN: testASN, RouterID: ra})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	for _, c := range clients {
		if err := r.AddNeighbor(context.Background(), bgp.Neighbor{Address: netip.MustParseAddr(c), RRClient: true}); err != nil {
			t.Fatal(err)
		}
	}
	return ra
}

// TestAgentsOnFakeFabric runs two switch agents and a reflector on the fake
// fabric with in-memory access ports: discovery across switches, link
// down (reason 1), return, a restart of one agent (no notification), and
// the loss of the other switch (reason 7).
func TestAgentsOnFakeFabric(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12")
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1", "swp2")
	dir2 := t.TempDir()
	s2 := startSwitch(t, f, ra, "10.0.0.12", dir2, "swp1")

	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420,
		NQN: "nqn.2014-08.org.example:array"}
	hostA := newSimHost(t, s1.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	hostB := newSimHost(t, s2.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s1.far["swp2"], target)
	hostA.register(120)
	hostB.register(120)
	tgt.register(120)
	for _, h := range []*simHost{hostA, hostB} {
		h.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	}
	hostB.mu.Lock()
	first := hostB.got[len(hostB.got)-1]
	hostB.mu.Unlock()
	if first.Port != 4420 || first.NQN != target.NQN || first.Protocol != inof.ProtocolTCP || first.Role != inof.RoleTarget {
		t.Fatalf("remote host got %+v", first)
	}

	// Link down at the target's port on switch 1.
	s1.links <- l2proto.LinkState{Name: "swp2", Running: false}
	for _, h := range []*simHost{hostA, hostB} {
		h.waitFor("target link down", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
	}
	tgt.register(120)
	for _, h := range []*simHost{hostA, hostB} {
		h.waitFor("target back", last(target.Addr, inof.StateActive, inof.ReasonNone))
	}

	// Switch 2 restarts: its host hears nothing.
	s2.waitSettled(t)
	before := hostB.count()
	s2.stop()
	s2b := startSwitch(t, f, ra, "10.0.0.12", dir2, "swp1")
	// The host does not know the switch restarted: it goes on sending its
	// LLDPDU every 30 s, and queries nothing.
	hostB2 := newSimHost(t, s2b.far["swp1"], hostB.dev)
	hostB2.refresh(120)
	s2b.waitSettled(t)
	// A marker: the target leaves and returns, which hostB2 must hear; all
	// it hears before is the restart's doing.
	s1.links <- l2proto.LinkState{Name: "swp2", Running: false}
	hostB2.waitFor("marker", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
	hostB2.mu.Lock()
	extra := hostB2.got[:len(hostB2.got)-1]
	hostB2.mu.Unlock()
	if len(extra) != 0 || hostB.count() != before {
		t.Fatalf("notifications caused by the restart: %+v (old link: %d new)", extra, hostB.count()-before)
	}
	tgt.register(120)
	hostB2.waitFor("target back after restart", last(target.Addr, inof.StateActive, inof.ReasonNone))

	// Switch 1 vanishes (its session to the reflector is cut): hostB2 on
	// switch 2 hears reason 7 for the target.
	f.Cut(ra, netip.MustParseAddr("10.0.0.11"))
	hostB2.waitFor("switch 1 gone", last(target.Addr, inof.StateInactive, inof.ReasonBFDDown))
}

// TestAgentReadOnlyAPI: a switch serves the admin API read-only: it lists
// the devices it holds and the zones in force, and refuses edits.
func TestAgentReadOnlyAPI(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	newSimHost(t, s1.far["swp1"], target).register(120)

	sock := filepath.Join(t.TempDir(), "api.sock")
	srv, err := api.NewServer(api.ServeOptions{Socket: sock, ReadOnly: true}, s1.agent.API())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := inofv1.NewFabricClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.ListDevices(ctx, &inofv1.ListDevicesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Devices) == 1 && resp.Devices[0].Address == target.Addr.String() && resp.Devices[0].Active &&
			resp.Devices[0].Switch == "10.0.0.11" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("devices: %v", resp.Devices)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{}); err != nil || !z.Settings.DefaultZoneEnabled {
		t.Fatalf("zoning: %v %v", z, err)
	}
	edit := &inofv1.Edit{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: "red"}}}
	_, err = c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{edit}})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an edit on a switch: %v, want PermissionDenied", err)
	}
}

// TestLosslessProfileWaitsForSettle: before the fabric view settles the
// switch cannot know whether a profile is on its way, so it answers
// Unavailable instead of a default a host would apply and then replace;
// once settled with none published it answers the default.
func TestLosslessProfileWaitsForSettle(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11") // 10.0.0.12 is not its client: never settles
	lonely := startSwitch(t, f, ra, "10.0.0.12", t.TempDir(), "swp1")
	if _, err := lonely.agent.API().LosslessProfile(context.Background()); status.Code(err) != codes.Unavailable {
		t.Fatalf("unsettled switch: %v, want Unavailable", err)
	}
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1")
	s1.waitSettled(t)
	p, err := s1.agent.API().LosslessProfile(context.Background())
	if err != nil || p.Name != lossless.Default().Name {
		t.Fatalf("settled switch, no profile published: %v %v", p.Name, err)
	}
}
