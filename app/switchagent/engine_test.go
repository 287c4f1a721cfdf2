package switchagent

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

const (
	self   = 0x0a000001
	remote = 0x0a000002
	other  = 0x0a000003
)

var (
	hostA = inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	hostB = inof.Device{Addr: netip.MustParseAddr("10.1.0.2"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	tgt1  = inof.Device{Addr: netip.MustParseAddr("10.2.0.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	tgt2  = inof.Device{Addr: netip.MustParseAddr("10.2.0.2"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
)

func newEngine(t *testing.T, cfg *zones.Config) *Engine {
	t.Helper()
	e, err := NewEngine(self, 30*time.Second, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func zoned(settings zones.Settings, zs map[string][]string) *zones.Config {
	c := zones.NewConfig(settings)
	for name, members := range zs {
		z := &zones.Zone{Name: name}
		for _, m := range members {
			z.Members = append(z.Members, zones.MustParseMember(m))
		}
		c.Zones[name] = z
	}
	return c
}

type want struct {
	port   string
	host   inof.Device
	target inof.Device
	state  inof.State
	reason inof.Reason
}

func notices(t *testing.T, what string, out Output, ws ...want) {
	t.Helper()
	var exp []PortNotice
	for _, w := range ws {
		exp = append(exp, PortNotice{Port: w.port, Notice: Notice{Host: w.host.Addr, Target: w.target, State: w.state, Reason: w.reason}})
	}
	if len(exp) == 0 && len(out.Notices) == 0 {
		return
	}
	if !reflect.DeepEqual(out.Notices, exp) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, out.Notices, exp)
	}
}

func active(port string, h, tg inof.Device) want { return want{port, h, tg, inof.StateActive, 0} }
func inactive(port string, h, tg inof.Device, r inof.Reason) want {
	return want{port, h, tg, inof.StateInactive, r}
}

func TestEngineDiscoveryAndFailover(t *testing.T) {
	e := newEngine(t, nil) // default zone only
	now := at(0)
	out := e.Register(registration("swp1", hostA, now), now)
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Publish[0].Zones, []string{zones.DefaultZone}) {
		t.Fatalf("register published %+v", out.Publish)
	}
	if !reflect.DeepEqual(out.Subscriptions, []string{zones.DefaultZone}) {
		t.Fatalf("subscriptions %v", out.Subscriptions)
	}
	notices(t, "registration alone notifies nobody", out)
	notices(t, "zone query with nothing", e.ZoneQuery(hostA.Addr))

	notices(t, "target joins", e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}),
		active("swp1", hostA, tgt1))
	notices(t, "same record again (reflector copy)", e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}))
	notices(t, "zone query answers everything", e.ZoneQuery(hostA.Addr), active("swp1", hostA, tgt1))

	notices(t, "target link down", e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(2)}}),
		inactive("swp1", hostA, tgt1, inof.ReasonLinkDown))
	notices(t, "withdraw after hold-down", e.Gone(remote, tgt1.Addr))

	e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(3)}})
	notices(t, "remote switch vanishes", e.Gone(remote, tgt1.Addr), inactive("swp1", hostA, tgt1, inof.ReasonBFDDown))
}

func TestEngineLocalTargetAndHost(t *testing.T) {
	e := newEngine(t, nil)
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	out := e.Register(registration("swp2", tgt1, at(1)), at(1))
	notices(t, "local target joins", out, active("swp1", hostA, tgt1))
	out = e.Unregister("swp2", tgt1.Addr, inof.ReasonLinkDown, at(2))
	notices(t, "local target link down", out, inactive("swp1", hostA, tgt1, inof.ReasonLinkDown))
	if len(out.Publish) != 1 || out.Publish[0].Record.State != inof.StateInactive {
		t.Fatalf("published %+v", out.Publish)
	}
	if next, ok := e.NextTick(); !ok || !next.Equal(at(32)) {
		t.Fatalf("next tick %v %v", next, ok)
	}
	out = e.Tick(at(32))
	if len(out.Withdraw) != 1 || out.Withdraw[0].Device.Addr != tgt1.Addr {
		t.Fatalf("withdraw %+v", out.Withdraw)
	}
	notices(t, "withdraw of an inactive local record", out)

	// The host leaves: nothing is sent to it any more.
	e.Unregister("swp1", hostA.Addr, inof.ReasonAgeOut, at(40))
	notices(t, "target joins after the host left", e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(41)}}))
}

