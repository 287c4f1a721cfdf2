package soak

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

func nicOf(t *testing.T, m *Model, dev string, k int) *NIC {
	t.Helper()
	for _, n := range m.NICs {
		if n.Device == dev && n.Index == k {
			return n
		}
	}
	t.Fatalf("no NIC %s/%d", dev, k)
	return nil
}

func TestLayoutIsWhatTheIssueAsks(t *testing.T) {
	l := DefaultLayout()
	if len(l.Reflectors) != 2 || len(l.Switches) != 4 {
		t.Fatalf("%d reflectors, %d switches", len(l.Reflectors), len(l.Switches))
	}
	devs, dual := map[string]int{}, 0
	hosts, targets := 0, 0
	for _, n := range l.NICs {
		devs[n.Device]++
	}
	for d, k := range devs {
		if k > 1 {
			dual++
		}
		n := l.nic(d, 0)
		if n.Role.IsHost() {
			hosts++
		}
		if n.Role.IsTarget() {
			targets++
		}
	}
	if len(devs) < 12 || dual < 2 || hosts == 0 || targets == 0 {
		t.Fatalf("%d devices (%d dual-homed, %d hosts, %d targets)", len(devs), dual, hosts, targets)
	}
	if len(l.Config.Zones) < 4 {
		t.Fatalf("%d zones", len(l.Config.Zones))
	}
	if err := l.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]bool{}
	for _, n := range l.NICs {
		for _, a := range n.Pool {
			if seen[a] || !n.Prefix.Contains(a) {
				t.Fatalf("address %s of %s reused or outside %s", a, n.ID(), n.Prefix)
			}
			seen[a] = true
		}
	}
}

// healthyModel is the layout's model with its zoning in force.
func healthyModel() *Model {
	l := DefaultLayout()
	m := NewModel(l)
	m.SetConfig(l.Config.Clone())
	return m
}

