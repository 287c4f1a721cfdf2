package switchagent

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

var (
	h1  = netip.MustParseAddr("10.0.0.1")
	tA  = inof.Device{Addr: netip.MustParseAddr("10.0.1.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: "nqn.2014-08.org.example:array1"}
	tA2 = inof.Device{Addr: netip.MustParseAddr("10.0.2.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: "nqn.2014-08.org.example:array1"}
	tB  = inof.Device{Addr: netip.MustParseAddr("10.0.1.2"), Role: inof.RoleTarget, Protocol: inof.ProtocolRoCE}
)

// fabric is a tiny harness: a Targets table, a visibility rule and the
// planner, as the daemon wires them.
type fabric struct {
	targets *Targets
	visible map[netip.Addr]bool // targets host h1 may see by the zone rules
	plan    *Planner
}

func newFabric() *fabric {
	return &fabric{targets: NewTargets(), visible: map[netip.Addr]bool{}, plan: NewPlanner()}
}

func (f *fabric) usable() map[netip.Addr]inof.Device {
	out := map[netip.Addr]inof.Device{}
	for a := range f.visible {
		if t, ok := f.targets.Get(a); ok && t.State == inof.StateActive {
			out[a] = t.Device
		}
	}
	return out
}

// step reconciles h1; gone, if valid, is the address whose record was just
// removed with the given reason.
func (f *fabric) step(gone netip.Addr, goneWhy inof.Reason) []Notice {
	return f.plan.Reconcile(h1, f.usable(), func(a netip.Addr) inof.Reason {
		if a == gone {
			return goneWhy
		}
		return f.targets.Why(a, inof.ReasonBFDDown)
	})
}

func rec(sw inof.RouterID, d inof.Device, st inof.State, r inof.Reason, at int64) inof.Report {
	return inof.Report{Switch: sw, Device: d, Status: inof.Status{State: st, Reason: r, Changed: time.UnixMilli(at)}}
}

func notice(d inof.Device, st inof.State, r inof.Reason) Notice {
	return Notice{Host: h1, Target: d, State: st, Reason: r}
}

func expect(t *testing.T, what string, got []Notice, want ...Notice) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func TestPlannerLifecycle(t *testing.T) {
	f := newFabric()
	f.visible[tA.Addr], f.visible[tB.Addr] = true, true
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 1))
	f.targets.Put(rec(2, tB, inof.StateActive, 0, 1))
	expect(t, "join", f.step(netip.Addr{}, 0), notice(tA, inof.StateActive, 0), notice(tB, inof.StateActive, 0))
	expect(t, "nothing changed", f.step(netip.Addr{}, 0))

	// tA's switch sees its link go down: the record turns inactive, reason 1.
	f.targets.Put(rec(1, tA, inof.StateInactive, inof.ReasonLinkDown, 2))
	expect(t, "link down", f.step(netip.Addr{}, 0), notice(tA, inof.StateInactive, inof.ReasonLinkDown))
	// The hold-down ends and the record is withdrawn: the host already knows.
	r, ok := f.targets.Remove(1, tA.Addr)
	if !ok || r != inof.ReasonLinkDown {
		t.Fatalf("Remove of an inactive record = %v, %v", r, ok)
	}
	expect(t, "withdraw after hold-down", f.step(tA.Addr, r))

	// tA comes back, then leaves the host's zones: zone change.
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 3))
	expect(t, "back", f.step(netip.Addr{}, 0), notice(tA, inof.StateActive, 0))
	delete(f.visible, tA.Addr)
	expect(t, "zone change", f.step(netip.Addr{}, 0), notice(tA, inof.StateInactive, inof.ReasonZoneChange))

	// tB's switch vanishes: its record is withdrawn while active.
	r, ok = f.targets.Remove(2, tB.Addr)
	if !ok || r != inof.ReasonBFDDown {
		t.Fatalf("Remove of an active record = %v, %v", r, ok)
	}
	expect(t, "switch vanished", f.step(tB.Addr, r), notice(tB, inof.StateInactive, inof.ReasonBFDDown))
	if len(f.plan.Told(h1)) != 0 {
		t.Fatalf("host still told %v", f.plan.Told(h1))
	}
}

