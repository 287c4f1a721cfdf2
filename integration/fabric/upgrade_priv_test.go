//go:build privileged

package fabric

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// releaseBeforeSets is the last commit whose switches read per-device
// records only (no device sets, no switch record).
const releaseBeforeSets = "e8c524c"

// TestPrivRollingUpgradeToSets: leaf2 runs the release before device sets
// (built from its commit), leaf1 and the reflector this tree. The mixed
// fabric works per device: the target on leaf1 reaches h2 on leaf2. The
// switch-over to sets is refused, naming leaf2, and `fabric show` lists it
// behind. leaf2 is upgraded (stopped, restarted on this tree's inofd); the
// switch-over is then accepted, both switches republish in sets, and no
// host hears a thing nor runs nvme across the upgrade and the switch-over.
// Through sets, the target's link going down reaches the probe on leaf2
// with reason 1, and coming back, active; the way back to per-device is as
// silent.
func TestPrivRollingUpgradeToSets(t *testing.T) {
	requireSwitchRole(t)
	requireAPI(t)
	old, err := topo.BuildRelease(releaseBeforeSets, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec := fabricSpec(false, probeHost("q2", "leaf2"))
	spec.RecordFormat = "per-device" // this test switches itself
	spec.Passive = append(spec.Passive, "leaf2")
	calmBFD(&spec)
	f := topo.Start(t, spec)
	rr, leaf1, leaf2 := f.Node("rr1"), f.Node("leaf1"), f.Node("leaf2")
	leaf2.Binary = old
	if err := leaf2.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, f)
	tgt, h1, h2 := f.Node("tgt"), f.Node("h1"), f.Node("h2")
	if err := tgt.Start(); err != nil {
		t.Fatal(err)
	}
	tl := tgt.Links[0]
	for _, h := range []*topo.Node{h1, h2} {
		if _, err := h.WaitNVMe(wait, connectArgs(h, tl)); err != nil {
			t.Fatal(err)
		}
	}
	q2 := f.Node("q2").Probe(0)
	subscribe(t, q2)
	await(t, q2, tl.Addr(), inof.StateActive)

	out, err := rr.Inofctl("fabric", "set", "record-format", "sets")
	if err == nil || !strings.Contains(out, leaf2.Addr.String()) || strings.Contains(out, leaf1.Addr.String()) {
		t.Fatalf("switch-over with leaf2 on the old release: %v\n%s", err, out)
	}
	show, err := rr.Inofctl("fabric", "show")
	if err != nil || !showing(show, "record-format", "per-device") || !showing(show, "switches behind", leaf2.Addr.String()) {
		t.Fatalf("fabric show: %v\n%s", err, show)
	}

	time.Sleep(quietFor)
	q2.Drain()
	notes, calls := counts(t, h1, h2)
	if err := leaf2.Stop(wait); err != nil {
		t.Fatal(err)
	}
	mark := leaf2.LogSize()
	leaf2.Binary = ""
	if err := leaf2.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	if _, err := leaf2.WaitLog(mark, `msg="fabric view settled`, wait); err != nil {
		t.Fatal(err)
	}
	if err := f.SetRecordFormat(wait, "sets"); err != nil {
		t.Fatal(err)
	}
	if show, err := rr.Inofctl("fabric", "show"); err != nil || !showing(show, "record-format", "sets") || strings.Contains(show, "switches behind") {
		t.Fatalf("fabric show after the switch-over: %v\n%s", err, show)
	}
	if _, err := leaf1.WaitMetric(wait, func(v float64) bool { return v > 0 }, "inof_switch_device_set_updates_total"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(quietFor)
	heardNothing(t, q2, "across leaf2's upgrade and the switch to sets")
	unchanged(t, notes, calls, "across leaf2's upgrade and the switch to sets", h1, h2)

	// The fabric works in sets: link down and back, seen on the other leaf.
	tl.Cut(t)
	if got := await(t, q2, tl.Addr(), inof.StateInactive); got.N.Reason != inof.ReasonLinkDown {
		t.Errorf("q2: inactive with reason %v, want %v", got.N.Reason, inof.ReasonLinkDown)
	}
	tl.Restore(t)
	await(t, q2, tl.Addr(), inof.StateActive)

	time.Sleep(quietFor)
	q2.Drain()
	notes, calls = counts(t, h1, h2)
	if err := f.SetRecordFormat(wait, "per-device"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(quietFor)
	heardNothing(t, q2, "across the switch back to per-device records")
	unchanged(t, notes, calls, "across the switch back to per-device records", h1, h2)
}

// showing reports whether inofctl's table output has a line key … value.
func showing(out, key, value string) bool {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `\s+` + regexp.QuoteMeta(value) + `$`).MatchString(out)
}
