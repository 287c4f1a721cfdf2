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
	"testing"
	"time"

	"github.com/openinof/inof/integration/selfexec"
)

func openStore(t *testing.T, path string, id uint32) *Store {
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

// TestStorePrune: old tombstones leave the file; young ones and live
// objects stay.
func TestStorePrune(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.db")
	s := openStore(t, path, 1)
	tx := s.Begin()
	tx.CreateZone("gone", MustParseMember("10.0.0.1"))
	tx.CreateZone("kept", MustParseMember("10.0.0.2"))
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx = s.Begin()
	tx.DeleteZone("gone")
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Prune(time.Now(), time.Hour); err != nil || n != 0 {
		t.Fatalf("young tombstone pruned: %d %v", n, err)
	}
	if n, err := s.Prune(time.Now().Add(2*time.Hour), time.Hour); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	s.Close()
	s2 := openStore(t, path, 1)
	recs := s2.Records()
	if len(recs) != 1 || recs[0].Name != "kept" {
		t.Fatalf("after prune and reopen: %+v", recs)
	}
}

// TestStoreReplication: two reflectors take writes independently and
// exchange records in different orders; both converge, the newer write wins
// per zone, and a deletion is not undone by an old copy.
func TestStoreReplication(t *testing.T) {
	dir := t.TempDir()
	a := openStore(t, filepath.Join(dir, "a.db"), 1)
	b := openStore(t, filepath.Join(dir, "b.db"), 2)
	m := MustParseMember
	commit := func(s *Store, f func(tx *Tx) error) []Record {
		t.Helper()
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
