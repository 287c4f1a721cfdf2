package reflector

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// TestQuarantine: a client that publishes a device record of another
// switch, or any configuration record, is refused, counted and
// quarantined: every record it sent is withdrawn from the other clients
// (its own honest ones too) and the reflector's view, its session stays
// up, and when the quarantine ends its honest records come back. An honest
// client is never touched.
func TestQuarantine(t *testing.T) {
	const honest, liar, observer = "10.0.0.11", "10.0.0.13", "10.0.0.12"
	f := bgp.NewFakeFabric()
	evs := &eventLog{}
	o := testOptions(t, r1ID, nil, []string{honest, observer, liar})
	o.Trust.Quarantine = 300 * time.Millisecond
	r := startReflector(t, Config{Options: o, NewSpeaker: fakeSpeakers(f, nil), Events: evs})
	_, hp := startSwitch(t, f, honest, r1ID)
	ls, lp := startSwitch(t, f, liar, r1ID)
	obs, _ := startSwitch(t, f, observer, r1ID)
	seen := newRecordView(t, obs)
	ctx := context.Background()
	red := record.ZoneRT(testASN, zones.DefaultZone)
	if err := obs.Subscribe(ctx, red); err != nil {
		t.Fatal(err)
	}
	dev := func(sw string, last byte) record.Device {
		return record.Device{Report: inof.Report{Switch: inof.MustParseRouterID(sw),
			Device: inof.Device{Addr: netip.AddrFrom4([4]byte{192, 0, 2, last}), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP},
			Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(1000)}, AccessPort: "eth1", Since: time.UnixMilli(1000)}}
	}
	if err := hp.Publish(ctx, dev(honest, 10), red); err != nil {
		t.Fatal(err)
	}
	if err := lp.Publish(ctx, dev(liar, 30), red); err != nil { // the liar's own, honest record
		t.Fatal(err)
	}
	seen.waitFor(t, "both switches' records", func(m map[string]bgp.RecordEvent) bool { return len(m) == 2 })

	// The lie: a record of the honest switch, published by the liar.
	lie := dev(honest, 20)
	lie.Epoch = 1
	if err := ls.Publish(ctx, &lie, red); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "the liar quarantined", func() bool {
		return r.trust.refusals.Counts()[table.RefusedOtherSwitch] == 1 && r.trust.quarantined.Load() == 1 &&
			len(evs.of("trust", liar)) == 1
	})
	seen.waitFor(t, "every record of the liar withdrawn", func(m map[string]bgp.RecordEvent) bool {
		if len(m) != 1 {
			return false
		}
		for _, e := range m {
			return e.Record.(*record.Device).Switch == inof.MustParseRouterID(honest)
		}
		return false
	})
	// The reflector's own view is fed by its own watch, which may come a
	// moment after the observer's.
	waitCond(t, "the reflector's view without the liar's records", func() bool {
		for _, d := range r.fabric.devices.Reports() {
			if d.Switch == inof.MustParseRouterID(liar) || d.Addr == lie.Device.Addr {
				return false
			}
		}
		return true
	})
	if ns, err := r.Neighbors(ctx); err != nil || !established(ns, liar) {
		t.Fatalf("the liar's session: %+v %v", ns, err)
	}

	// The liar takes its lie back; at the end of the quarantine its own
	// record returns.
	if err := ls.Withdraw(ctx, lie.Key()); err != nil {
		t.Fatal(err)
	}
	seen.waitFor(t, "the liar heard again", func(m map[string]bgp.RecordEvent) bool { return len(m) == 2 })
	waitCond(t, "released", func() bool { return r.trust.quarantined.Load() == 0 && len(evs.of("trust", liar)) == 2 })

	// A configuration record from a client, under a zone route target.
	cfg := record.Config{Reflector: inof.MustParseRouterID(r1ID), Kind: uint8(zones.KindSettings), Gen: 1, Writer: 1}
	if err := ls.Publish(ctx, &cfg, red); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "quarantined again", func() bool {
		return r.trust.refusals.Counts()[table.RefusedConfigFromClient] == 1 && len(evs.of("trust", liar)) == 3
	})
	if got := r.trust.refusals.Counts()[table.RefusedOtherSwitch]; got != 1 {
		t.Fatalf("%d device refusals, the honest switch's records counted?", got)
	}
}

// TestQuarantineDiscoveryLie: a client announcing another switch's
// discovery controller (to have hosts referred to an address of its
// choosing) is refused and quarantined; the owner's own record is taken.
func TestQuarantineDiscoveryLie(t *testing.T) {
	const honest, liar = "10.0.0.11", "10.0.0.13"
	f := bgp.NewFakeFabric()
	evs := &eventLog{}
	o := testOptions(t, r1ID, nil, []string{honest, liar})
	r := startReflector(t, Config{Options: o, NewSpeaker: fakeSpeakers(f, nil), Events: evs})
	hs, _ := startSwitch(t, f, honest, r1ID)
	ls, _ := startSwitch(t, f, liar, r1ID)
	ctx := context.Background()
	own := &record.Discovery{Switch: inof.MustParseRouterID(honest), Port: 8009,
		Endpoints: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24")}}
	if err := hs.Publish(ctx, own, record.DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	lie := &record.Discovery{Switch: inof.MustParseRouterID(honest), Port: 8009,
		Endpoints: []netip.Prefix{netip.MustParsePrefix("198.51.100.66/24")}}
	if err := ls.Publish(ctx, lie, record.DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	// The lie may be counted twice: published before the reflector's
	// watch has read the table, it is in that first read and in the
	// stream (a watch is level-based; every re-read delivers again).
	waitCond(t, "the liar quarantined", func() bool {
		return r.trust.refusals.Counts()[table.RefusedOtherSwitch] >= 1 && r.trust.quarantined.Load() == 1 && len(evs.of("trust", liar)) == 1
	})
	if ev := evs.of("trust", liar)[0]; !strings.Contains(ev.Message, "a discovery record of switch "+honest) {
		t.Fatalf("trust event %q", ev.Message)
	}
}

// established reports whether the neighbor's session is up.
func established(ns []bgp.NeighborStatus, addr string) bool {
	for _, n := range ns {
		if n.Address.String() == addr {
			return n.State == bgp.StateEstablished
		}
	}
	return false
}

// deviceView is what a client's best table holds of device records.
type deviceView struct {
	mu   sync.Mutex
	recs map[string]bgp.RecordEvent
}

func newRecordView(t testing.TB, s bgp.Speaker) *deviceView {
	t.Helper()
	v := &deviceView{recs: map[string]bgp.RecordEvent{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	err := s.WatchRecords(ctx, func(ev bgp.RecordEvent) {
		if len(ev.Key) == 0 || record.Type(ev.Key[0]) != record.TypeDevice {
			return
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if ev.Withdrawn {
			delete(v.recs, string(ev.Key))
		} else {
			v.recs[string(ev.Key)] = ev
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *deviceView) waitFor(t testing.TB, what string, cond func(map[string]bgp.RecordEvent) bool) {
	t.Helper()
	waitCond(t, what, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return cond(v.recs)
	})
}
