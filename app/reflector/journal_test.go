package reflector

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// kind returns the events of one kind.
func (l *eventLog) kind(k string) []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []api.Event
	for _, e := range l.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// journalPair is pair with event logs and a history size.
func journalPair(t *testing.T, history int) (*bgp.FakeFabric, [2]*Reflector, [2]*eventLog) {
	t.Helper()
	f := bgp.NewFakeFabric()
	var rs [2]*Reflector
	var logs [2]*eventLog
	for i, id := range []string{r1ID, r2ID} {
		peer := []string{r2ID, r1ID}[i]
		o := testOptions(t, id, []string{peer}, []string{clientID})
		o.HistorySize = history
		logs[i] = &eventLog{}
		rs[i] = startReflector(t, Config{Options: o, NewSpeaker: fakeSpeakers(f, nil), Events: logs[i]})
	}
	startClient(t, f, clientID, r1ID, r2ID)
	return f, rs, logs
}

func journalIDs(t testing.TB, r *Reflector) []string {
	t.Helper()
	es, err := r.Journal()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID() + " " + e.Identity + " " + e.Action
	}
	return out
}

// waitJournals waits until both reflectors hold the same n entries.
func waitJournals(t testing.TB, rs [2]*Reflector, n int) []string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		a, b := journalIDs(t, rs[0]), journalIDs(t, rs[1])
		if len(a) == n && slices.Equal(a, b) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("journals differ or hold not %d entries:\n%s\n---\n%s", n, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func as(name string) context.Context {
	return api.WithIdentity(context.Background(), api.Identity{Name: "user:" + name, Via: "test"})
}

// TestJournalReplicates: commits and a lossless change on either
// reflector reach the other's journal with their identities, so both
// answer the same history and rebuild the same revisions; the peer's
// entries are events with the identity.
func TestJournalReplicates(t *testing.T) {
	_, rs, logs := journalPair(t, 100)
	m := zones.MustParseMember
	if _, err := rs[0].Commit(as("alice"), func(tx *zones.Tx) error { return tx.CreateZone("web", m("10.0.0.1")) }); err != nil {
		t.Fatal(err)
	}
	waitStore(t, rs[1], "web", func(s map[zones.Key]zones.Record) bool { _, ok := s[zoneKey("web")]; return ok })
	if _, err := rs[1].Commit(as("bob"), func(tx *zones.Tx) error { return tx.AddZoneMembers("web", m("10.0.0.2")) }); err != nil {
		t.Fatal(err)
	}
	p := lossless.Default()
	p.Name = "site-a"
	if err := rs[1].SetLosslessProfile(as("carol"), p); err != nil {
		t.Fatal(err)
	}
	ids := waitJournals(t, rs, 3)
	for i, who := range []string{"user:alice commit", "user:bob commit", "user:carol lossless"} {
		if !strings.HasSuffix(ids[i], who) {
			t.Errorf("entry %d: %s, want %s", i, ids[i], who)
		}
	}
	es, _ := rs[0].Journal()
	for _, r := range rs {
		at, ok, err := r.ConfigAt(es[0].Version)
		if err != nil || !ok || len(at.Zones["web"].Members) != 1 {
			t.Fatalf("%s: revision 1: %+v %v %v", r.opts.RouterID, at, ok, err)
		}
	}
	var seen bool
	for _, e := range logs[0].kind("zoning") {
		if e.Attributes["identity"] == "user:bob" && strings.Contains(e.Message, "on reflector "+r2ID) {
			seen = true
		}
	}
	if !seen {
		t.Errorf("r1 published no event with bob's identity: %+v", logs[0].kind("zoning"))
	}
}

// TestJournalBoundReplicated: with history_size 4, both reflectors keep
// the same 4 newest entries, and originate no part of a dropped entry.
func TestJournalBoundReplicated(t *testing.T) {
	_, rs, _ := journalPair(t, 4)
	for i := range 9 {
		r := rs[i%2]
		if _, err := r.Commit(as("ci"), func(tx *zones.Tx) error {
			return tx.CreateAlias(fmt.Sprintf("a%d", i), zones.MustParseMember("10.0.0.1"))
		}); err != nil {
			t.Fatal(err)
		}
		waitStore(t, rs[(i+1)%2], "the alias", func(s map[zones.Key]zones.Record) bool {
			_, ok := s[zones.Key{Kind: zones.KindAlias, Name: fmt.Sprintf("a%d", i)}]
			return ok
		})
	}
	ids := waitJournals(t, rs, 4)
	for _, r := range rs {
		deadline := time.Now().Add(waitTimeout)
		for {
			var names []string
			for _, c := range r.run.repl.OfKind(uint8(configsync.KindJournal)) {
				names = append(names, c.Name)
			}
			if len(names) == 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s originates journal parts %v, want those of %v", r.opts.RouterID, names, ids)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestConflictDuringPartition: two admins edit one zone on two reflectors
// cut apart; when the link comes back last-writer-wins keeps one edit, and
// both reflectors report the conflict (event, journal, metric), naming
// the same edit as the one in effect.
func TestConflictDuringPartition(t *testing.T) {
	f, rs, logs := journalPair(t, 100)
	m := zones.MustParseMember
	if _, err := rs[0].Commit(as("alice"), func(tx *zones.Tx) error { return tx.CreateZone("z", m("10.0.0.1")) }); err != nil {
		t.Fatal(err)
	}
	waitJournals(t, rs, 1)
	f.Cut(netip.MustParseAddr(r1ID), netip.MustParseAddr(r2ID))
	if _, err := rs[0].Commit(as("alice"), func(tx *zones.Tx) error { return tx.AddZoneMembers("z", m("10.0.0.2")) }); err != nil {
		t.Fatal(err)
	}
	if _, err := rs[1].Commit(as("bob"), func(tx *zones.Tx) error { return tx.AddZoneMembers("z", m("10.0.0.3")) }); err != nil {
		t.Fatal(err)
	}
	f.Mend(netip.MustParseAddr(r1ID), netip.MustParseAddr(r2ID))
	waitJournals(t, rs, 3)
	var kept [2]zones.Version
	for i, r := range rs {
		cs, _ := r.Conflicts()
		if len(cs) != 1 || cs[0].Key != zoneKey("z") || len(cs[0].Lost) != 1 {
			t.Fatalf("%s: conflicts %+v", r.opts.RouterID, cs)
		}
		kept[i] = cs[0].Winner
		deadline := time.Now().Add(waitTimeout)
		for len(logs[i].kind("conflict")) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s published no conflict event", r.opts.RouterID)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if n := r.m.conflicts.Load(); n != 1 {
			t.Errorf("%s counted %d conflicts", r.opts.RouterID, n)
		}
		ev := logs[i].kind("conflict")[0]
		if !strings.Contains(ev.Message, "user:alice") || !strings.Contains(ev.Message, "user:bob") {
			t.Errorf("%s: conflict event does not name both: %s", r.opts.RouterID, ev.Message)
		}
	}
	if kept[0] != kept[1] {
		t.Fatalf("the reflectors disagree on the edit in effect: %v / %v", kept[0], kept[1])
	}
}

// TestConcurrentCommitsNoSilentLoss: admins on both reflectors add
// members to one zone at the same moment, many times. Every commit that
// succeeded either left its member in the final zone or is named in a
// conflict both reflectors report: no edit vanishes without a word.
func TestConcurrentCommitsNoSilentLoss(t *testing.T) {
	_, rs, _ := journalPair(t, 1000)
	if _, err := rs[0].Commit(as("setup"), func(tx *zones.Tx) error { return tx.CreateZone("z") }); err != nil {
		t.Fatal(err)
	}
	waitJournals(t, rs, 1)
	type done struct {
		member zones.Member
		ver    zones.Version
	}
	var mu sync.Mutex
	var commits []done
	var wg sync.WaitGroup
	for w, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				mem := zones.MustParseMember(fmt.Sprintf("10.%d.0.%d", w+1, i+1))
				recs, err := r.Commit(as(fmt.Sprintf("admin%d", w)), func(tx *zones.Tx) error { return tx.AddZoneMembers("z", mem) })
				if err != nil {
					continue // refused at once (ErrConflict): the admin was told
				}
				mu.Lock()
				commits = append(commits, done{mem, recs[0].Version})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ids := waitJournals(t, rs, 1+len(commits))
	waitStore(t, rs[1], "the same zone", func(s map[zones.Key]zones.Record) bool {
		r0, _ := rs[0].Records()
		for _, x := range r0 {
			if x.Key == zoneKey("z") {
				return sameRecord(s[x.Key], x)
			}
		}
		return false
	})
	final, err := rs[0].Config()
	if err != nil {
		t.Fatal(err)
	}
	es, _ := rs[0].Journal()
	entryOf := map[zones.Version]zones.Version{} // record version → entry
	for _, e := range es {
		for _, w := range e.Writes {
			entryOf[w.New] = e.Version
		}
	}
	inConflict := map[zones.Version]bool{}
	cs0, _ := rs[0].Conflicts()
	cs1, _ := rs[1].Conflicts()
	for _, c := range cs0 {
		for _, v := range append(c.Lost, c.Resolved...) {
			inConflict[v] = true
		}
	}
	if fmt.Sprint(cs0) != fmt.Sprint(cs1) {
		t.Fatalf("the reflectors report different conflicts:\n%v\n%v", cs0, cs1)
	}
	lost := 0
	for _, c := range commits {
		if slices.Contains(final.Zones["z"].Members, c.member) {
			continue
		}
		lost++
		if !inConflict[entryOf[c.ver]] {
			t.Errorf("member %s (commit %s) vanished without a conflict", c.member, zones.EntryID(c.ver))
		}
	}
	t.Logf("%d commits went through (journal %d entries), %d edits lost and reported as conflicts (%d conflicts)",
		len(commits), len(ids), lost, len(cs0))
	if lost > 0 && rs[0].m.conflicts.Load() == 0 {
		t.Error("edits were lost and r1 counted no conflict")
	}
}

// TestHeldByGracefulRestart: a client whose session goes down is reported
// as held by graceful restart until the restart time after the loss, and
// no longer once it is back.
func TestHeldByGracefulRestart(t *testing.T) {
	f, r1, _, _ := pair(t)
	hb := r1.API().(api.HoldBackend)
	held := func() map[inof.RouterID]time.Time {
		h, err := hb.Held(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	deadline := time.Now().Add(waitTimeout)
	for len(held()) != 0 || !upWith(r1, clientID) {
		if time.Now().After(deadline) {
			t.Fatalf("client not up, or held while up: %v", held())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cut := time.Now()
	f.Cut(netip.MustParseAddr(r1ID), netip.MustParseAddr(clientID))
	rid := inof.MustParseRouterID(clientID)
	for held()[rid].IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the cut client is not reported as held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	until := held()[rid]
	if rt := r1.opts.GracefulRestart.RestartTime; until.Before(cut.Add(rt-time.Second)) || until.After(time.Now().Add(rt)) {
		t.Errorf("held until %v, want the restart time (%v) after the cut at %v", until, rt, cut)
	}
	f.Mend(netip.MustParseAddr(r1ID), netip.MustParseAddr(clientID))
	for len(held()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still held after the client came back: %v", held())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func upWith(r *Reflector, addr string) bool {
	ns, err := r.Neighbors(context.Background())
	if err != nil {
		return false
	}
	for _, n := range ns {
		if n.Address.String() == addr {
			return n.State == bgp.StateEstablished
		}
	}
	return false
}

// TestJournalPartsAllOriginated: while entries of many parts arrive from
// the peer and local commits run, each reflector ends up originating every
// part of every entry it keeps (none withdrawn while it was assembling).
func TestJournalPartsAllOriginated(t *testing.T) {
	_, rs, _ := journalPair(t, 100)
	var wg sync.WaitGroup
	for w, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit := func(edit func(*zones.Tx) error) bool {
				for {
					_, err := r.Commit(as("ci"), edit)
					if !errors.Is(err, zones.ErrConflict) { // a merge landed meanwhile: again
						if err != nil {
							t.Error(err)
						}
						return err == nil
					}
				}
			}
			for i := range 6 {
				name := fmt.Sprintf("z%d-%d", w, i)
				if !commit(func(tx *zones.Tx) error { return tx.CreateZone(name, ipv4Members(1500)...) }) ||
					!commit(func(tx *zones.Tx) error { return tx.DeleteZone(name) }) {
					return
				}
			}
		}()
	}
	wg.Wait()
	waitJournals(t, rs, 24)
	for _, r := range rs {
		es, _ := r.Journal()
		want := map[string]int{}
		for _, e := range es {
			parts, err := configsync.JournalRecords(e)
			if err != nil {
				t.Fatal(err)
			}
			want[e.ID()] = len(parts)
		}
		deadline := time.Now().Add(waitTimeout)
		for {
			got := map[string]int{}
			for _, c := range r.run.repl.OfKind(uint8(configsync.KindJournal)) {
				got[c.Name]++
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s originates journal parts %v, want %v", r.opts.RouterID, got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