func TestPlannerDualHomedTargetLosesOnePath(t *testing.T) {
	f := newFabric()
	f.visible[tA.Addr], f.visible[tA2.Addr] = true, true
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 1))
	f.targets.Put(rec(2, tA2, inof.StateActive, 0, 1))
	expect(t, "both paths", f.step(netip.Addr{}, 0), notice(tA, inof.StateActive, 0), notice(tA2, inof.StateActive, 0))
	f.targets.Put(rec(2, tA2, inof.StateInactive, inof.ReasonLinkDown, 2))
	expect(t, "one path down", f.step(netip.Addr{}, 0), notice(tA2, inof.StateInactive, inof.ReasonLinkDown))
	if got := f.plan.Told(h1); !reflect.DeepEqual(got, []inof.Device{tA}) {
		t.Fatalf("told %v, want only the surviving path", got)
	}
}

func TestTargetsTwoSwitchesOneAddress(t *testing.T) {
	f := newFabric()
	f.visible[tA.Addr] = true
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 1))
	f.targets.Put(rec(2, tA, inof.StateActive, 0, 1))
	expect(t, "seen twice", f.step(netip.Addr{}, 0), notice(tA, inof.StateActive, 0))
	// One switch loses it: the other still has it active, nobody is told.
	f.targets.Put(rec(1, tA, inof.StateInactive, inof.ReasonAgeOut, 2))
	expect(t, "one copy inactive", f.step(netip.Addr{}, 0))
	if _, ok := f.targets.Remove(1, tA.Addr); ok {
		t.Fatal("Remove reported a loss while another switch has the address active")
	}
	// The other switch vanishes: reason 7.
	r, ok := f.targets.Remove(2, tA.Addr)
	if !ok || r != inof.ReasonBFDDown {
		t.Fatalf("last copy vanished: %v, %v", r, ok)
	}
	expect(t, "last copy vanished", f.step(tA.Addr, r), notice(tA, inof.StateInactive, inof.ReasonBFDDown))
}

func TestTargetsNewestInactiveReasonWins(t *testing.T) {
	tt := NewTargets()
	tt.Put(rec(1, tA, inof.StateInactive, inof.ReasonAgeOut, 5))
	tt.Put(rec(2, tA, inof.StateInactive, inof.ReasonIPChange, 9))
	tt.Put(rec(3, tA, inof.StateInactive, inof.ReasonLinkDown, 7))
	if got, _ := tt.Get(tA.Addr); got.Reason != inof.ReasonIPChange {
		t.Fatalf("merged reason %v, want the newest (ip-change)", got.Reason)
	}
	if got := tt.Why(tB.Addr, inof.ReasonBFDDown); got != inof.ReasonBFDDown {
		t.Fatalf("Why of an unknown address = %v", got)
	}
}

func TestPlannerAnswerResendsEverything(t *testing.T) {
	f := newFabric()
	f.visible[tA.Addr], f.visible[tB.Addr] = true, true
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 1))
	f.step(netip.Addr{}, 0)
	// The host restarts and queries; meanwhile tB joined and nobody told it.
	f.targets.Put(rec(2, tB, inof.StateActive, 0, 2))
	got := f.plan.Answer(h1, f.usable(), func(netip.Addr) inof.Reason { return inof.ReasonBFDDown })
	expect(t, "answer", got, notice(tA, inof.StateActive, 0), notice(tB, inof.StateActive, 0))
	expect(t, "after answer", f.step(netip.Addr{}, 0))
}

func TestPlannerDeviceChangeResendsActive(t *testing.T) {
	f := newFabric()
	f.visible[tA.Addr] = true
	f.targets.Put(rec(1, tA, inof.StateActive, 0, 1))
	f.step(netip.Addr{}, 0)
	moved := tA
	moved.Port = 4421
	f.targets.Put(rec(1, moved, inof.StateActive, 0, 2))
	expect(t, "new service port", f.step(netip.Addr{}, 0), notice(moved, inof.StateActive, 0))
	f.plan.Forget(h1)
	if len(f.plan.Hosts()) != 0 {
		t.Fatal("Forget kept the host")
	}
}

func TestTargetsChoiceIgnoresMapOrder(t *testing.T) {
	other := tA
	other.Port = 4421
	for i := 0; i < 50; i++ {
		tt := NewTargets()
		tt.Put(rec(7, tA, inof.StateActive, 0, 5))
		tt.Put(rec(3, other, inof.StateActive, 0, 5))
		tt.Put(rec(9, tA, inof.StateInactive, inof.ReasonLinkDown, 8))
		got, _ := tt.Get(tA.Addr)
		if got.State != inof.StateActive || got.Device != other {
			t.Fatalf("run %d: merged %+v, want the active record of the lower router-id", i, got)
		}
	}
}
