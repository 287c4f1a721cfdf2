package switchagent

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

var hostDev = inof.Device{Addr: netip.MustParseAddr("10.0.0.7"), Role: inof.RoleHost, Protocol: inof.ProtocolRoCE}

func at(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0) }

func one(t *testing.T, what string, as []Action) Action {
	t.Helper()
	if len(as) != 1 {
		t.Fatalf("%s: %d actions %+v, want 1", what, len(as), as)
	}
	return as[0]
}

func TestLocalLeavingIsAStatus(t *testing.T) {
	l := NewLocal(30 * time.Second)
	a := one(t, "register", l.Register(registration("swp1", hostDev, at(0)), at(0)))
	if a.Withdraw || a.Record.State != inof.StateActive || a.Record.AccessPort != "swp1" || !a.Record.Changed.Equal(at(0)) {
		t.Fatalf("register published %+v", a)
	}
	if as := l.Register(registration("swp1", hostDev, at(0)), at(30)); len(as) != 0 {
		t.Fatalf("an unchanged refresh published %+v", as)
	}
	a = one(t, "link down", l.Unregister("swp1", hostDev.Addr, inof.ReasonLinkDown, at(40)))
	if a.Withdraw || a.Record.State != inof.StateInactive || a.Record.Reason != inof.ReasonLinkDown || !a.Record.Changed.Equal(at(40)) {
		t.Fatalf("link down published %+v", a)
	}
	if next, ok := l.NextExpiry(); !ok || !next.Equal(at(70)) {
		t.Fatalf("NextExpiry = %v %v, want %v", next, ok, at(70))
	}
	if as := l.Expire(at(69)); len(as) != 0 {
		t.Fatalf("withdrawn before the hold-down ended: %+v", as)
	}
	a = one(t, "hold-down over", l.Expire(at(70)))
	if !a.Withdraw || a.Record.Device.Addr != hostDev.Addr {
		t.Fatalf("expire gave %+v", a)
	}
	if len(l.Published()) != 0 {
		t.Fatal("withdrawn record still listed")
	}
}

func TestLocalComesBackDuringHoldDown(t *testing.T) {
	l := NewLocal(30 * time.Second)
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	l.Unregister("swp1", hostDev.Addr, inof.ReasonAgeOut, at(10))
	a := one(t, "back", l.Register(registration("swp1", hostDev, at(12)), at(12)))
	if a.Record.State != inof.StateActive || a.Record.Reason != inof.ReasonNone || !a.Record.Changed.Equal(at(12)) {
		t.Fatalf("return published %+v", a)
	}
	if _, ok := l.NextExpiry(); ok {
		t.Fatal("a returned device is still scheduled for withdrawal")
	}
	if as := l.Expire(at(100)); len(as) != 0 {
		t.Fatalf("returned device withdrawn: %+v", as)
	}
}

