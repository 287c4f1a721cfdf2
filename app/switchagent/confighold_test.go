package switchagent

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// logLines is a slog handler that keeps every line (message and
// attributes) for a test to wait for.
type logLines struct {
	mu    sync.Mutex
	cond  *sync.Cond
	lines []string
}

func newLogLines() *logLines {
	l := &logLines{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.cond.Broadcast()
	l.mu.Unlock()
	return nil
}

func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// mark is the index of the next line.
func (l *logLines) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// waitFor waits for a line from index from on that holds every part.
func (l *logLines) waitFor(t *testing.T, from int, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	wake := time.AfterFunc(30*time.Second, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
	defer wake.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; ; i++ {
		for i >= len(l.lines) {
			if time.Now().After(deadline) {
				t.Fatalf("no log line with %q after line %d", parts, from)
			}
			l.cond.Wait()
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l.lines[i], p)
		}
		if ok {
			return
		}
	}
}

// configFabric starts a fake fabric with one reflector serving clients
// and returns it, the reflector's address, and put, which publishes a zone
// store record at the reflector (version v above a base generation).
func configFabric(t *testing.T, clients ...netip.Addr) (*bgp.FakeFabric, netip.Addr,
	func(kind zones.Kind, name string, v uint64, members ...string)) {
	t.Helper()
	ctx := context.Background()
	f := bgp.NewFakeFabric()
	ra := netip.MustParseAddr("10.255.0.1")
	raID, _ := inof.RouterIDFrom(ra)
	refl, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleReflector, ASN: testASN, RouterID: ra})
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(refl.Stop)
	for _, c := range clients {
		if err := refl.AddNeighbor(ctx, bgp.Neighbor{Address: c, RRClient: true}); err != nil {
			t.Fatal(err)
		}
	}
	gen := inof.GenerationAt(time.Now())
	put := func(kind zones.Kind, name string, v uint64, members ...string) {
		t.Helper()
		rec := zones.Record{Key: zones.Key{Kind: kind, Name: name}, Version: zones.Version{Gen: gen + v, RouterID: raID}}
		for _, m := range members {
			rec.Members = append(rec.Members, zones.MustParseMember(m))
		}
		parts, err := configsync.Records(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			p.Reflector = raID
			if err := refl.Publish(ctx, &p, record.ConfigRT(testASN)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f, ra, put
}

// TestFirstStartJudgesUnderNoZoning: a switch that has never received the
// fabric's zoning starts (no state file) with a host h and a target T on
// its ports; the fabric's zoning puts T in zone z with another host only.
// The reflector's configuration arrives held (End-of-RIB deferred). h must
// never be told T active: judged under the empty zoning, where both are
// unzoned, it was (the CI's TestPrivZoneIsolation, an edit within the hold
// of a fresh switch). An unzoned target U, visible to h under the fabric's
// zoning, is told once the hold ends.
func TestFirstStartJudgesUnderNoZoning(t *testing.T) {
	s1Addr := netip.MustParseAddr("10.0.0.11")
	f, ra, put := configFabric(t, s1Addr)
	h := inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	tgt := inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	u := inof.Device{Addr: netip.MustParseAddr("10.2.0.2"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	put(zones.KindZone, "z", 0, "10.1.0.99", tgt.Addr.String())
	f.DeferEndOfRIB(ra)

	logs := newLogLines()
	_, far := runHeldSwitch(t, f, ra, s1Addr, logs, "swp1", "swp2", "swp3")
	host := newSimHost(t, far["swp1"], h)
	newSimHost(t, far["swp2"], tgt).register(120)
	newSimHost(t, far["swp3"], u).register(120)
	host.register(120)
	logs.waitFor(t, 0, "zone configuration held", "object=zone z")
	for _, d := range []inof.Device{tgt, u, h} {
		logs.waitFor(t, 0, "device registered", d.Addr.String())
	}
	logs.mu.Lock()
	for _, l := range logs.lines {
		if strings.Contains(l, "zone configuration no longer held") {
			t.Errorf("the hold ended before the End-of-RIB: %s", l)
		}
	}
	logs.mu.Unlock()
	f.SendEndOfRIB(ra, s1Addr)
	// A marker h must hear: everything before it was sent before.
	host.waitFor("h sees U", last(u.Addr, inof.StateActive, inof.ReasonNone))
	host.mu.Lock()
	defer host.mu.Unlock()
	for _, n := range host.got {
		if n.Target == tgt.Addr {
			t.Errorf("h was told %s %s (reason %s), which the fabric's zoning does not let it see", n.Target, n.State, n.Reason)
		}
	}
}

// runHeldSwitch starts switch addr, new (no state), a client of reflector
// ra, logging to logs, with the access ports given, whose configuration
// hold only the End-of-RIB ends (a minute's bound); it returns the switch
// and the device ends of its ports.
func runHeldSwitch(t *testing.T, f *bgp.FakeFabric, ra, addr netip.Addr, logs *logLines, ports ...string) (*testSwitch, map[string]*l2proto.MemLink) {
	t.Helper()
	near, far := memPorts(addr.String(), ports...)
	s := runSwitchLogged(t, f, ra, addr.String(), t.TempDir(), nil, slog.New(logs), func(o *Options) {
		o.AccessPorts = ports
		o.ConfigHold = time.Minute
	}, near)
	return s, far
}

// remoteSwitch starts a bare speaker for switch addr, a client of
// reflector ra, and returns publish: it publishes a device record of that
// switch (epoch 1, state st, reason why) under the route targets of zones
// zs, replacing the device's last one.
func remoteSwitch(t *testing.T, f *bgp.FakeFabric, ra, addr netip.Addr) (publish func(d inof.Device, st inof.State, why inof.Reason, zs ...string)) {
	t.Helper()
	ctx := context.Background()
	id, _ := inof.RouterIDFrom(addr)
	sp, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: addr})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Stop)
	if err := sp.AddNeighbor(ctx, bgp.Neighbor{Address: ra}); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Truncate(time.Millisecond)
	return func(d inof.Device, st inof.State, why inof.Reason, zs ...string) {
		t.Helper()
		rec := record.Device{Report: inof.Report{Switch: id, Device: d,
			Status: inof.Status{State: st, Reason: why, Changed: time.Now()}, AccessPort: "swp1", Since: since}, Epoch: 1}
		var rts []record.RouteTarget
		for _, z := range zs {
			rts = append(rts, record.ZoneRT(testASN, z))
		}
		if err := sp.Publish(ctx, &rec, rts...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartTakesWholeZoning: two edits are made while a switch is down,
// one moving target T into zone z (which holds alias a) and one taking host
// h2 out of alias a. Neither the old zoning nor the new one lets h2 see T,
// only the mix of the two. The reflector sends the first edit and T's
// record with its table when the switch comes back, the second edit after
// them (the soak's case: a configuration record arriving after a device
// record), then its End-of-RIB. h2 must never be told of T. Without the
// hold the switch put the first edit in force alone and told h2 that T was
// active, and inactive when the second came.
func TestRestartTakesWholeZoning(t *testing.T) {
	s1Addr, f, ra, put, remote, h2, h3, tgt, t9 := wholeZoningFabric(t)

	logs := newLogLines()
	dir := t.TempDir()
	start := func() (*testSwitch, *simHost, *simHost) {
		near, far := memPorts(s1Addr.String(), "swp1", "swp2")
		s := runSwitchLogged(t, f, ra, s1Addr.String(), dir, nil, slog.New(logs), func(o *Options) {
			o.AccessPorts = []string{"swp1", "swp2"}
			o.ConfigHold = time.Minute // only the End-of-RIB ends it here
		}, near)
		s.far = far
		return s, newSimHost(t, far["swp1"], h2), newSimHost(t, far["swp2"], h3)
	}
	s1, host2, host3 := start()
	host2.register(120)
	host3.register(120)
	host3.waitFor("h3 sees T", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
	host2.waitFor("h2 sees t9", last(t9.Addr, inof.StateActive, inof.ReasonNone))
	s1.waitSettled(t)
	s1.stop()

	// While switch 1 is down: T moves into zone z (its switch tags it so).
	put(zones.KindZone, "z", 1, "alias:a", tgt.Addr.String())
	remote(tgt, inof.StateActive, inof.ReasonNone, "y", "z")

	f.DeferEndOfRIB(ra)
	from := logs.mark()
	s1, host2b, host3b := start()
	host2b.refresh(120)
	host3b.refresh(120)
	// The table is in (the first edit and T's record), then the second
	// edit: h2 out of alias a.
	logs.waitFor(t, from, "zone configuration held", "object=zone z")
	from = logs.mark()
	put(zones.KindAlias, "a", 1, "10.9.9.9")
	logs.waitFor(t, from, "zone configuration held", "object=alias a")
	from = logs.mark()
	f.SendEndOfRIB(ra, s1Addr)
	// Said changed once in force, each object once.
	logs.waitFor(t, from, "zone configuration changed", "object=zone z")
	logs.waitFor(t, from, "zone configuration changed", "object=alias a")
	waitUntil(t, "the new zoning in force", func() bool {
		cfg := s1.agent.config.Load()
		z, a := cfg.Zones["z"], cfg.Aliases["a"]
		return z != nil && len(z.Members) == 2 && a != nil && a.Members[0].Addr != h2.Addr
	})
	neverTold(t, remote, t9, tgt, host2b, host2)
	host3b.mu.Lock()
	defer host3b.mu.Unlock()
	for _, n := range host3b.got {
		if n.Target == tgt.Addr {
			t.Errorf("h3, which sees T under both zonings, was told %s %s again after the restart", n.Target, n.State)
		}
	}
}

// TestConfigHoldDue: when the hold ends, from the times it was told.
func TestConfigHoldDue(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	check := func(what string, h *configHold, at time.Time, why string) {
		t.Helper()
		got, gotWhy, ok := h.due()
		if !ok || !got.Equal(at) || gotWhy != why {
			t.Errorf("%s: due %v %q %v, want %v %q", what, got.Sub(t0), gotWhy, ok, at.Sub(t0), why)
		}
	}
	var none configHold
	if _, _, ok := none.due(); ok {
		t.Error("no hold is due")
	}
	h := newConfigHold(5*time.Second, true, zones.Records{}, false)
	if _, _, ok := h.due(); ok {
		t.Error("a hold is due before a session came up")
	}
	h.sessionUp(ms(0))
	h.sessionUp(ms(100)) // only the first session counts
	check("waiting for End-of-RIB", &h, ms(5000), "bound")
	h.record(ms(300), "zone z")
	check("a record before End-of-RIB", &h, ms(5000), "bound")
	h.endOfRIB(ms(400))
	check("End-of-RIB", &h, ms(650), "end-of-rib")
	h.record(ms(600), "zone z")
	check("a record after End-of-RIB", &h, ms(850), "end-of-rib")
	h.record(ms(4900), "zone z")
	check("records up to the bound", &h, ms(5000), "bound")

	h = newConfigHold(time.Second, false, zones.Records{}, false)
	h.sessionUp(ms(0))
	check("no graceful restart: quiet after the session", &h, ms(250), "quiet")
	h.record(ms(100), "zone z")
	check("no graceful restart: quiet after the last record", &h, ms(350), "quiet")

	if h := newConfigHold(0, true, zones.Records{}, false); h.on {
		t.Error("config_hold 0 holds")
	}
}

// TestStartsClosed: which starts know no zoning.
func TestStartsClosed(t *testing.T) {
	fabric := Options{ConfigHold: 5 * time.Second, Reflectors: []ReflectorOptions{{}}}
	direct := Options{ConfigHold: 5 * time.Second} // no reflectors
	for _, c := range []struct {
		what   string
		o      Options
		loaded bool
		saved  savedState
		want   bool
	}{
		{"first start", fabric, false, savedState{}, true},
		{"state file with the zoning", fabric, true, savedState{}, false},
		{"state saved during a first start's hold", fabric, true, savedState{ZoningUnknown: true}, true},
		{"no hold configured", Options{Reflectors: fabric.Reflectors}, false, savedState{}, false},
		{"direct: the zoning is the switch's own", direct, false, savedState{}, false},
	} {
		if got := startsClosed(c.o, c.loaded, c.saved); got != c.want {
			t.Errorf("%s: startsClosed %v, want %v", c.what, got, c.want)
		}
	}
}

// TestReturnTakesWholeZoning: TestRestartTakesWholeZoning's two edits,
// made while switch 1 has lost its only reflector (the link cut, not the
// agent restarted). Back, the switch receives the first edit and T's
// record with the reflector's table and the second edit after them; held
// until the End-of-RIB, h2 is never told of T. Without the hold on return
// the first edit went in force alone and h2 was told T active.
func TestReturnTakesWholeZoning(t *testing.T) {
	s1Addr, f, ra, put, remote, h2, _, tgt, t9 := wholeZoningFabric(t)

	logs := newLogLines()
	s1, far := runHeldSwitch(t, f, ra, s1Addr, logs, "swp1")
	host2 := newSimHost(t, far["swp1"], h2)
	host2.register(120)
	host2.waitFor("h2 sees t9", last(t9.Addr, inof.StateActive, inof.ReasonNone))
	s1.waitSettled(t)

	from := logs.mark()
	f.Cut(ra, s1Addr)
	logs.waitFor(t, from, "every reflector session lost")
	// While switch 1 is cut off: T moves into zone z (its switch tags it so).
	put(zones.KindZone, "z", 1, "alias:a", tgt.Addr.String())
	remote(tgt, inof.StateActive, inof.ReasonNone, "y", "z")
	f.DeferEndOfRIB(ra)
	from = logs.mark()
	f.Mend(ra, s1Addr)
	logs.waitFor(t, from, "zone configuration held", "object=zone z")
	from = logs.mark()
	put(zones.KindAlias, "a", 1, "10.9.9.9") // h2 out of alias a
	logs.waitFor(t, from, "zone configuration held", "object=alias a")
	f.SendEndOfRIB(ra, s1Addr)
	logs.waitFor(t, from, "zone configuration changed", "object=alias a")
	neverTold(t, remote, t9, tgt, host2)
}

// wholeZoningFabric sets up the two-edit case of TestRestartTakesWholeZoning
// on a fake fabric: switch 1 (s1Addr, not started) and switch 2, a bare
// speaker whose records say what the test wants, when it wants (remote);
// zone y holds h3 and target T, zone z the alias a, which holds h2, and
// zone w h2 and t9; T and t9 are published.
func wholeZoningFabric(t *testing.T) (s1Addr netip.Addr, f *bgp.FakeFabric, ra netip.Addr,
	put func(zones.Kind, string, uint64, ...string), remote func(inof.Device, inof.State, inof.Reason, ...string),
	h2, h3, tgt, t9 inof.Device) {
	t.Helper()
	s1Addr, s2Addr := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.12")
	f, ra, put = configFabric(t, s1Addr, s2Addr)
	remote = remoteSwitch(t, f, ra, s2Addr)
	h2 = inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	h3 = inof.Device{Addr: netip.MustParseAddr("10.1.0.3"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	tgt = inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	t9 = inof.Device{Addr: netip.MustParseAddr("10.2.0.9"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	put(zones.KindZone, "y", 0, h3.Addr.String(), tgt.Addr.String())
	put(zones.KindZone, "z", 0, "alias:a")
	put(zones.KindAlias, "a", 0, h2.Addr.String())
	put(zones.KindZone, "w", 0, h2.Addr.String(), t9.Addr.String())
	remote(tgt, inof.StateActive, inof.ReasonNone, "y")
	remote(t9, inof.StateActive, inof.ReasonNone, "w")
	return s1Addr, f, ra, put, remote, h2, h3, tgt, t9
}

// neverTold publishes a marker (t9 inactive) that hosts[0] must hear, and
// then checks that none of hosts was ever told of tgt.
func neverTold(t *testing.T, remote func(inof.Device, inof.State, inof.Reason, ...string), t9, tgt inof.Device, hosts ...*simHost) {
	t.Helper()
	// Everything before the marker was sent before it.
	remote(t9, inof.StateInactive, inof.ReasonLinkDown, "w")
	hosts[0].waitFor("marker", last(t9.Addr, inof.StateInactive, inof.ReasonLinkDown))
	for _, h := range hosts {
		h.mu.Lock()
		for _, n := range h.got {
			if n.Target == tgt.Addr {
				t.Errorf("h2 was told %s %s (reason %s), which neither zoning lets it see", n.Target, n.State, n.Reason)
			}
		}
		h.mu.Unlock()
	}
}

// aheadFabric is a new switch s1 (no state, one access port with host h)
// in its configuration hold, which only the End-of-RIB the fabric defers
// ends; a remote switch publishes target tz in zone z (with h) and target
// tw in zone w (without h).
type aheadFabric struct {
	f        *bgp.FakeFabric
	ra, s1   netip.Addr
	put      func(kind zones.Kind, name string, v uint64, members ...string)
	h        inof.Device
	tz, tw   inof.Device
	sw       *testSwitch
	host     *simHost
	remoteID inof.RouterID
}

func startAheadFabric(t *testing.T) aheadFabric {
	t.Helper()
	s1, s2 := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.12")
	f, ra, put := configFabric(t, s1, s2)
	af := aheadFabric{f: f, ra: ra, s1: s1, put: put,
		h:  inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP},
		tz: inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420},
		tw: inof.Device{Addr: netip.MustParseAddr("10.3.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}}
	af.remoteID, _ = inof.RouterIDFrom(s2)
	put(zones.KindZone, "z", 0, af.h.Addr.String(), af.tz.Addr.String())
	put(zones.KindZone, "w", 0, "10.1.0.99", af.tw.Addr.String())
	publish := remoteSwitch(t, f, ra, s2)
	publish(af.tz, inof.StateActive, inof.ReasonNone, "z")
	publish(af.tw, inof.StateActive, inof.ReasonNone, "w")
	f.DeferEndOfRIB(ra)
	sw, far := runHeldSwitch(t, f, ra, s1, newLogLines(), "swp1")
	af.sw, af.host = sw, newSimHost(t, far["swp1"], af.h)
	af.host.register(120)
	return af
}

// has reports whether s1's device table holds the remote switch's record of d.
func (af aheadFabric) has(d inof.Device) bool {
	_, ok := af.sw.agent.table.Get(record.DeviceID{Switch: af.remoteID, Addr: d.Addr})
	return ok
}

// neverTold fails the test if h was told anything of target d.
func (af aheadFabric) neverTold(t *testing.T, d inof.Device, why string) {
	t.Helper()
	af.host.mu.Lock()
	defer af.host.mu.Unlock()
	for _, n := range af.host.got {
		if n.Target == d.Addr {
			t.Errorf("h was told %s %s %s", n.Target, n.State, why)
		}
	}
}

// TestFirstStartSubscribesAhead: a switch that knows no zoning takes, while
// it holds the zoning it receives, the memberships that zoning will want.
// The record of a remote target in its host's zone arrives during the hold
// (it is in the device table before the End-of-RIB ends the hold), the host
// is told nothing of it while the zoning is held, and is told it active
// once the zoning is in force. The record of a remote target in a zone no
// local device is in never arrives.
func TestFirstStartSubscribesAhead(t *testing.T) {
	af := startAheadFabric(t)
	waitUntil(t, "Tz's record taken during the hold", func() bool { return af.has(af.tz) })
	if !af.sw.agent.ConfigHeld() {
		t.Fatal("the hold ended before the End-of-RIB")
	}
	af.neverTold(t, af.tz, "while the zoning was held")
	af.f.SendEndOfRIB(af.ra, af.s1)
	af.host.waitFor("h sees Tz", last(af.tz.Addr, inof.StateActive, inof.ReasonNone))
	waitUntil(t, "the hold's end", func() bool { return !af.sw.agent.ConfigHeld() })
	if af.has(af.tw) {
		t.Error("the record of a target in zone w, which no local device is in, arrived")
	}
}

// TestSubscribeAheadOnlyWhenClosed: only a hold of no zoning known takes
// memberships ahead, and only once a zone record came. A hold of a zoning
// that was in force (a restart with a state file, a return) must not:
// the records of zones it did not want would be judged under the old
// zoning, and a host told of a target the new one does not let it see.
func TestSubscribeAheadOnlyWhenClosed(t *testing.T) {
	now := time.Now()
	for _, unknown := range []bool{true, false} {
		h := newConfigHold(time.Minute, true, nil, unknown)
		h.sessionUp(now)
		h.localChanged()
		if _, due := h.aheadAt(); due {
			t.Errorf("unknown %v: memberships due ahead before any zone record", unknown)
		}
		h.record(now, "zone z")
		if _, due := h.aheadAt(); due != unknown {
			t.Errorf("unknown %v: memberships due ahead after a zone record: %v, want %v", unknown, due, unknown)
		}
		h.aheadDue = false
		h.localChanged()
		if _, due := h.aheadAt(); due != unknown {
			t.Errorf("unknown %v: memberships due ahead after a local change: %v, want %v", unknown, due, unknown)
		}
	}
}

// TestAheadMembershipLingersAndGoes: a zone the held zoning wanted when the
// switch subscribed ahead, and a later version of it no longer wants, is
// not kept: its membership lingers (MembershipLinger) and goes, and with it
// the record of a remote target only in that zone.
func TestAheadMembershipLingersAndGoes(t *testing.T) {
	af := startAheadFabric(t)
	waitUntil(t, "Tz's record taken ahead", func() bool { return af.has(af.tz) })
	// Still held: h leaves z for w.
	af.put(zones.KindZone, "z", 1, "10.1.0.98", af.tz.Addr.String())
	af.put(zones.KindZone, "w", 1, "10.1.0.99", af.h.Addr.String(), af.tw.Addr.String())
	waitUntil(t, "Tw's record taken ahead", func() bool { return af.has(af.tw) })
	af.f.SendEndOfRIB(af.ra, af.s1)
	af.host.waitFor("h sees Tw", last(af.tw.Addr, inof.StateActive, inof.ReasonNone))
	waitUntil(t, "Tz's record gone with zone z's membership", func() bool { return !af.has(af.tz) })
	af.neverTold(t, af.tz, "which neither zoning in force let it see")
}