func TestEngineZoneChange(t *testing.T) {
	hard := zones.Settings{DefaultZoneEnabled: true, HardZoning: true}
	red := zoned(hard, map[string][]string{"red": {"10.1.0.1", "10.2.0.1"}, "blue": {"10.1.0.2", "10.2.0.2"}})
	e := newEngine(t, red)
	out := e.Register(registration("swp1", hostA, at(0)), at(0))
	if !reflect.DeepEqual(out.Publish[0].Zones, []string{"red"}) {
		t.Fatalf("tags %v", out.Publish[0].Zones)
	}
	e.Register(registration("swp2", hostB, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	e.ZoneQuery(hostB.Addr)
	out = e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	notices(t, "red target", out, active("swp1", hostA, tgt1))
	out = e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	notices(t, "blue target", out, active("swp2", hostB, tgt2))

	// Move tgt1 from red to blue: hostA loses it (reason 4), hostB gains it.
	moved := zoned(hard, map[string][]string{"red": {"10.1.0.1"}, "blue": {"10.1.0.2", "10.2.0.2", "10.2.0.1"}})
	out = e.Config(moved)
	notices(t, "zone change", out, inactive("swp1", hostA, tgt1, inof.ReasonZoneChange), active("swp2", hostB, tgt1))
	if len(out.Publish) != 0 {
		t.Fatalf("no local device changed zones, yet published %+v", out.Publish)
	}
	// Move hostA into blue: its record is re-tagged, it gains both targets.
	out = e.Config(zoned(hard, map[string][]string{"blue": {"10.1.0.1", "10.1.0.2", "10.2.0.2", "10.2.0.1"}}))
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Publish[0].Zones, []string{"blue"}) {
		t.Fatalf("re-tag %+v", out.Publish)
	}
	if !reflect.DeepEqual(out.Subscriptions, []string{"blue"}) {
		t.Fatalf("subscriptions %v", out.Subscriptions)
	}
	notices(t, "host moved", out, active("swp1", hostA, tgt1), active("swp1", hostA, tgt2))
}

func TestEngineDualHomedTarget(t *testing.T) {
	e := newEngine(t, nil)
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	pathA, pathB := tgt1, tgt2
	pathB.NQN, pathA.NQN = "nqn.x:array", "nqn.x:array"
	e.Record(inof.Report{Switch: remote, Device: pathA, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	e.Record(inof.Report{Switch: other, Device: pathB, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	out := e.Record(inof.Report{Switch: other, Device: pathB, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(2)}})
	notices(t, "one path down", out, inactive("swp1", hostA, pathB, inof.ReasonLinkDown))
	if got := e.Told()[hostA.Addr]; !reflect.DeepEqual(got, []inof.Device{pathA}) {
		t.Fatalf("told %v", got)
	}
}

func TestEngineRestartIsSilent(t *testing.T) {
	e := newEngine(t, nil)
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	e.Record(inof.Report{Switch: remote, Device: tgt2, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	published, told := e.Published(), e.Told()

	// The agent restarts; tgt2 went away while it was down.
	r := newEngine(t, nil)
	out := r.Restore(published, told, nil, at(10))
	if len(out.Publish) != 1 || !reflect.DeepEqual(out.Subscriptions, []string{zones.DefaultZone}) {
		t.Fatalf("restore: %+v", out)
	}
	notices(t, "restore", out)
	notices(t, "tgt1 comes back from BGP", r.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}))
	notices(t, "the host's LLDPDU", r.Register(registration("swp1", hostA, at(0)), at(11)))
	notices(t, "resync after End-of-RIB", r.Resync(), inactive("swp1", hostA, tgt2, inof.ReasonBFDDown))
	notices(t, "second resync", r.Resync())
}

func TestEngineSoftZoningSubscribesEverything(t *testing.T) {
	soft := zones.Settings{DefaultZoneEnabled: true, HardZoning: false}
	e := newEngine(t, zoned(soft, map[string][]string{"red": {"10.2.0.1"}, "blue": {"10.2.0.2"}}))
	out := e.Register(registration("swp1", hostA, at(0)), at(0)) // unzoned host
	if want := []string{"blue", "default", "red"}; !reflect.DeepEqual(out.Subscriptions, want) {
		t.Fatalf("subscriptions %v, want %v", out.Subscriptions, want)
	}
	e.ZoneQuery(hostA.Addr)
	notices(t, "zoned target seen by an unzoned host", e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}),
		active("swp1", hostA, tgt1))
}

// TestEngineRetiredEpochWaitsForTheNewOne: a remote target that left one of
// its zones but still shares another with the local host is moved to a new
// epoch by its switch; the old one is retired (inactive, reason 4, then
// withdrawn) and may arrive first. The host is told nothing when the new
// epoch follows within RetireGrace, and "inactive, zone change" when it
// does not.
func TestEngineRetiredEpochWaitsForTheNewOne(t *testing.T) {
	hard := zones.Settings{DefaultZoneEnabled: true, HardZoning: true}
	both := zoned(hard, map[string][]string{"red": {"10.1.0.1", "10.2.0.1"}, "blue": {"10.1.0.1", "10.2.0.1"}})
	now := at(0)
	e := newEngine(t, both)
	e.clock = func() time.Time { return now }
	e.Register(registration("swp1", hostA, now), now)
	e.ZoneQuery(hostA.Addr)
	up := inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}
	notices(t, "target joins", e.Record(up), active("swp1", hostA, tgt1))

	out := e.Config(zoned(hard, map[string][]string{"red": {"10.1.0.1", "10.2.0.1"}, "blue": {"10.1.0.1"}}))
	notices(t, "the target leaves blue, still in red with the host", out)
	retired := inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonZoneChange, Changed: at(2)}}
	notices(t, "old epoch retired before the new one came", e.Record(retired))
	notices(t, "old epoch withdrawn", e.Gone(remote, tgt1.Addr))
	if next, ok := e.NextTick(); !ok || !next.Equal(now.Add(RetireGrace)) {
		t.Fatalf("next tick %v %v, want the end of the grace", next, ok)
	}
	notices(t, "a zone query meanwhile", e.ZoneQuery(hostA.Addr), active("swp1", hostA, tgt1))
	now = now.Add(time.Second)
	notices(t, "new epoch", e.Record(up))
	if _, ok := e.NextTick(); ok {
		t.Fatal("still waiting after the new epoch came")
	}
	notices(t, "grace over, nothing to tell", e.Tick(now.Add(RetireGrace)))

	// Retired again, and no new epoch comes (this switch does not hear
	// the device's new zones): the host is told at the end of the grace.
	notices(t, "retired again", e.Record(retired))
	notices(t, "withdrawn again", e.Gone(remote, tgt1.Addr))
	notices(t, "before the end of the grace", e.Tick(now.Add(RetireGrace-time.Millisecond)))
	notices(t, "at the end of the grace", e.Tick(now.Add(RetireGrace)), inactive("swp1", hostA, tgt1, inof.ReasonZoneChange))
	if _, ok := e.NextTick(); ok {
		t.Fatal("still waiting after the grace")
	}
}