// TestLocalLeavesAgain checks that a device that left, came back and left
// again is withdrawn a hold-down after its last departure, not its first,
// among other devices leaving in between.
func TestLocalLeavesAgain(t *testing.T) {
	l := NewLocal(30 * time.Second)
	other := inof.Device{Addr: netip.MustParseAddr("10.0.0.8"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	l.Register(registration("swp2", other, at(0)), at(0))
	l.Unregister("swp1", hostDev.Addr, inof.ReasonLinkDown, at(10))
	l.Register(registration("swp1", hostDev, at(12)), at(12))
	l.Unregister("swp2", other.Addr, inof.ReasonAgeOut, at(15))
	l.Unregister("swp1", hostDev.Addr, inof.ReasonLinkDown, at(20))
	if next, ok := l.NextExpiry(); !ok || !next.Equal(at(45)) {
		t.Fatalf("NextExpiry = %v %v, want %v (the other device's)", next, ok, at(45))
	}
	if as := l.Expire(at(44)); len(as) != 0 {
		t.Fatalf("withdrawn at the first departure's deadline: %+v", as)
	}
	if a := one(t, "other expires", l.Expire(at(45))); a.Record.Device.Addr != other.Addr {
		t.Fatalf("expired %+v", a)
	}
	if next, ok := l.NextExpiry(); !ok || !next.Equal(at(50)) {
		t.Fatalf("NextExpiry = %v %v, want %v", next, ok, at(50))
	}
	if a := one(t, "host expires", l.Expire(at(50))); !a.Withdraw || a.Record.Device.Addr != hostDev.Addr {
		t.Fatalf("expired %+v", a)
	}
	if _, ok := l.NextExpiry(); ok {
		t.Fatal("nothing is leaving, yet NextExpiry has a deadline")
	}
}

func TestLocalTwoPorts(t *testing.T) {
	l := NewLocal(0)
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	if as := l.Register(registration("swp2", hostDev, at(5)), at(5)); len(as) != 0 {
		t.Fatalf("a second port with a newer registration republished: %+v", as)
	}
	a := one(t, "first port down", l.Unregister("swp1", hostDev.Addr, inof.ReasonLinkDown, at(6)))
	if a.Record.State != inof.StateActive || a.Record.AccessPort != "swp2" || !a.Record.Changed.Equal(at(0)) {
		t.Fatalf("the other port should keep it active: %+v", a)
	}
	a = one(t, "second port down", l.Unregister("swp2", hostDev.Addr, inof.ReasonLinkDown, at(7)))
	if a.Record.State != inof.StateInactive {
		t.Fatalf("got %+v", a)
	}
	if as := l.Unregister("swp2", hostDev.Addr, inof.ReasonLinkDown, at(8)); len(as) != 0 {
		t.Fatalf("a repeated link down published %+v", as)
	}
}

func TestLocalDeviceChangeRepublishes(t *testing.T) {
	l := NewLocal(0)
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	changed := hostDev
	changed.NQN = "nqn.2014-08.org.nvmexpress:uuid:1"
	a := one(t, "nqn learned", l.Register(registration("swp1", changed, at(0)), at(3)))
	if a.Record.Device != changed || !a.Record.Changed.Equal(at(0)) {
		t.Fatalf("got %+v; a content change is not a state change", a)
	}
}

func TestLocalRestore(t *testing.T) {
	l := NewLocal(30 * time.Second)
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	gone := inof.Device{Addr: netip.MustParseAddr("10.0.0.8"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	l.Register(registration("swp2", gone, at(0)), at(0))
	l.Unregister("swp2", gone.Addr, inof.ReasonLinkDown, at(5))
	saved := l.Published()

	r := NewLocal(30 * time.Second)
	r.Restore(saved, nil, at(100))
	if got := r.Published(); len(got) != 2 || got[0] != saved[0] || got[1] != saved[1] {
		t.Fatalf("restored %+v, want %+v", got, saved)
	}
	// The LLDPDU after the restart changes nothing: no churn.
	if as := r.Register(registration("swp1", hostDev, at(0)), at(101)); len(as) != 0 {
		t.Fatalf("refresh after restore published %+v", as)
	}
	a := one(t, "restored hold-down", r.Expire(at(130)))
	if !a.Withdraw || a.Record.Device.Addr != gone.Addr {
		t.Fatalf("got %+v", a)
	}
}

// TestLocalRestoredDeadlines: a restored active record ages out at its
// saved deadline (or RestoredTTL after the restart), goes with carrier
// loss on its port, and is left to the registration table once an LLDPDU
// refreshed it.
func TestLocalRestoredDeadlines(t *testing.T) {
	l := NewLocal(30 * time.Second)
	a := inof.Device{Addr: netip.MustParseAddr("10.0.0.7"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	b := inof.Device{Addr: netip.MustParseAddr("10.0.0.8"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	c := inof.Device{Addr: netip.MustParseAddr("10.0.0.9"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP}
	for _, d := range []inof.Device{a, b, c} {
		l.Register(registration("swp1", d, at(0)), at(0))
	}
	saved := l.Published()
	r := NewLocal(30 * time.Second)
	r.Restore(saved, map[RegistrationKey]time.Time{{Port: "swp1", Addr: a.Addr}: at(110)}, at(100))
	if next, ok := r.NextExpiry(); !ok || !next.Equal(at(110)) {
		t.Fatalf("next expiry %v %v, want a's saved deadline", next, ok)
	}
	r.Register(registration("swp1", c, at(0)), at(101)) // c's LLDPDU: the registration table has it now
	x := one(t, "a ages out", r.Expire(at(110)))
	if x.Record.Device.Addr != a.Addr || x.Record.State != inof.StateInactive || x.Record.Reason != inof.ReasonAgeOut {
		t.Fatalf("got %+v", x)
	}
	x = one(t, "carrier loss", r.PortDown("swp1", at(111)))
	if x.Record.Device.Addr != b.Addr || x.Record.Reason != inof.ReasonLinkDown {
		t.Fatalf("got %+v, want b down (c is the registry's, a left already)", x)
	}
	// Later only the hold-downs of a and b end; c's stale restored
	// deadline does nothing.
	for _, x := range r.Expire(at(100).Add(RestoredTTL)) {
		if !x.Withdraw || x.Record.Device.Addr == c.Addr {
			t.Fatalf("after RestoredTTL: %+v, want only a's and b's withdrawals", x)
		}
	}
	if got := r.Published(); len(got) != 1 || got[0].Device.Addr != c.Addr || got[0].State != inof.StateActive {
		t.Fatalf("published %+v, want c active only", got)
	}
}

// registration is the carrier of dev's registration on port since since,
// as the registration table hands it over.
func registration(port string, dev inof.Device, since time.Time) inof.Report {
	return inof.Report{Device: dev, Status: inof.Status{State: inof.StateActive}, AccessPort: port, Since: since}
}

// TestLocalPortHealth: a device on a sick port is published inactive with
// the port's reason and stays registered (no hold-down); a second healthy
// port keeps it active; recovery makes it active again.
func TestLocalPortHealth(t *testing.T) {
	l := NewLocal(30 * time.Second)
	l.Register(registration("swp1", hostDev, at(0)), at(0))
	a := one(t, "storm", l.PortHealth("swp1", inof.ReasonPFCStorm, at(1)))
	if a.Withdraw || a.Record.State != inof.StateInactive || a.Record.Reason != inof.ReasonPFCStorm || !a.Record.Changed.Equal(at(1)) {
		t.Fatalf("storm published %+v", a)
	}
	if _, ok := l.NextExpiry(); ok {
		t.Fatal("a sick port started a hold-down")
	}
	if as := l.PortHealth("swp1", inof.ReasonPFCStorm, at(2)); len(as) != 0 {
		t.Fatalf("the same sickness again published %+v", as)
	}
	if as := l.Register(registration("swp1", hostDev, at(0)), at(3)); len(as) != 0 {
		t.Fatalf("a refresh on a sick port published %+v", as)
	}
	a = one(t, "errors too", l.PortHealth("swp1", inof.ReasonPacketErr, at(4)))
	if a.Record.Reason != inof.ReasonPacketErr {
		t.Fatalf("reason change published %+v", a)
	}
	a = one(t, "recovered", l.PortHealth("swp1", inof.ReasonNone, at(5)))
	if a.Record.State != inof.StateActive || !a.Record.Changed.Equal(at(5)) {
		t.Fatalf("recovery published %+v", a)
	}
	// Two ports: the healthy one carries the record.
	l.Register(registration("swp2", hostDev, at(6)), at(6))
	a = one(t, "swp1 sick", l.PortHealth("swp1", inof.ReasonPacketErr, at(7)))
	if a.Record.State != inof.StateActive || a.Record.AccessPort != "swp2" {
		t.Fatalf("with a healthy second port: %+v", a)
	}
	// A port without devices is not watched: a late report about it is
	// ignored, and a device registering there starts active.
	if as := l.PortHealth("swp3", inof.ReasonPFCStorm, at(8)); len(as) != 0 {
		t.Fatalf("a port without devices published %+v", as)
	}
	third := hostDev
	third.Addr = netip.MustParseAddr("10.0.0.9")
	if a := one(t, "register on swp3", l.Register(registration("swp3", third, at(8)), at(8))); a.Record.State != inof.StateActive {
		t.Fatalf("registered on a port reported sick while it had no device: %+v", a)
	}
	// A device registering on a sick port starts inactive.
	other := hostDev
	other.Addr = netip.MustParseAddr("10.0.0.8")
	a = one(t, "register on a sick port", l.Register(registration("swp1", other, at(9)), at(9)))
	if a.Record.State != inof.StateInactive || a.Record.Reason != inof.ReasonPacketErr {
		t.Fatalf("registered on a sick port: %+v", a)
	}
}

// TestLocalPorts: the ports carrying a registration, and whether they
// changed; the last registration leaving a sick port takes its sickness
// with it.
func TestLocalPorts(t *testing.T) {
	l := NewLocal(30 * time.Second)
	expect := func(what string, want []string, changed bool) {
		t.Helper()
		got, ch := l.PortsChanged()
		if !slices.Equal(got, want) || ch != changed {
			t.Fatalf("%s: ports %v changed %v, want %v %v", what, got, ch, want, changed)
		}
	}
	expect("empty", nil, false)
	other := hostDev
	other.Addr = netip.MustParseAddr("10.0.0.8")
	l.Register(registration("swp2", hostDev, at(0)), at(0))
	l.Register(registration("swp1", other, at(0)), at(0))
	expect("two ports", []string{"swp1", "swp2"}, true)
	l.Register(registration("swp1", hostDev, at(1)), at(1))
	l.Register(registration("swp1", hostDev, at(1)), at(2)) // a refresh
	expect("a second registration on swp1", nil, false)
	one(t, "swp1 sick", l.PortHealth("swp1", inof.ReasonPFCStorm, at(3))) // other: inactive
	l.Unregister("swp1", other.Addr, inof.ReasonLinkDown, at(4))
	expect("one of two left swp1", nil, false)
	l.Unregister("swp1", hostDev.Addr, inof.ReasonLinkDown, at(5))
	expect("the last left swp1", []string{"swp2"}, true)
	// swp1 forgot its storm: a device registering there is active.
	if a := one(t, "back on swp1", l.Register(registration("swp1", other, at(6)), at(6))); a.Record.State != inof.StateActive {
		t.Fatalf("a device on a port whose last device had left while sick: %+v", a)
	}
	expect("back on swp1", []string{"swp1", "swp2"}, true)
}
