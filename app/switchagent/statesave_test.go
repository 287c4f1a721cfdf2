package switchagent

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// TestSaveFailsBesideLoop: saves are written beside the agent's loop. One
// that fails (a directory stands where the state file goes) must leave the
// told journal's generations in place, so that a crash then still replays
// what hosts were told, and the agent must try again: once the way is
// clear, a save holds the notice and the journal's generations are gone.
// Failed saves with nothing journalled meanwhile add no generations.
func TestSaveFailsBesideLoop(t *testing.T) {
	id, dir, ports := "10.0.0.11", t.TempDir(), []string{"p1", "p2"}
	tgt := inof.Device{Addr: netip.MustParseAddr("10.1.0.10"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420,
		NQN: "nqn.2014-08.org.example:t"}
	hd := inof.Device{Addr: netip.MustParseAddr("10.1.0.21"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	opts := Options{Common: daemon.Common{StateDir: dir}}
	near, far := memPorts(id, ports...)
	logs := newLogLines()
	s := runSwitchLogged(t, bgp.NewFakeFabric(), netip.Addr{}, id, dir, nil, slog.New(logs), directOptions(ports...), near)
	defer s.stop()
	<-s.agent.Ready()
	// A save may be written meanwhile: the directory goes where it left
	// its file.
	waitUntil(t, "a directory where the state file goes", func() bool {
		if err := os.RemoveAll(opts.stateFile()); err != nil {
			t.Fatal(err)
		}
		return os.MkdirAll(filepath.Join(opts.stateFile(), "blocker"), 0o700) == nil
	})
	commit(t, s.agent.API(), func(tx *zones.Tx) error {
		return tx.CreateZone("z1", zones.MustParseMember(tgt.Addr.String()), zones.MustParseMember(hd.Addr.String()))
	})
	// TTLs long enough that no deadline makes a save within the test:
	// only the retry of the failed one can.
	newSimHost(t, far["p1"], tgt).register(600)
	h := newSimHost(t, far["p2"], hd)
	h.register(600)
	h.waitFor("the host sees the target", last(tgt.Addr, inof.StateActive, inof.ReasonNone))

	// Saves fail meanwhile; the notice stays journalled across them.
	journal := opts.toldJournalFile()
	waitUntil(t, "a failed save's generations kept, with the notice", func() bool {
		gens, err := toldGenerations(journal)
		if err != nil || len(gens) == 0 {
			return false
		}
		var all []toldEntry
		for _, g := range gens {
			es, _, err := readTold(toldGenPath(journal, g))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, es...)
		}
		return slices.ContainsFunc(all, func(e toldEntry) bool { return e.Host == hd.Addr && e.Target.Addr == tgt.Addr && e.Active })
	})
	if _, ok, err := loadState(opts.stateFile()); ok || err == nil {
		t.Fatalf("a state file was read (%v, %v) where a directory stands", ok, err)
	}
	kept, err := toldGenerations(journal)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // two more failed saves
		logs.waitFor(t, logs.mark(), "saving state")
	}
	if gens, err := toldGenerations(journal); err != nil || len(gens) != len(kept) {
		t.Fatalf("failed saves with nothing journalled: generations %v (%v), were %v", gens, err, kept)
	}

	if err := os.RemoveAll(opts.stateFile()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a save with the notice, and no generation left", func() bool {
		st, ok, err := loadState(opts.stateFile())
		if err != nil || !ok || !slices.Contains(st.Told[hd.Addr], tgt) || st.ToldGen < kept[len(kept)-1] {
			return false
		}
		gens, err := toldGenerations(journal)
		return err == nil && len(gens) == 0
	})
}