// TestEngineRetiredEpochOfAHiddenTarget: when this switch's own zoning
// hides the target, the host is told at once (the configuration says so),
// whatever the records do.
func TestEngineRetiredEpochOfAHiddenTarget(t *testing.T) {
	hard := zones.Settings{DefaultZoneEnabled: true, HardZoning: true}
	now := at(0)
	e := newEngine(t, zoned(hard, map[string][]string{"red": {"10.1.0.1", "10.2.0.1"}}))
	e.clock = func() time.Time { return now }
	e.Register(registration("swp1", hostA, now), now)
	e.ZoneQuery(hostA.Addr)
	notices(t, "target joins", e.Record(inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}),
		active("swp1", hostA, tgt1))
	notices(t, "retired first", e.Record(inof.Report{Switch: remote, Device: tgt1,
		Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonZoneChange, Changed: at(2)}}))
	notices(t, "the zoning hides it", e.Config(zoned(hard, map[string][]string{"red": {"10.1.0.1"}, "blue": {"10.2.0.1"}})),
		inactive("swp1", hostA, tgt1, inof.ReasonZoneChange))
	notices(t, "end of the grace: already told", e.Tick(now.Add(RetireGrace)))
}

// TestEngineHostOnSickPort: a local host whose port turns sick is told
// every target it was told active is inactive with the port's reason (the
// paths through that port: it fails them over to its other NIC), is told
// nothing while sick (a new target, its own query, a second reason), keeps
// its zones subscribed, and is told every usable target active at
// recovery. The same address also registered on a healthy port is told
// nothing: a notification names a path by the two addresses, not a port.
func TestEngineHostOnSickPort(t *testing.T) {
	e := newEngine(t, nil)
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	for _, tg := range []inof.Device{tgt1, tgt2} {
		e.Record(inof.Report{Switch: remote, Device: tg, Status: inof.Status{State: inof.StateActive, Changed: at(1)}})
	}
	out := e.PortHealth("swp1", inof.ReasonPFCStorm, at(2))
	notices(t, "storm on the host's port", out,
		inactive("swp1", hostA, tgt1, inof.ReasonPFCStorm), inactive("swp1", hostA, tgt2, inof.ReasonPFCStorm))
	if len(out.Publish) != 1 || out.Publish[0].Record.State != inof.StateInactive || out.Publish[0].Record.Reason != inof.ReasonPFCStorm {
		t.Fatalf("published %+v", out.Publish)
	}
	if out.Subscriptions != nil {
		t.Fatalf("a sick host's zones were given up: %v", out.Subscriptions)
	}
	tgt3 := tgt2
	tgt3.Addr = netip.MustParseAddr("10.2.0.3")
	notices(t, "a target joins while the host is sick",
		e.Record(inof.Report{Switch: remote, Device: tgt3, Status: inof.Status{State: inof.StateActive, Changed: at(3)}}))
	notices(t, "the sick host's zone query", e.ZoneQuery(hostA.Addr))
	notices(t, "errors too", e.PortHealth("swp1", inof.ReasonPacketErr, at(4)))
	notices(t, "recovery", e.PortHealth("swp1", inof.ReasonNone, at(5)),
		active("swp1", hostA, tgt1), active("swp1", hostA, tgt2), active("swp1", hostA, tgt3))

	// Sick, then gone: nothing more after the inactive notices.
	notices(t, "errors", e.PortHealth("swp1", inof.ReasonPacketErr, at(6)),
		inactive("swp1", hostA, tgt1, inof.ReasonPacketErr), inactive("swp1", hostA, tgt2, inof.ReasonPacketErr),
		inactive("swp1", hostA, tgt3, inof.ReasonPacketErr))
	notices(t, "the sick host leaves", e.Unregister("swp1", hostA.Addr, inof.ReasonLinkDown, at(7)))
	notices(t, "a target leaves after the host", e.Record(inof.Report{Switch: remote, Device: tgt1,
		Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: at(8)}}))

	// One address on two ports, one of them sick: nothing to tell.
	e.Register(registration("swp2", hostB, at(10)), at(10))
	e.Register(registration("swp3", hostB, at(10)), at(10))
	e.ZoneQuery(hostB.Addr)
	notices(t, "one of two ports of one address sick", e.PortHealth("swp2", inof.ReasonPFCStorm, at(11)))
}
