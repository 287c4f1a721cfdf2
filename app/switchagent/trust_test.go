package switchagent

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// TestSwitchRefusesWhatItsSenderDoesNotOwn: a compromised switch on the
// (fake) fabric tries to rewrite the zoning and to speak for another
// switch, and a host tries to make its switch resend another host's
// notifications. Every attempt is refused and counted, and no host hears a
// thing until a real change (the target's link going down) says the fabric
// still works.
func TestSwitchRefusesWhatItsSenderDoesNotOwn(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11", "10.0.0.12", "10.0.0.13")
	raID, _ := inof.RouterIDFrom(ra)
	s1 := startSwitch(t, f, ra, "10.0.0.11", t.TempDir(), "swp1", "swp2", "swp3")
	s2 := startSwitch(t, f, ra, "10.0.0.12", t.TempDir(), "swp1")
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	hostA := newSimHost(t, s1.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	tgt := newSimHost(t, s1.far["swp2"], target)
	hostC := newSimHost(t, s1.far["swp3"], inof.Device{Addr: netip.MustParseAddr("10.1.0.3"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	hostB := newSimHost(t, s2.far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	for _, h := range []*simHost{hostA, tgt, hostC, hostB} {
		h.register(120)
	}
	for _, h := range []*simHost{hostA, hostB, hostC} {
		h.waitFor("target active", last(target.Addr, inof.StateActive, inof.ReasonNone))
	}
	s1.waitSettled(t)
	s2.waitSettled(t)
	heard := map[*simHost]int{hostA: hostA.count(), hostB: hostB.count(), hostC: hostC.count()}

	// The attacker: switch 10.0.0.13, a client of the reflector like the
	// others, publishing what it likes.
	ctx := context.Background()
	bad, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr("10.0.0.13")})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bad.Stop)
	if err := bad.AddNeighbor(ctx, bgp.Neighbor{Address: ra}); err != nil {
		t.Fatal(err)
	}
	// 1. Zoning off (the default zone disabled: every host would lose its
	// targets), as the reflector's own copy, under the default zone's route
	// target: it reaches every switch, which must refuse it.
	settings := zones.Record{Key: zones.Key{Kind: zones.KindSettings},
		Version:  zones.Version{Gen: inof.GenerationAt(time.Now().Add(time.Minute)), RouterID: raID},
		Settings: zones.Settings{DefaultZoneEnabled: false, HardZoning: true}}
	parts, err := configsync.Records(settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		p.Reflector = raID
		if err := bad.Publish(ctx, &p, record.ZoneRT(testASN, zones.DefaultZone)); err != nil {
			t.Fatal(err)
		}
		// 2. The same under the configuration route target: the
		// reflector's import policy keeps it from every switch.
		p.Name = "" // settings: the same object
		if err := bad.Publish(ctx, &p, record.ConfigRT(testASN)); err != nil {
			t.Fatal(err)
		}
	}
	// 3. Switch 1's target as inactive, under switch 1's key and a higher
	// epoch, so that receivers would take it over the real record.
	var real record.Device
	for _, d := range s1.agent.fab.(*bgpFabric).pubs.pub.Published() {
		if d.Record.Device.Addr == target.Addr {
			real = d.Record
		}
	}
	if real.Switch == 0 {
		t.Fatal("switch 1 publishes no record of the target")
	}
	forged := real
	forged.Epoch++
	forged.State, forged.Reason, forged.Changed = inof.StateInactive, inof.ReasonLinkDown, time.Now()
	if err := bad.Publish(ctx, &forged, record.ZoneRT(testASN, zones.DefaultZone)); err != nil {
		t.Fatal(err)
	}
	// 4. Host C asks, on its own port, for host A's targets.
	q, err := l2proto.MessageFrame(hostC.link.HardwareAddr(), &l2proto.Message{Version: 1,
		Queries: []l2proto.ZoneQuery{{Host: hostA.dev.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	sentA := s1.agent.ports.ports["swp1"].nt.Stats().Sent
	if err := hostC.link.WriteFrame(q); err != nil {
		t.Fatal(err)
	}

	refused := func(s *testSwitch, reason string) uint64 { return s.agent.fab.refusals()[reason] }
	waitUntil(t, "the attacks refused and counted", func() bool {
		return refused(s1, table.RefusedConfigRT) >= 1 && refused(s2, table.RefusedConfigRT) >= 1 &&
			refused(s1, table.RefusedOtherSwitch) >= 1 && refused(s2, table.RefusedOtherSwitch) >= 1 &&
			s1.agent.met.drops.Counts()["query-unregistered-host"] == 1
	})
	for _, s := range []*testSwitch{s1, s2} {
		if cfg := s.agent.config.Load(); !cfg.Settings.DefaultZoneEnabled {
			t.Fatal("a switch took the attacker's settings")
		}
	}
	if got := s1.agent.ports.ports["swp1"].nt.Stats().Sent; got != sentA {
		t.Fatalf("host A was sent %d notifications after host C's query for it", got-sentA)
	}

	// A real change, then nothing else must have been heard.
	s1.links <- l2proto.LinkState{Name: "swp2", Running: false}
	for h, before := range heard {
		h.waitFor("target link down", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
		h.mu.Lock()
		extra := h.got[before : len(h.got)-1]
		h.mu.Unlock()
		if len(extra) != 0 {
			t.Errorf("host %s heard %+v from the attacks", h.dev.Addr, extra)
		}
	}
}

// waitUntil polls cond until it holds or 30 s pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
