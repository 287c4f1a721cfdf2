package zones

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/inof"

	"github.com/openinof/inof/internal/selfexec"
)

func openStore(t *testing.T, path string, id inof.RouterID) *Store {
	t.Helper()
	s, err := Open(path, StoreOptions{RouterID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.db")
	s := openStore(t, path, 1)
	if c := s.Config(); c.Settings != DefaultSettings() || len(c.Zones) != 0 {
		t.Fatalf("new store: %+v", c)
	}
	m := MustParseMember

	tx := s.Begin()
	if err := tx.CreateAlias("rack1", m("10.0.1.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("prod", m("alias:rack1"), m("10.0.9.9")); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("prod"); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate zone: %v", err)
	}
	if err := tx.CreateZone("default"); !errors.Is(err, ErrReserved) {
		t.Fatalf("default zone: %v", err)
	}
	if err := tx.AddZoneMembers("nope", m("10.0.0.1")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown zone: %v", err)
	}
	// Member edits are all or nothing per call.
	if err := tx.AddZoneMembers("prod", m("10.0.9.1"), m("10.0.9.9")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate member: %v", err)
	}
	if err := tx.RemoveZoneMembers("prod", m("10.0.9.9"), m("10.0.9.2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removing a missing member: %v", err)
	}
	if got := tx.Config().Zones["prod"].Members; len(got) != 2 {
		t.Fatalf("failed edits changed the zone: %v", got)
	}
	if err := tx.AddZoneMembers("prod", m("10.0.9.1")); err != nil {
		t.Fatal(err)
	}
	if err := tx.RemoveZoneMembers("prod", m("10.0.9.1")); err != nil {
		t.Fatal(err)
	}
	recs, err := tx.Commit()
	if err != nil || len(recs) != 2 {
		t.Fatalf("commit: %v, %d records", err, len(recs))
	}
	if _, err := tx.Commit(); !errors.Is(err, ErrTxDone) {
		t.Fatalf("second commit: %v", err)
	}
	for _, r := range recs {
		if r.RouterID != 1 || r.Gen == 0 {
			t.Fatalf("record version %+v", r.Version)
		}
	}

	// A commit that would leave a dangling alias is refused whole.
	tx = s.Begin()
	if err := tx.DeleteAlias("rack1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("dev", m("10.0.5.5")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); !errors.Is(err, ErrUnknown) {
		t.Fatalf("dangling alias commit: %v", err)
	}
	if c := s.Config(); c.Zones["dev"] != nil || c.Aliases["rack1"] == nil {
		t.Fatal("refused commit changed the store")
	}

	// Abort discards; a concurrent commit makes an older transaction conflict.
	tx = s.Begin()
	tx.CreateZone("x")
	tx.Abort()
	stale := s.Begin()
	tx = s.Begin()
	tx.SetSettings(Settings{DefaultZoneEnabled: false, HardZoning: true})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	stale.CreateZone("y")
	if _, err := stale.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale commit: %v", err)
	}

	// Deleting a zone leaves a tombstone; everything survives a reopen.
	tx = s.Begin()
	tx.DeleteZone("prod")
	if recs, err := tx.Commit(); err != nil || len(recs) != 1 || !recs[0].Deleted {
		t.Fatalf("delete: %v %+v", err, recs)
	}
	before := s.Records()
	s.Close()
	s2 := openStore(t, path, 1)
	if got := s2.Records(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after reopen\n got %+v\nwant %+v", got, before)
	}
	c := s2.Config()
	if c.Settings.DefaultZoneEnabled || c.Zones["prod"] != nil || c.Aliases["rack1"] == nil {
		t.Fatalf("reopened config %+v", c)
	}
	// The clock continues above what was written.
	tx = s2.Begin()
	tx.CreateZone("after", m("10.0.7.7"))
	recs, err = tx.Commit()
	if err != nil || recs[0].Gen <= before[len(before)-1].Gen {
		t.Fatalf("generation after reopen: %v %+v", err, recs)
	}
}

// manualClock is a wall clock a test moves by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openStoreAt(t *testing.T, path string, id inof.RouterID, clock *manualClock) *Store {
	t.Helper()
	s, err := Open(path, StoreOptions{RouterID: id, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStorePrune: tombstones leave the file once past inof.TombstoneLifetime
// from their generation; young ones and live objects stay. A peer that
// offers the pruned tombstone again is refused and counted, so the prune
// sticks (before, Apply took it back and every reflector kept re-adding
// what the others pruned).
func TestStorePrune(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.db")
	clock := &manualClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openStoreAt(t, path, 1, clock)
	tx := s.Begin()
	tx.CreateZone("gone", MustParseMember("10.0.0.1"))
	tx.CreateZone("kept", MustParseMember("10.0.0.2"))
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = s.Begin()
	tx.DeleteZone("gone")
	tomb, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	clock.add(inof.TombstoneLifetime)
	if n, err := s.Prune(); err != nil || n != 0 {
		t.Fatalf("young tombstone pruned: %d %v", n, err)
	}
	clock.add(time.Second)
	if n, err := s.Prune(); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	won, err := s.Apply(tomb)
	if len(won) != 0 || !errors.Is(err, ErrExpired) || s.RefusedCounts().Expired != 1 {
		t.Fatalf("re-offered expired tombstone: won %v, err %v, refused %+v", won, err, s.RefusedCounts())
	}
	s.Close()
	s2 := openStoreAt(t, path, 1, clock)
	recs := s2.Records()
	if len(recs) != 1 || recs[0].Name != "kept" {
		t.Fatalf("after prune and reopen: %+v", recs)
	}
}

// TestStoreApplyRefusesFuture: a record from more than
// inof.MaxGenerationSkew ahead is refused and counted, and does not move the
// clock; one just within the skew is taken.
func TestStoreApplyRefusesFuture(t *testing.T) {
	clock := &manualClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openStoreAt(t, filepath.Join(t.TempDir(), "zones.db"), 1, clock)
	far := Record{Key: Key{KindZone, "far"}, Version: Version{Gen: inof.GenerationAt(clock.now().Add(inof.MaxGenerationSkew + time.Second)), RouterID: 2}}
	near := Record{Key: Key{KindZone, "near"}, Version: Version{Gen: inof.GenerationAt(clock.now().Add(inof.MaxGenerationSkew - time.Second)), RouterID: 2}}
	won, err := s.Apply([]Record{far, near})
	if !errors.Is(err, inof.ErrFutureGeneration) || len(won) != 1 || won[0].Name != "near" {
		t.Fatalf("won %v, err %v", won, err)
	}
	if got := s.RefusedCounts(); got.Future != 1 || got.Expired != 0 {
		t.Fatalf("refused %+v", got)
	}
	tx := s.Begin()
	tx.CreateZone("local")
	recs, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Gen <= near.Gen || recs[0].Gen >= far.Gen {
		t.Fatalf("local generation %d not between the accepted %d and the refused %d", recs[0].Gen, near.Gen, far.Gen)
	}
}

// TestStoreClockSteppedBack: a reflector whose wall clock stepped back by
// more than inof.MaxGenerationSkew since its last commit still writes newer
// generations than the ones in its own file (before, the stored generation
// was refused by the clock and the next edit lost to the previous one).
func TestStoreClockSteppedBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.db")
	clock := &manualClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openStoreAt(t, path, 1, clock)
	tx := s.Begin()
	tx.CreateZone("z", MustParseMember("10.0.0.1"))
	first, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	clock.add(-time.Hour)
	s = openStoreAt(t, path, 1, clock)
	tx = s.Begin()
	tx.AddZoneMembers("z", MustParseMember("10.0.0.2"))
	second, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if !first[0].Version.Less(second[0].Version) {
		t.Fatalf("edit after the clock stepped back has version %+v, not above the stored %+v", second[0].Version, first[0].Version)
	}
	if got := s.Config().Zones["z"].Members; len(got) != 2 {
		t.Fatalf("zone has %v", got)
	}
}

// TestStoreReplication: two reflectors take writes independently and
// exchange records in different orders; both converge, the newer write wins
// per zone, and a deletion is not undone by an old copy. The two share a
// manual clock that moves a millisecond a commit: on the wall clock two
// commits within a millisecond have the same generation, and which one is
// "later" would be the tie-break's (the test failed one run in ~20).
func TestStoreReplication(t *testing.T) {
	dir := t.TempDir()
	clock := &manualClock{t: time.Now()}
	a := openStoreAt(t, filepath.Join(dir, "a.db"), 1, clock)
	b := openStoreAt(t, filepath.Join(dir, "b.db"), 2, clock)
	m := MustParseMember
	commit := func(s *Store, f func(tx *Tx) error) []Record {
		t.Helper()
		clock.add(time.Millisecond)
		tx := s.Begin()
		if err := f(tx); err != nil {
			t.Fatal(err)
		}
		recs, err := tx.Commit()
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	ra := commit(a, func(tx *Tx) error { return tx.CreateZone("z1", m("10.0.0.1")) })
	if _, err := b.Apply(ra); err != nil {
		t.Fatal(err)
	}
	// Both edit z1; b's edit is later, so it wins on both.
	ra = commit(a, func(tx *Tx) error { return tx.AddZoneMembers("z1", m("10.0.0.2")) })
	rb := commit(b, func(tx *Tx) error { return tx.AddZoneMembers("z1", m("10.0.0.3")) })
	rb = append(rb, commit(b, func(tx *Tx) error { return tx.CreateZone("z2", m("10.0.0.4")) })...)
	if _, err := a.Apply(rb); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Apply(ra); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Records()) != fmt.Sprint(b.Records()) {
		t.Fatalf("diverged\n a %+v\n b %+v", a.Records(), b.Records())
	}
	if got := a.Config().Zones["z1"].Members; len(got) != 2 || got[1] != m("10.0.0.3") {
		t.Fatalf("z1 = %v, want b's later edit", got)
	}
	// a deletes z2; b re-sends its old copy: the tombstone holds.
	oldZ2 := rb[len(rb)-1]
	del := commit(a, func(tx *Tx) error { return tx.DeleteZone("z2") })
	if won, _ := a.Apply([]Record{oldZ2}); len(won) != 0 {
		t.Fatal("old copy won over the tombstone")
	}
	b.Apply(del)
	if b.Config().Zones["z2"] != nil || a.Config().Zones["z2"] != nil {
		t.Fatal("deleted zone still live")
	}
	// A merged configuration can dangle (alias deleted on one side while
	// used on the other): it is reported, not hidden.
	ra = commit(a, func(tx *Tx) error { return tx.CreateAlias("al", m("10.0.3.0/24")) })
	b.Apply(ra)
	rb = commit(b, func(tx *Tx) error { return tx.CreateZone("z3", m("alias:al")) })
	ra = commit(a, func(tx *Tx) error { return tx.DeleteAlias("al") })
	a.Apply(rb)
	b.Apply(ra)
	if err := a.Problems(); !errors.Is(err, ErrUnknown) {
		t.Fatalf("problems: %v", err)
	}
}

const crashEnv = "INOF_ZONES_CRASH_STORE"

// TestMain turns the test binary into the crash child of
// TestStoreCrashSafety when crashEnv names a store.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		if err := commitForever(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// commitForever commits until killed; each commit adds the round's member to
// all crashZones zones, and prints a line once it is durable.
func commitForever(path string) error {
	s, err := Open(path, StoreOptions{RouterID: 9, LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	round := 0
	if z := s.Config().Zones[crashZone(0)]; z != nil {
		round = len(z.Members)
	}
	for ; ; round++ {
		tx := s.Begin()
		for z := range crashZones {
			if round == 0 {
				if err := tx.CreateZone(crashZone(z)); err != nil {
					return err
				}
			}
			if err := tx.AddZoneMembers(crashZone(z), crashMember(round)); err != nil {
				return err
			}
		}
		if _, err := tx.Commit(); err != nil {
			return err
		}
		fmt.Println("committed", round)
	}
}

const crashZones = 20

func crashZone(i int) string { return "crash" + strconv.Itoa(i) }

func crashMember(round int) Member {
	return Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(round >> 16), byte(round >> 8), byte(round)}).Next()}
}

// TestStoreCrashSafety kills a committing child process with SIGKILL at
// random moments; each time the store must open and hold one whole commit:
// every zone with the same number of members.
func TestStoreCrashSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	last := -1
	for kill := range 8 {
		// Wait for the first commit, then kill at a random moment.
		child, line := selfexec.Start(t, crashEnv+"="+path)
		if !strings.HasPrefix(line, "committed") {
			t.Fatalf("child %d printed %q", kill, line)
		}
		time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		child.Kill()

		s, err := Open(path, StoreOptions{RouterID: 1})
		if err != nil {
			t.Fatalf("kill %d: store does not open: %v", kill, err)
		}
		c := s.Config()
		n := len(c.Zones[crashZone(0)].Members)
		for z := range crashZones {
			zz := c.Zones[crashZone(z)]
			if zz == nil || len(zz.Members) != n || zz.Members[n-1] != crashMember(n-1) {
				t.Fatalf("kill %d: zone %d holds %v, zone 0 holds %d members: a torn commit", kill, z, zz, n)
			}
		}
		if n <= last {
			t.Fatalf("kill %d: %d rounds, fewer than the %d before", kill, n, last)
		}
		last = n
		s.Close()
	}
	t.Logf("8 kills, %d whole commits survived", last)
}

// TestStoreRecordLooksUp: Record finds what Records lists, by key, a
// deletion's tombstone included, and nothing for a key never written.
func TestStoreRecordLooksUp(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "zones.db"), 1)
	tx := s.Begin()
	if err := tx.CreateZone("prod", MustParseMember("10.0.9.9")); err != nil {
		t.Fatal(err)
	}
	if err := tx.CreateZone("test", MustParseMember("10.0.9.8")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = s.Begin()
	if err := tx.DeleteZone("test"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	all := s.Records()
	if len(all) == 0 {
		t.Fatal("no records")
	}
	for _, want := range all {
		got, ok := s.Record(want.Key)
		if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Record(%s) = %v, %v; want %v", want.Key, got, ok, want)
		}
	}
	if r, ok := s.Record(Key{Kind: KindZone, Name: "test"}); !ok || !r.Deleted {
		t.Errorf("the deleted zone's record: %v, %v; want its tombstone", r, ok)
	}
	if r, ok := s.Record(Key{Kind: KindZone, Name: "never"}); ok {
		t.Errorf("a key never written: %v", r)
	}
}
