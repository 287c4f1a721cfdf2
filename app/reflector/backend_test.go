package reflector

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// waitCond polls cond until it holds; only a broken reflector reaches the
// deadline.
func waitCond(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startSwitch starts a fake switch agent peering with the reflectors and
// returns a device publisher on it.
func startSwitch(t testing.TB, f *bgp.FakeFabric, id string, reflectors ...string) (*bgp.FakeSpeaker, *table.DevicePublisher) {
	t.Helper()
	s, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr(id)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	for _, r := range reflectors {
		if err := s.AddNeighbor(context.Background(), bgp.Neighbor{Address: netip.MustParseAddr(r)}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := table.NewDevicePublisher(table.DevicePublisherOptions{Speaker: s})
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// eventLog records the events a reflector publishes.
type eventLog struct {
	mu  sync.Mutex
	evs []api.Event
}

func (l *eventLog) Publish(e api.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

// of returns the events of one kind about one subject.
func (l *eventLog) of(kind, subject string) []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []api.Event
	for _, e := range l.evs {
		if e.Kind == kind && e.Subject == subject {
			out = append(out, e)
		}
	}
	return out
}

// TestBackendDevices: the device records switches publish reach the
// backend's device list (one entry per address: the active report of a
// dual-homed device), and every join, status change and departure is on the
// event feed.
func TestBackendDevices(t *testing.T) {
	f := bgp.NewFakeFabric()
	const sw1, sw2 = "10.0.1.1", "10.0.1.2"
	evs := &eventLog{}
	r := startReflector(t, Config{Options: testOptions(t, r1ID, nil, []string{sw1, sw2}), NewSpeaker: fakeSpeakers(f, nil), Events: evs})
	_, p1 := startSwitch(t, f, sw1, r1ID)
	_, p2 := startSwitch(t, f, sw2, r1ID)
	b := r.API()
	ctx := context.Background()
	red := record.ZoneRT(testASN, "red")
	t0 := time.UnixMilli(time.Now().UnixMilli())
	dev := func(sw string, addr string, role inof.Role, st inof.State, reason inof.Reason, at time.Time) record.Device {
		return record.Device{Report: inof.Report{Switch: inof.MustParseRouterID(sw),
			Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP},
			Status: inof.Status{State: st, Reason: reason, Changed: at}, AccessPort: "eth1", Since: t0}}
	}
	host := dev(sw1, "192.0.2.10", inof.RoleHost, inof.StateActive, 0, t0)
	tgtA := dev(sw1, "192.0.2.20", inof.RoleTarget, inof.StateActive, 0, t0)
	tgtB := dev(sw2, "192.0.2.20", inof.RoleTarget, inof.StateInactive, inof.ReasonLinkDown, t0.Add(time.Second))
	for _, x := range []struct {
		p *table.DevicePublisher
		d record.Device
	}{{p1, host}, {p1, tgtA}, {p2, tgtB}} {
		if err := x.p.Publish(ctx, x.d, red); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []api.Device {
		ds, err := b.Devices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	waitCond(t, "both devices listed", func() bool {
		ds := list()
		st := r.fabric.devices.Stats()
		return len(ds) == 2 && st.Refused == 0 && st.Evicted == 0 && len(r.fabric.devices.Reports()) == 3
	})
	want := []api.Device{
		{Device: host.Device, Switch: inof.MustParseRouterID(sw1), Status: inof.Status{State: inof.StateActive, Changed: t0}, AccessPort: "eth1", Since: t0},
		{Device: tgtA.Device, Switch: inof.MustParseRouterID(sw1), Status: inof.Status{State: inof.StateActive, Changed: t0}, AccessPort: "eth1", Since: t0},
	}
	if got := list(); !reflect.DeepEqual(got, want) {
		t.Fatalf("devices:\n got %+v\nwant %+v", got, want)
	}
	waitCond(t, "join events", func() bool {
		return len(evs.of("record", "192.0.2.10")) == 1 && len(evs.of("record", "192.0.2.20")) == 2
	})
	if e := evs.of("record", "192.0.2.10")[0]; !strings.Contains(e.Message, "joined") || e.Attributes["switch"] != sw1 {
		t.Fatalf("join event %+v", e)
	}

	// The target's path through sw1 goes down: sw2's report (more recent
	// change) is shown, and the change is an event with its reason.
	down := tgtA
	down.State, down.Reason, down.Changed = inof.StateInactive, inof.ReasonLinkDown, t0.Add(2*time.Second)
	if err := p1.Publish(ctx, down, red); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "the inactive event", func() bool { return len(evs.of("record", "192.0.2.20")) == 3 })
	if e := evs.of("record", "192.0.2.20")[2]; e.Attributes["state"] != "inactive" ||
		e.Attributes["reason"] != inof.ReasonLinkDown.String() || e.Attributes["switch"] != sw1 {
		t.Fatalf("status event %+v", e)
	}
	if got := list()[1]; got.Switch.String() != sw1 || got.State != inof.StateInactive || !got.Changed.Equal(down.Changed) {
		t.Fatalf("target after its link went down: %+v", got)
	}

	// The host leaves: gone from the list, an event says so.
	if err := p1.Withdraw(ctx, host.ID()); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "the host gone", func() bool { return len(list()) == 1 })
	if evs := evs.of("record", "192.0.2.10"); len(evs) != 2 || !strings.Contains(evs[1].Message, "vanished") {
		t.Fatalf("host events %+v", evs)
	}
}

// TestBackendCommitContract: an edit error aborts the transaction and is
// returned wrapped (what the API's dry runs rely on); a refused commit is
// an error too; a good one returns its records.
func TestBackendCommitContract(t *testing.T) {
	f := bgp.NewFakeFabric()
	r := startReflector(t, Config{Options: testOptions(t, r1ID, nil, nil), NewSpeaker: fakeSpeakers(f, nil)})
	b := r.API()
	ctx := context.Background()
	boom := errors.New("dry run")
	if _, err := b.Commit(ctx, func(tx *zones.Tx) error {
		if err := tx.CreateZone("a"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("edit error: %v", err)
	}
	if _, err := b.Commit(ctx, func(tx *zones.Tx) error { return tx.CreateZone(strings.Repeat("x", 64)) }); err == nil {
		t.Fatal("a 64-byte zone name was committed")
	}
	if len(b.Config().Zones) != 0 {
		t.Fatalf("zones after aborted commits: %+v", b.Config().Zones)
	}
	recs, err := b.Commit(ctx, func(tx *zones.Tx) error { return tx.CreateZone("b", zones.MustParseMember("10.0.0.1")) })
	if err != nil || len(recs) != 1 || b.Config().Zones["b"] == nil {
		t.Fatalf("commit: %v %v", recs, err)
	}
}

// TestBackendSessions: the BGP sessions are listed with their kind, and
// their state changes are on the event feed.
func TestBackendSessions(t *testing.T) {
	f := bgp.NewFakeFabric()
	evs := &eventLog{}
	r1 := startReflector(t, Config{Options: testOptions(t, r1ID, []string{r2ID}, []string{clientID}), NewSpeaker: fakeSpeakers(f, nil), Events: evs})
	startReflector(t, Config{Options: testOptions(t, r2ID, []string{r1ID}, []string{clientID}), NewSpeaker: fakeSpeakers(f, nil)})
	startClient(t, f, clientID, r1ID, r2ID)
	b := r1.API()
	waitCond(t, "both sessions established", func() bool {
		ss, err := b.Sessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range ss {
			if s.State == "established" && !s.Since.IsZero() {
				n++
			}
		}
		return n == 2
	})
	ss, _ := b.Sessions(context.Background())
	kinds := map[string]string{}
	for _, s := range ss {
		kinds[s.Peer] = s.Kind
	}
	if want := map[string]string{r2ID: "reflector", clientID: "client"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("session kinds %v, want %v", kinds, want)
	}
	f.Cut(netip.MustParseAddr(r1ID), netip.MustParseAddr(clientID))
	waitCond(t, "the session loss on the feed", func() bool {
		for _, e := range evs.of("session", clientID) {
			if e.Attributes["state"] != "established" && e.Attributes["kind"] == "client" {
				return true
			}
		}
		return false
	})
	if bs, err := b.BFDSessions(context.Background()); err != nil || len(bs) != 0 {
		t.Fatalf("BFD sessions without BFD: %v %v", bs, err)
	}
}

// TestLosslessProfileReplicates: a profile set on one reflector is persisted
// there, adopted and persisted by the other, survives a restart, and an
// older version offered by a reflector that was away does not win.
func TestLosslessProfileReplicates(t *testing.T) {
	f := bgp.NewFakeFabric()
	o1 := testOptions(t, r1ID, []string{r2ID}, nil)
	o2 := testOptions(t, r2ID, []string{r1ID}, nil)
	r1 := startReflector(t, Config{Options: o1, NewSpeaker: fakeSpeakers(f, nil)})
	evs2 := &eventLog{}
	r2 := startReflector(t, Config{Options: o2, NewSpeaker: fakeSpeakers(f, nil), Events: evs2})
	ctx := context.Background()
	if p, err := r2.LosslessProfile(); err != nil || !reflect.DeepEqual(p, lossless.Default()) {
		t.Fatalf("profile before any set: %v", err)
	}
	p := lossless.Default()
	p.Name = "gold"
	if err := r1.SetLosslessProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitCond(t, "r2 adopts gold", func() bool { got, _ := r2.LosslessProfile(); return got.Name == "gold" })
	if got, _ := r2.LosslessProfile(); !reflect.DeepEqual(got, p) {
		t.Fatalf("r2 profile %+v, want %+v", got, p)
	}
	// The event follows the adoption (published after the profile is in
	// effect): wait for it, then check there is one.
	waitCond(t, "r2's lossless event", func() bool { return len(evs2.of("lossless", "gold")) > 0 })
	if evs := evs2.of("lossless", "gold"); len(evs) != 1 {
		t.Fatalf("r2 lossless events %+v", evs)
	}
	for _, o := range []Options{o1, o2} {
		if _, err := os.Stat(o.ProfilePath()); err != nil {
			t.Fatalf("profile not persisted: %v", err)
		}
	}

	// r2 is stopped; r1 sets a newer profile; r2 comes back with gold on
	// disk: it adopts the newer one, and r1 keeps it.
	if err := r2.testStop(); err != nil {
		t.Fatal(err)
	}
	p.Name = "platinum"
	if err := r1.SetLosslessProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	r2b := startReflector(t, Config{Options: o2, NewSpeaker: fakeSpeakers(f, nil)})
	waitCond(t, "r2 back with platinum", func() bool { got, _ := r2b.LosslessProfile(); return got.Name == "platinum" })
	if got, _ := r1.LosslessProfile(); got.Name != "platinum" {
		t.Fatalf("r1 fell back to %q", got.Name)
	}
	// Restarted alone, r1 still has it.
	if err := r1.testStop(); err != nil {
		t.Fatal(err)
	}
	r1b := startReflector(t, Config{Options: o1, NewSpeaker: fakeSpeakers(bgp.NewFakeFabric(), nil)})
	if got, _ := r1b.LosslessProfile(); got.Name != "platinum" {
		t.Fatalf("after a restart r1 has %q", got.Name)
	}
}

// TestMaxDevicesBoundsTheView: with max_devices 2, the third device's
// record is refused by the fabric view and counted (once per event that
// carried it), and the view keeps the first two.
func TestMaxDevicesBoundsTheView(t *testing.T) {
	f := bgp.NewFakeFabric()
	const sw1 = "10.0.1.1"
	o := testOptions(t, r1ID, nil, []string{sw1})
	o.MaxDevices = 2
	r := startReflector(t, Config{Options: o, NewSpeaker: fakeSpeakers(f, nil)})
	_, p1 := startSwitch(t, f, sw1, r1ID)
	ctx := context.Background()
	for i := range 3 {
		d := record.Device{Report: inof.Report{Switch: inof.MustParseRouterID(sw1),
			Device: inof.Device{Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP},
			Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(1000)}, AccessPort: "eth1", Since: time.UnixMilli(1000)}}
		if err := p1.Publish(ctx, d, record.ZoneRT(testASN, "red")); err != nil {
			t.Fatal(err)
		}
	}
	waitCond(t, "third device refused", func() bool {
		return r.fabric.devices.Stats().Refused >= 1 && r.fabric.devices.Len() == 2
	})
}
