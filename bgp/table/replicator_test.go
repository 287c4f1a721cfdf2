package table

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// fakeClock is a settable wall clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// fakeReflectors is two peered reflectors with replicators on their own
// clocks, and a client subscribed to the configuration route target.
type fakeReflectors struct {
	f              *bgp.FakeFabric
	r1, r2, client *bgptest.FakeNode
	rep1, rep2     *ConfigReplicator
	clk1, clk2     *fakeClock
}

func newFakeReflectors(t *testing.T, start time.Time) *fakeReflectors {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := bgp.NewFakeFabric()
	x := &fakeReflectors{f: f, clk1: &fakeClock{now: start}, clk2: &fakeClock{now: start},
		r1: bgptest.NewFakeNode(t, f, "127.0.0.1", bgp.Options{Role: bgp.RoleReflector}),
		r2: bgptest.NewFakeNode(t, f, "127.0.0.4", bgp.Options{Role: bgp.RoleReflector})}
	x.client = bgptest.NewFakeNode(t, f, "127.0.0.2", bgp.Options{})
	for _, p := range []struct{ a, b *bgptest.FakeNode }{{x.r1, x.r2}, {x.r2, x.r1}} {
		if err := p.a.AddNeighbor(ctx, bgp.Neighbor{Address: p.b.Addr, PeerReflector: true}); err != nil {
			t.Fatal(err)
		}
	}
	bgptest.FakeConnect(t, x.r1, x.client, nil)
	bgptest.FakeConnect(t, x.r2, x.client, nil)
	if err := x.client.Subscribe(ctx, record.ConfigRT(bgptest.ASN)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		r   *bgptest.FakeNode
		clk *fakeClock
		rep **ConfigReplicator
	}{{x.r1, x.clk1, &x.rep1}, {x.r2, x.clk2, &x.rep2}} {
		rep, err := NewConfigReplicator(ReplicatorOptions{Speaker: p.r, RouterID: bgptest.RouterID(p.r.Addr), RT: record.ConfigRT(bgptest.ASN), Now: p.clk.Now,
			RetryEvery: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Run(ctx); err != nil {
			t.Fatal(err)
		}
		*p.rep = rep
	}
	return x
}

func waitStats(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReplicatorPrunesTombstones (issue #9 item 4): a tombstone past
// inof.TombstoneLifetime is withdrawn by Prune, and the copy a peer
// reflector still carries is refused when offered again, so the pruned
// tombstone does not come back.
func TestReplicatorPrunesTombstones(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	obj := record.ConfigObject{Kind: 2, Name: "old", Part: 1}
	tomb := record.Config{Kind: 2, Name: "old", Part: 1, Gen: inof.GenerationAt(t0), Writer: bgptest.RouterID(x.r1.Addr), Deleted: true}
	if took, err := x.rep1.Put(ctx, tomb); !took || err != nil {
		t.Fatalf("put: %v %v", took, err)
	}
	waitObject(t, x.rep2, obj, tomb.Gen)
	k1 := tomb
	k1.Reflector = bgptest.RouterID(x.r1.Addr)
	x.client.View.WaitFor(t, "r1's tombstone at the client", bgptest.HasKey(k1.Key()))

	// Not yet expired: nothing to prune.
	x.clk1.Set(t0.Add(inof.TombstoneLifetime))
	if n, err := x.rep1.Prune(ctx); n != 0 || err != nil {
		t.Fatalf("prune before expiry: %d %v", n, err)
	}
	x.clk1.Set(t0.Add(inof.TombstoneLifetime + time.Hour))
	if n, err := x.rep1.Prune(ctx); n != 1 || err != nil {
		t.Fatalf("prune: %d %v", n, err)
	}
	x.client.View.WaitFor(t, "r1's tombstone withdrawn", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(k1.Key())(m) })

	// r2 (its clock behind) still carries its copy and offers it again
	// when the reflectors' session comes back: r1 refuses it.
	x.f.Cut(x.r1.Addr, x.r2.Addr)
	x.f.Mend(x.r1.Addr, x.r2.Addr)
	waitStats(t, "expired tombstone refused", func() bool { return x.rep1.Stats().Expired >= 1 })
	if objs := originated(x.rep1); len(objs) != 0 {
		t.Fatalf("r1 re-adopted the pruned tombstone: %+v", objs)
	}
	if x.client.View.Has(k1.Key()) {
		t.Fatal("r1 re-originated the pruned tombstone")
	}
	// A local Put of an expired tombstone (a store not pruned yet) is ignored.
	if took, _ := x.rep1.Put(ctx, tomb); took {
		t.Fatal("expired tombstone originated")
	}
	if st := x.rep1.Stats(); st.Pruned != 1 || st.Adopted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReplicatorRefusesFutureGenerations: a version from a peer whose
// generation is more than inof.MaxGenerationSkew ahead of our clock is
// refused and counted; one within the skew is adopted.
func TestReplicatorRefusesFutureGenerations(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	far := record.Config{Kind: 2, Name: "far", Gen: inof.GenerationAt(t0.Add(inof.MaxGenerationSkew + time.Minute)), Writer: bgptest.RouterID(x.r2.Addr)}
	near := record.Config{Kind: 2, Name: "near", Gen: inof.GenerationAt(t0.Add(time.Minute)), Writer: bgptest.RouterID(x.r2.Addr)}
	for _, c := range []record.Config{far, near} {
		if _, err := x.rep2.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	waitObject(t, x.rep1, near.Object(), near.Gen)
	waitStats(t, "far-future version refused", func() bool { return x.rep1.Stats().Future >= 1 })
	for _, c := range originated(x.rep1) {
		if c.Name == "far" {
			t.Fatalf("far-future version adopted: %+v", c)
		}
	}
	if st := x.rep1.Stats(); st.Adopted != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Each side's view of the other: r1 hears r2 originate both parts,
	// the newest from the future, refused and held back; r2 hears r1
	// carry only near, so r1 lacks one of r2's parts.
	r1, r2 := bgptest.RouterID(x.r1.Addr), bgptest.RouterID(x.r2.Addr)
	waitStats(t, "r1 carrying near at r2", func() bool {
		ps := mustPeers(t, x.rep2)
		return len(ps) == 1 && ps[0].Parts == 1
	})
	p1, p2 := mustPeers(t, x.rep1), mustPeers(t, x.rep2)
	if len(p1) != 1 || p1[0].Session != "established" || p1[0].RouterID != r2 || p1[0].Address != x.r2.Addr || p1[0].Parts != 2 || p1[0].Newest != far.Gen ||
		p1[0].NewestWriter != r2 || p1[0].Future < 1 || p1[0].Deferred != 1 || p1[0].Behind != 0 {
		t.Fatalf("r1's view of r2: %+v", p1)
	}
	if len(p2) != 1 || p2[0].RouterID != r1 || p2[0].Newest != near.Gen || p2[0].Behind != 1 || p2[0].Future != 0 || p2[0].Deferred != 0 {
		t.Fatalf("r2's view of r1: %+v", p2)
	}
	// Our clock catches up (the peer's had been stepped ahead): the far
	// version is adopted without being offered again (found by the soak:
	// an edit made under a clock stepped 10 minutes ahead was never
	// adopted, and the reflectors disagreed until the object changed).
	x.clk1.Set(t0.Add(2 * time.Minute))
	waitObject(t, x.rep1, far.Object(), far.Gen)
	waitStats(t, "r1 carrying both parts at r2", func() bool {
		ps := mustPeers(t, x.rep2)
		return len(ps) == 1 && ps[0].Parts == 2 && ps[0].Behind == 0
	})
	if ps := mustPeers(t, x.rep1); ps[0].Deferred != 0 {
		t.Fatalf("r1 still defers after adopting: %+v", ps)
	}
}

// TestReplicatorAdoptsOnlyFromPeerReflectors: a switch (a route-reflector
// client) that publishes a configuration record, even one claiming a peer
// reflector's router-id, does not get it adopted; the record is refused and
// counted, and a peer reflector's record is adopted.
func TestReplicatorAdoptsOnlyFromPeerReflectors(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	forged := record.Config{Reflector: bgptest.RouterID(x.r2.Addr), Kind: 2, Name: "injected", Gen: inof.GenerationAt(t0),
		Writer: bgptest.RouterID(x.r2.Addr), Payload: []byte{1}}
	if err := x.client.Publish(ctx, &forged, record.ConfigRT(bgptest.ASN)); err != nil {
		t.Fatal(err)
	}
	good := record.Config{Kind: 2, Name: "good", Gen: inof.GenerationAt(t0), Writer: bgptest.RouterID(x.r2.Addr)}
	if _, err := x.rep2.Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	waitObject(t, x.rep1, good.Object(), good.Gen)
	waitStats(t, "the client's record refused", func() bool { return x.rep1.Stats().NotPeer >= 1 })
	for _, rep := range []*ConfigReplicator{x.rep1, x.rep2} {
		for _, c := range originated(rep) {
			if c.Name == "injected" {
				t.Fatalf("a client's configuration record was adopted: %+v", c)
			}
		}
	}
	if st := x.rep1.Stats(); st.Adopted != 1 || st.NotPeer == 0 {
		t.Fatalf("r1 stats %+v", st)
	}
}

// TestReplicatorWithdrawRemembersVersion: a part withdrawn as stale is not
// adopted again from a peer that still offers the same version, and a newer
// version of it is.
func TestReplicatorWithdrawRemembersVersion(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	part := record.Config{Kind: 2, Name: "z", Part: 1, Gen: inof.GenerationAt(t0), Writer: bgptest.RouterID(x.r1.Addr)}
	if _, err := x.rep1.Put(ctx, part); err != nil {
		t.Fatal(err)
	}
	waitObject(t, x.rep2, part.Object(), part.Gen)
	if err := x.rep2.Withdraw(ctx, part); err != nil {
		t.Fatal(err)
	}
	own := part
	own.Reflector = bgptest.RouterID(x.r2.Addr)
	x.client.View.WaitFor(t, "r2's copy withdrawn", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(own.Key())(m) })
	if err := x.rep2.Withdraw(ctx, part); err != nil { // not held: nothing to do
		t.Fatal(err)
	}

	// r1 offers its copy again (the session comes back): not re-adopted.
	// A second object sent after it tells when r2 has seen the offer.
	x.f.Cut(x.r1.Addr, x.r2.Addr)
	x.f.Mend(x.r1.Addr, x.r2.Addr)
	marker := record.Config{Kind: 2, Name: "marker", Gen: inof.GenerationAt(t0), Writer: bgptest.RouterID(x.r1.Addr)}
	if _, err := x.rep1.Put(ctx, marker); err != nil {
		t.Fatal(err)
	}
	waitObject(t, x.rep2, marker.Object(), marker.Gen)
	for _, c := range originated(x.rep2) {
		if c.Object() == part.Object() {
			t.Fatalf("withdrawn part adopted again: %+v", c)
		}
	}
	if x.client.View.Has(own.Key()) {
		t.Fatal("r2 re-originated the withdrawn part")
	}

	// A newer version of the part is adopted.
	newer := part
	newer.Gen++
	if _, err := x.rep1.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	waitObject(t, x.rep2, newer.Object(), newer.Gen)
	if st := x.rep2.Stats(); st.Withdrawn != 1 || st.Adopted != 3 {
		t.Fatalf("r2 stats %+v", st)
	}
}

// TestReplicatorStaleWithdrawKeepsNewerCopy: a withdraw of a part as stale
// at the version the caller found leaves a newer version adopted from a
// peer meanwhile in place, and originated. (A reflector's sync loop found
// a part stale in its snapshot while the replicator adopted a newer
// version of it; the withdraw took the newer copy and remembered it as
// withdrawn, so the reflector never originated it again and the clients
// lacked its copy: TestConcurrentCommitsConverge's rare failure.)
func TestReplicatorStaleWithdrawKeepsNewerCopy(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	old := record.Config{Kind: 2, Name: "z", Part: 1, Gen: inof.GenerationAt(t0), Writer: bgptest.RouterID(x.r2.Addr)}
	if _, err := x.rep2.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	var held record.Config // what a reconcile's snapshot found
	for _, c := range originated(x.rep2) {
		if c.Object() == old.Object() {
			held = c
		}
	}
	if held.Gen != old.Gen {
		t.Fatalf("r2 does not hold the part: %+v", originated(x.rep2))
	}
	newer := record.Config{Kind: 2, Name: "z", Part: 1, Gen: old.Gen + 1, Writer: bgptest.RouterID(x.r1.Addr), Payload: []byte{1}}
	if _, err := x.rep1.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	waitObject(t, x.rep2, newer.Object(), newer.Gen)

	if err := x.rep2.Withdraw(ctx, held); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range originated(x.rep2) {
		if c.Object() == newer.Object() {
			found = c.Gen == newer.Gen
		}
	}
	if !found {
		t.Fatalf("the newer copy was withdrawn with the stale one: %+v", originated(x.rep2))
	}
	if st := x.rep2.Stats(); st.Withdrawn != 0 {
		t.Fatalf("r2 stats %+v: a withdraw counted", st)
	}
	// The version stored once complete is originated (held already).
	if took, err := x.rep2.Put(ctx, newer); err != nil || took {
		t.Fatalf("Put of the version held: took %v, err %v", took, err)
	}
	own := newer
	own.Reflector = bgptest.RouterID(x.r2.Addr)
	x.client.View.WaitFor(t, "r2's copy of the newer version", bgptest.HasKey(own.Key()))

	// Withdrawn at the version held, it goes.
	if err := x.rep2.Withdraw(ctx, newer); err != nil {
		t.Fatal(err)
	}
	x.client.View.WaitFor(t, "r2's copy withdrawn", func(m map[string]bgp.RecordEvent) bool { return !bgptest.HasKey(own.Key())(m) })
}

func mustPeers(t *testing.T, r *ConfigReplicator) []PeerCopies {
	t.Helper()
	ps, err := r.Peers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestReplicatorLookups: Len, Parts and OfKind answer from the parts held
// as Put, Withdraw and Prune change them, each with copies.
func TestReplicatorLookups(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	x := newFakeReflectors(t, t0)
	gen := inof.GenerationAt(t0)
	w := bgptest.RouterID(x.r1.Addr)
	// The tombstone is an hour older than the other parts: the prune below
	// comes when it has expired and the memory of the parts withdrawn has
	// not, so that the peer's copies of those (r2 adopted them and keeps
	// them) are not adopted again while the counts are read.
	put := func(kind uint8, name string, part uint16, deleted bool) record.Config {
		t.Helper()
		g := gen
		if deleted {
			g = inof.GenerationAt(t0.Add(-time.Hour))
		}
		c := record.Config{Kind: kind, Name: name, Part: part, Gen: g, Writer: w, Deleted: deleted, Payload: []byte{byte(part)}}
		if took, err := x.rep1.Put(ctx, c); err != nil || !took {
			t.Fatalf("put %v: %v %v", c.Object(), took, err)
		}
		c.Reflector = w
		return c
	}
	a1, a0 := put(2, "a", 1, false), put(2, "a", 0, false)
	b0 := put(2, "b", 0, true)
	j0 := put(17, "a", 0, false)
	objs := func(cs []record.Config) []record.ConfigObject {
		var out []record.ConfigObject
		for _, c := range cs {
			out = append(out, c.Object())
		}
		return out
	}
	check := func(what string, got []record.Config, want ...record.Config) {
		t.Helper()
		if fmt.Sprint(objs(got)) != fmt.Sprint(objs(want)) {
			t.Fatalf("%s: %v, want %v", what, objs(got), objs(want))
		}
	}
	check("parts of a", x.rep1.Parts(2, "a"), a0, a1)
	check("parts of kind 17's a", x.rep1.Parts(17, "a"), j0)
	check("parts of c", x.rep1.Parts(2, "c"))
	check("kind 2", x.rep1.OfKind(2), a0, a1, b0)
	check("kind 3", x.rep1.OfKind(3))
	if n := x.rep1.Len(); n != 4 {
		t.Fatalf("Len %d, want 4", n)
	}
	x.rep1.Parts(2, "a")[0].Name = "changed" // copies: the replicator's parts stay
	x.rep1.OfKind(2)[1].Name = "changed"
	check("parts of a after the caller changed its copies", x.rep1.Parts(2, "a"), a0, a1)

	if err := x.rep1.Withdraw(ctx, a1); err != nil {
		t.Fatal(err)
	}
	check("parts of a after a withdraw", x.rep1.Parts(2, "a"), a0)
	if err := x.rep1.Withdraw(ctx, j0); err != nil {
		t.Fatal(err)
	}
	check("kind 17 after its last part went", x.rep1.OfKind(17))
	x.clk1.Set(t0.Add(inof.TombstoneLifetime - 30*time.Minute))
	if n, err := x.rep1.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	check("kind 2 after the prune", x.rep1.OfKind(2), a0)
	if n := x.rep1.Len(); n != 1 {
		t.Fatalf("Len %d, want 1", n)
	}
	check("every part", originated(x.rep1), a0)
}