func TestOracleHealthyIsTheZoneRule(t *testing.T) {
	m := healthyModel()
	checked := 0
	for _, h := range m.Hosts() {
		if !m.Checkable(h) {
			continue
		}
		for _, tg := range m.Targets() {
			if tg == h {
				continue
			}
			want := verdict(tg.Up() && zones.Visible(m.Config, h.DeviceAt(h.Addr), tg.DeviceAt(tg.Addr)))
			if got := m.Expect(h, tg, tg.Addr); got != want {
				t.Errorf("%s sees %s: %s, want %s", h.ID(), tg.ID(), got, want)
			}
			if got := m.Expect(h, tg, tg.Pool[1]); got != Inactive {
				t.Errorf("%s sees %s at an address it does not have: %s", h.ID(), tg.ID(), got)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

func TestOracleUnderFaults(t *testing.T) {
	m := healthyModel()
	// h1 and t1 share leaf1 and zA; h4 (leaf4) sees td2's NIC on leaf3
	// through zC.
	t1, td2a, h1, h4 := nicOf(t, m, "t1", 0), nicOf(t, m, "td2", 0), nicOf(t, m, "h1", 0), nicOf(t, m, "h4", 0)
	if m.Expect(h1, t1, t1.Addr) != Active || m.Expect(h4, td2a, td2a.Addr) != Active {
		t.Fatal("layout changed: h1 must see t1, h4 td2/0")
	}
	at := func(want Verdict, h, tg *NIC, what string) {
		t.Helper()
		if got := m.Expect(h, tg, tg.Addr); got != want {
			t.Errorf("%s: %s about %s = %s, want %s", what, h.ID(), tg.ID(), got, want)
		}
	}

	// A killed switch: remote hosts must hear its targets go.
	m.Switches["leaf3"].Running = false
	m.Touch()
	at(Inactive, h4, td2a, "leaf3 killed")
	// Stopped cleanly, the reflectors keep its records: nothing is sure.
	m.Switches["leaf3"].Graceful = true
	at(Unknown, h4, td2a, "leaf3 stopped with SIGTERM")
	m.Switches["leaf3"].Running, m.Switches["leaf3"].Graceful = true, false
	m.Switches["leaf4"].Running = false
	if m.Checkable(h4) {
		t.Error("a host on a dead switch is checked")
	}
	m.Switches["leaf4"].Running = true

	// leaf4 cut off: its own hosts keep what they had of remote targets,
	// local ones are still told.
	m.Switches["leaf4"].UplinkUp = false
	m.Switches["leaf1"].UplinkUp = false
	m.Touch()
	at(Unknown, h4, td2a, "leaf4 uplink down")
	at(Active, h1, t1, "leaf1 uplink down, local target")
	m.Switches["leaf4"].UplinkUp, m.Switches["leaf1"].UplinkUp = true, true

	// One reflector gone: the other serves.
	m.Reflectors["rr1"].Running = false
	m.Touch()
	at(Active, h4, td2a, "rr1 down")
	// Both gone: remote views are stale.
	m.Reflectors["rr2"].Running = false
	m.Touch()
	at(Unknown, h4, td2a, "both reflectors down")
	at(Active, h1, t1, "both reflectors down, local target")
	m.Reflectors["rr1"].Running, m.Reflectors["rr2"].Running = true, true
	m.Touch()

	// A BGP partition of leaf3 from rr1: unclear until its hold time ran
	// out, then rr2's fresh copy decides.
	now := time.Now()
	m.Clock = func() time.Time { return now }
	m.Switches["leaf3"].Blocked["rr1"] = now
	td2a.LinkUp = false
	at(Unknown, h4, td2a, "partition, early")
	now = now.Add(HoldExpiry)
	at(Inactive, h4, td2a, "partition, after the hold time")
	td2a.LinkUp = true
	at(Active, h4, td2a, "partition, target back")
	// ... unless rr2 is gone too: only rr1's stale copy is left.
	m.Reflectors["rr2"].Running = false
	at(Unknown, h4, td2a, "partition and the other reflector down")
}

func TestOracleCandidatesThatDisagreeAreUnknown(t *testing.T) {
	m := healthyModel()
	h1, t1 := nicOf(t, m, "h1", 0), nicOf(t, m, "t1", 0)
	without := m.Config.Clone()
	without.Zones["zA"].Members = without.Zones["zA"].Members[1:] // t1 out of zA
	m.Candidates = []*zones.Config{without}
	if got := m.Expect(h1, t1, t1.Addr); got != Unknown {
		t.Fatalf("candidates disagree, got %s", got)
	}
	m.Candidates = []*zones.Config{m.Config.Clone()}
	if got := m.Expect(h1, t1, t1.Addr); got != Active {
		t.Fatalf("candidates agree, got %s", got)
	}
}

func TestDivergedAndLost(t *testing.T) {
	m := healthyModel()
	h1, t1 := nicOf(t, m, "h1", 0), nicOf(t, m, "t1", 0)
	rec := NewRecorder()
	note := func(state inof.State, reason inof.Reason, seq uint32) l2proto.Notification {
		return l2proto.Notification{Host: h1.Addr, Target: t1.Addr, Seq: seq, State: state, Reason: reason,
			Role: t1.Role, Protocol: t1.Protocol, Port: t1.Port, NQN: t1.NQN}
	}
	has := func(ds []Divergence) (found, lost bool) {
		for _, d := range ds {
			if d.Host == h1 && d.Addr == t1.Addr {
				return true, d.Lost
			}
		}
		return false, false
	}
	if found, lost := has(Diverged(m, rec, time.Time{})); !found || !lost {
		t.Fatal("h1 never told about t1: want a lost divergence")
	}
	rec.Record(h1.Addr, note(inof.StateActive, 0, 1), time.Now())
	if found, _ := has(Diverged(m, rec, time.Time{})); found {
		t.Fatal("h1 told t1 active: no divergence")
	}
	since := time.Now().Add(time.Millisecond)
	t1.LinkUp = false
	if found, lost := has(Diverged(m, rec, since)); !found || !lost {
		t.Fatal("t1 down, h1 not told since: want lost")
	}
	rec.Record(h1.Addr, note(inof.StateInactive, inof.ReasonLinkDown, 2), since.Add(time.Millisecond))
	if found, _ := has(Diverged(m, rec, since)); found {
		t.Fatal("h1 told t1 inactive: no divergence")
	}
	rec.Record(h1.Addr, note(inof.StateInactive, inof.ReasonLinkDown, 2), since.Add(time.Millisecond))
	if re, _ := rec.Counts(); re != 1 {
		t.Fatalf("a retransmission counted as %d", re)
	}
	rec.Record(netip.MustParseAddr("10.9.9.9"), note(inof.StateActive, 0, 3), time.Now())
	if _, stale := rec.Counts(); stale != 1 {
		t.Fatal("a notification for an address the probe left was recorded")
	}
}

func TestJudge(t *testing.T) {
	m := healthyModel()
	h := NewHistory(m.Config)
	h3, t1, h1, t2 := nicOf(t, m, "h3", 0), nicOf(t, m, "t1", 0), nicOf(t, m, "h1", 0), nicOf(t, m, "t2", 0)
	if zones.Visible(m.Config, h3.DeviceAt(h3.Addr), t1.DeviceAt(t1.Addr)) {
		t.Fatal("layout changed: h3 must not see t1")
	}
	kinds := func(fs []Finding) map[string]int {
		out := map[string]int{}
		for _, f := range fs {
			out[f.Kind]++
		}
		return out
	}
	n := func(host, tgt *NIC, state inof.State, reason inof.Reason) Notice {
		return Notice{Host: host.Addr, Target: tgt.Addr, State: state, Reason: reason, Dev: tgt.DeviceAt(tgt.Addr)}
	}
	if k := kinds(h.Judge(m, []Notice{n(h3, t1, inof.StateActive, 0)})); k["leak"] != 1 {
		t.Errorf("h3 told about t1: %v, want a leak", k)
	}
	if k := kinds(h.Judge(m, []Notice{n(h1, t1, inof.StateInactive, inof.ReasonBFDDown)})); k["unexpected-reason"] != 1 {
		t.Errorf("t1 lost with reason 7 and nothing happened: %v", k)
	}
	h.Cause(t1.Addr, inof.ReasonLinkDown)
	if k := kinds(h.Judge(m, []Notice{n(h1, t1, inof.StateInactive, inof.ReasonLinkDown)})); len(k) != 0 {
		t.Errorf("t1's link went down: %v", k)
	}
	dup := n(h1, t2, inof.StateActive, 0)
	dup.HadPrev, dup.Prev = true, Notice0{State: inof.StateActive, Dev: dup.Dev}
	if !zones.Visible(m.Config, h1.DeviceAt(h1.Addr), t2.DeviceAt(t2.Addr)) {
		// Any visible pair does; h1 and t2 share no zone in the layout.
		dup = n(h1, t1, inof.StateActive, 0)
		dup.HadPrev, dup.Prev = true, Notice0{State: inof.StateActive, Dev: dup.Dev}
	}
	if k := kinds(h.Judge(m, []Notice{dup})); k["duplicate"] != 1 {
		t.Errorf("active twice: %v", k)
	}
	h.Reset(h1.Addr)
	if k := kinds(h.Judge(m, []Notice{dup})); k["duplicate"] != 0 {
		t.Errorf("active twice after the host returned: %v", k)
	}
	// A zone change that hides t1 from h1 explains reason 4.
	if k := kinds(h.Judge(m, []Notice{n(h1, t1, inof.StateInactive, inof.ReasonZoneChange)})); k["unexpected-reason"] != 1 {
		t.Errorf("reason 4 and the zoning did not change: %v", k)
	}
	c := m.Config.Clone()
	c.Zones["zA"].Members = c.Zones["zA"].Members[1:] // t1 out of zA: unzoned, hard zoning
	h.Config(c)
	if k := kinds(h.Judge(m, []Notice{n(h1, t1, inof.StateInactive, inof.ReasonZoneChange)})); len(k) != 0 {
		t.Errorf("t1 out of zA: %v", k)
	}
}

// TestOracleEditOnACutOffReflector: an edit made on a reflector whose
// uplink is down reaches no switch until the uplink is back (seed
// 8010427747319228340 step 6: hard zoning turned off on rr1 while rr1's
// uplink was down; the oracle wanted h3 told every target at once); one
// made on a reflector that reaches the other reaches every switch.
func TestOracleEditOnACutOffReflector(t *testing.T) {
	m := healthyModel()
	h3, t1 := nicOf(t, m, "h3", 0), nicOf(t, m, "t1", 0)
	if m.Expect(h3, t1, t1.Addr) != Inactive {
		t.Fatal("layout changed: h3 (unzoned) must not see t1 under hard zoning")
	}
	soft := m.Config.Clone()
	soft.Settings.HardZoning = false
	m.Reflectors["rr1"].UplinkUp = false
	m.Touch()
	m.SetConfig(soft, "rr1")
	if got := m.Expect(h3, t1, t1.Addr); got != Unknown {
		t.Fatalf("edit on the cut-off rr1: h3 about t1 = %s, want unknown", got)
	}
	m.Reflectors["rr1"].UplinkUp = true
	m.Touch()
	if got := m.Expect(h3, t1, t1.Addr); got != Active {
		t.Fatalf("rr1 back: h3 about t1 = %s, want active", got)
	}
	// rr2 down: an edit on rr1 reaches every switch through rr1.
	m.Reflectors["rr2"].Running = false
	m.Touch()
	hard := soft.Clone()
	hard.Settings.HardZoning = true
	m.SetConfig(hard, "rr1")
	if got := m.Expect(h3, t1, t1.Addr); got != Inactive {
		t.Fatalf("edit on rr1 with rr2 down: h3 about t1 = %s, want inactive", got)
	}
	// rr1's uplink down now, rr2 back: rr2 gets the edit only from rr1.
	m.Reflectors["rr1"].UplinkUp = false
	m.Reflectors["rr2"].Running = true
	m.Touch()
	m.SetConfig(soft, "rr1")
	if got := m.Expect(h3, t1, t1.Addr); got != Unknown {
		t.Fatalf("edit on the cut-off rr1, rr2 without it: h3 about t1 = %s, want unknown", got)
	}
}

// An edit on a reflector whose clock is 10 minutes ahead: the other
// reflector refuses it until its clock reaches the edit's generation (5
// minutes later, plus the replicator's retry); meanwhile the switches take
// it from the ahead reflector alone, the other is not read back and not
// edited, and then both must agree again.
func TestOracleEditUnderAClockAhead(t *testing.T) {
	m := healthyModel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	m.Clock = func() time.Time { return now }
	h3, t1 := nicOf(t, m, "h3", 0), nicOf(t, m, "t1", 0)
	soft := m.Config.Clone()
	soft.Settings.HardZoning = false

	rr1, rr2 := m.Reflectors["rr1"], m.Reflectors["rr2"]
	rr1.ClockOffset = 10 * time.Minute
	if why := m.EditHeldBack("rr2"); why == "" {
		t.Fatal("rr1's clock stepped: an edit on rr2 must be held back (rr1 orders versions by a wrong clock)")
	}
	if why := m.EditHeldBack("rr1"); why != "" {
		t.Fatalf("an edit on the stepped rr1 itself is fair: %s", why)
	}
	m.Wrote("rr1")
	m.SetConfig(soft, "rr1")
	rr1.ClockOffset = 0 // healed: its generation clock stays ahead
	if !m.Lags("rr2") || m.Lags("rr1") {
		t.Fatalf("after the edit: rr2 lags %v, rr1 lags %v; want rr2 only", m.Lags("rr2"), m.Lags("rr1"))
	}
	m.Touch()
	if rr2.cfgHeld == m.cfgGen {
		t.Fatal("rr2 took the edit it refuses as too far ahead")
	}
	if got := m.Expect(h3, t1, t1.Addr); got != Active {
		t.Fatalf("every switch hears rr1: h3 about t1 = %s, want active", got)
	}
	if m.EditHeldBack("rr2") == "" || m.AheadEnded() {
		t.Fatal("within the window: rr2 must stay unedited and the window open")
	}

	// rr1's uplink down: a leaf hears only rr2, which does not hold it.
	rr1.UplinkUp = false
	m.Touch()
	m.Wrote("rr1")
	harder := soft.Clone()
	harder.Settings.HardZoning = true
	m.SetConfig(harder, "rr1")
	if got := m.Expect(h3, t1, t1.Addr); got != Unknown {
		t.Fatalf("edit on the cut-off, ahead rr1: h3 about t1 = %s, want unknown", got)
	}
	rr1.UplinkUp = true
	m.Touch()

	now = now.Add(inof.MaxGenerationSkew + ReplicationWait)
	if m.Lags("rr2") || !m.AheadEnded() {
		t.Fatalf("past the window: rr2 lags %v, ended %v; want false, true", m.Lags("rr2"), m.AheadEnded())
	}
	m.Touch()
	if rr2.cfgHeld != m.cfgGen {
		t.Fatal("past the window rr2 must take rr1's edits")
	}
	if got := m.Expect(h3, t1, t1.Addr); got != Inactive {
		t.Fatalf("past the window: h3 about t1 = %s, want inactive (hard zoning)", got)
	}
	m.ForgetAhead()
	if m.AheadEnded() || m.EditHeldBack("rr2") != "" {
		t.Fatal("once read back, the window is over")
	}

	// rr1 cut off: an edit there leaves rr2 behind, which is not edited
	// until it has the edit.
	rr1.UplinkUp = false
	m.Touch()
	m.SetConfig(soft, "rr1")
	if m.EditHeldBack("rr2") == "" || m.EditHeldBack("rr1") != "" {
		t.Fatalf("edit on the cut-off rr1: held back on rr2 %q (want a reason), on rr1 %q (want none)",
			m.EditHeldBack("rr2"), m.EditHeldBack("rr1"))
	}
	rr1.UplinkUp = true
	m.Touch()
	if m.EditHeldBack("rr2") == "" {
		t.Fatal("rr1 just back: rr2 may not have its edit yet (replication resumes), but is not held back")
	}
	now = now.Add(ReplicationResume)
	if m.EditHeldBack("rr2") != "" {
		t.Fatalf("rr1 back for ReplicationResume: rr2 still held back: %s", m.EditHeldBack("rr2"))
	}

	// Behind: nothing rr1 writes is refused, but rr1 refuses rr2's.
	rr1.ClockOffset = -10 * time.Minute
	m.Wrote("rr1")
	if m.Lags("rr2") || m.EditHeldBack("rr2") == "" {
		t.Fatalf("rr1 behind: rr2 lags %v (want false), edits on rr2 held back %q (want a reason)",
			m.Lags("rr2"), m.EditHeldBack("rr2"))
	}
}

// zoneRemove is the zone picker's "a member out of a zone".
func zoneRemove(name, member string) Edit { return zoneRemoveEdit(name, zones.MustParseMember(member)) }

// zoneAddAlias is the alias-change picker's "an alias into a zone".
func zoneAddAlias(zone, alias string) Edit {
	return zoneAddEdit(zone, zones.Member{Kind: zones.MemberAlias, Name: alias})
}

// modelWithAliasInZone is the layout's model, at a fake clock, with an
// alias al1 in a zone zE, held by both reflectors.
func modelWithAliasInZone(t *testing.T) (*Model, *time.Time) {
	t.Helper()
	m := healthyModel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	m.Clock = func() time.Time { return now }
	c := m.Config.Clone()
	c.Aliases["al1"] = &zones.Alias{Name: "al1", Members: parseMembers([]string{"10.101.15.2"})}
	c.Zones["zE"] = &zones.Zone{Name: "zE", Members: parseMembers([]string{"alias:al1", "10.101.6.4"})}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m.SetConfig(c)
	return m, &now
}

func cfgSeenBy(m *Model) int {
	n := 0
	for _, s := range m.Switches {
		if s.cfgSeen == m.cfgGen {
			n++
		}
	}
	return n
}

// TestEditHeldBackAfterConcurrentEditsApart is step 76 of the 30-minute
// soak of seed 8370634194321728583: rr1's uplink went down, concurrent
// edits were taken 0.5 s later (rr1 removed alias:al1 from zE, rr2 edited
// another zone), and the alias-change drawn next on rr2, `zone add zE
// alias:al1`, was refused "already exists": rr2 did not hold rr1's
// removal while rr1 was cut off. The model took the pair as held by both
// reflectors, so the refusal, which no candidate explains, was counted as
// a failed action. Each reflector holds only its own edit until they
// exchange them: no edit is made on either until then.
func TestEditHeldBackAfterConcurrentEditsApart(t *testing.T) {
	m, now := modelWithAliasInZone(t)
	rr1 := m.Reflectors["rr1"]
	rr1.UplinkUp = false // uplink-flap rr1
	m.Touch()
	*now = now.Add(497 * time.Millisecond)
	cands, _ := m.ConcurrentlyEdited(zoneRemove("zE", "alias:al1"), zoneAdd("zA", "10.101.5.4"), true, true)
	if len(cands) == 0 {
		t.Fatal("the concurrent edits were not explained")
	}
	next := zoneAddAlias("zE", "al1") // the picker's edit from the zoning in force
	if after := AfterEdit(m.Possible(), next, false); len(after) != 0 {
		t.Fatalf("layout of the test: %q is refused by %d candidates; want it to apply to every one", next, len(after))
	}
	if why := m.RefusalFair("rr2", next); why != "" {
		t.Fatalf("a refusal of %q on rr2 would be fair (%s): no candidate explains it, so it must not be made", next, why)
	}
	for _, name := range []string{"rr2", "rr1"} {
		if why := m.EditHeldBack(name); why == "" {
			t.Errorf("concurrent edits taken while rr1 was cut off: an edit on %s is made, though it holds only its own edit", name)
		}
	}
	if n := cfgSeenBy(m); n != 0 {
		t.Errorf("%d switches taken to hold a candidate no reflector holds yet", n)
	}

	// The uplink back: held back until replication had time to resume,
	// or both are read back agreeing.
	*now = now.Add(627 * time.Millisecond)
	rr1.UplinkUp = true
	m.Touch()
	if m.EditHeldBack("rr2") == "" {
		t.Error("rr1 just back: rr2 is edited before replication resumed")
	}
	m.ReadBack("rr2")
	if m.EditHeldBack("rr2") == "" {
		t.Error("rr2 alone read back: it is edited, though the concurrent edits may not be merged")
	}
	*now = now.Add(ReplicationResume)
	if why := m.EditHeldBack("rr2"); why != "" {
		t.Fatalf("rr1 back for ReplicationResume: rr2 still held back: %s", why)
	}
	if n := cfgSeenBy(m); n != len(m.Switches) {
		t.Errorf("after the exchange %d of %d switches hold the zoning in force", n, len(m.Switches))
	}
	// Now both hold a candidate: the same refusal is a finding.
	if why := m.RefusalFair("rr2", next); why != "" {
		t.Errorf("after the exchange a refusal of %q is taken as fair: %s", next, why)
	}
}

// TestReadBackEndsTheSplit: both reflectors read back agreeing on a
// candidate of concurrent edits taken apart have merged them: edits are
// made again at once, without waiting out ReplicationResume.
func TestReadBackEndsTheSplit(t *testing.T) {
	m, now := modelWithAliasInZone(t)
	m.Reflectors["rr1"].UplinkUp = false
	m.Touch()
	m.ConcurrentlyEdited(zoneRemove("zE", "alias:al1"), zoneAdd("zA", "10.101.5.4"), true, true)
	*now = now.Add(time.Second)
	m.Reflectors["rr1"].UplinkUp = true
	m.Touch()
	if m.EditHeldBack("rr2") == "" {
		t.Fatal("rr1 just back: rr2 is edited before the edits were exchanged")
	}
	m.ReadBack("rr1", "rr2")
	if why := m.EditHeldBack("rr2"); why != "" {
		t.Errorf("both read back agreeing: rr2 still held back: %s", why)
	}
	if n := cfgSeenBy(m); n != len(m.Switches) {
		t.Errorf("both read back agreeing: %d of %d switches hold the zoning in force", n, len(m.Switches))
	}
}

// TestEditHeldBackOnlyWhileALagExplainsIt: an edit is held back only
// while the other reflector may lack an edit for a cut between them; with
// no such cut, or a cut long after the edit replicated, the edit is made
// and its refusal, unexplained, is a finding.
func TestEditHeldBackOnlyWhileALagExplainsIt(t *testing.T) {
	next := zoneAddAlias("zE", "al1")

	// Concurrent edits with the reflectors reaching each other: both
	// adopt the other's at once.
	m, now := modelWithAliasInZone(t)
	m.ConcurrentlyEdited(zoneRemove("zE", "alias:al1"), zoneAdd("zA", "10.101.5.4"), true, true)
	if why := m.EditHeldBack("rr2"); why != "" {
		t.Fatalf("no cut: rr2 held back: %s", why)
	}
	if why := m.RefusalFair("rr2", next); why != "" {
		t.Errorf("no cut: a refusal of %q is taken as fair: %s", next, why)
	}
	// rr1's uplink cut right after them: neither may hold the other's.
	*now = now.Add(200 * time.Millisecond)
	m.Reflectors["rr1"].UplinkUp = false
	m.Touch()
	if m.EditHeldBack("rr2") == "" || m.EditHeldBack("rr1") == "" {
		t.Error("cut 200 ms after concurrent edits: an edit is made")
	}
	if n := cfgSeenBy(m); n != 0 {
		t.Errorf("cut 200 ms after concurrent edits: %d switches taken to hold a candidate", n)
	}

	// A single edit on rr1, rr1's uplink cut 200 ms later: rr2 may lack
	// it; rr1 holds everything.
	m, now = modelWithAliasInZone(t)
	if after := m.Edited("rr1", zoneRemove("zE", "alias:al1")); len(after) != 1 {
		t.Fatalf("edit on rr1: %d zonings", len(after))
	}
	*now = now.Add(200 * time.Millisecond)
	m.Reflectors["rr1"].UplinkUp = false
	m.Touch()
	if m.EditHeldBack("rr2") == "" || m.EditHeldBack("rr1") != "" {
		t.Errorf("cut 200 ms after an edit on rr1: held back on rr2 %q (want a reason), on rr1 %q (want none)",
			m.EditHeldBack("rr2"), m.EditHeldBack("rr1"))
	}

	// The same cut 2 s after the edit: it had replicated.
	m, now = modelWithAliasInZone(t)
	m.Edited("rr1", zoneRemove("zE", "alias:al1"))
	*now = now.Add(2 * time.Second)
	m.Reflectors["rr1"].UplinkUp = false
	m.Touch()
	if why := m.EditHeldBack("rr2"); why != "" {
		t.Fatalf("cut 2 s after an edit on rr1: rr2 held back: %s", why)
	}
	if why := m.RefusalFair("rr2", next); why != "" {
		t.Errorf("cut 2 s after the edit: a refusal of %q on rr2 is taken as fair: %s", next, why)
	}

	// rr2 restarted while rr1 was edited: held back until replication
	// resumed, then edited.
	m, now = modelWithAliasInZone(t)
	m.Reflectors["rr2"].Running = false
	m.Touch()
	m.Edited("rr1", zoneRemove("zE", "alias:al1"))
	*now = now.Add(3 * time.Second)
	m.Reflectors["rr2"].Running = true
	m.Touch()
	if m.EditHeldBack("rr2") == "" {
		t.Error("rr2 just started: edited before it may hold rr1's edit")
	}
	*now = now.Add(ReplicationResume)
	if why := m.EditHeldBack("rr2"); why != "" {
		t.Fatalf("rr2 back for ReplicationResume: held back: %s", why)
	}
	if why := m.RefusalFair("rr2", next); why != "" {
		t.Errorf("rr2 caught up: a refusal of %q is taken as fair: %s", next, why)
	}
}
