package switchagent

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
)

func TestToldJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "switch.told")
	j, got, bad, err := openToldJournal(path, 0)
	if err != nil || len(got) != 0 || bad != 0 {
		t.Fatalf("new journal: %v %d %v", got, bad, err)
	}
	down := PortNotice{Port: "swp1", Notice: Notice{Host: hostA.Addr, Target: tgt1, State: inof.StateInactive, Reason: inof.ReasonBFDDown}}
	up := PortNotice{Port: "swp1", Notice: Notice{Host: hostA.Addr, Target: tgt2, State: inof.StateActive}}
	if err := j.record([]PortNotice{down, up}); err != nil {
		t.Fatal(err)
	}
	if err := j.record(nil); err != nil {
		t.Fatal(err)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"host":"10.1.0.1","tar`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	j, got, bad, err = openToldJournal(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []toldEntry{{Host: hostA.Addr, Target: tgt1}, {Host: hostA.Addr, Target: tgt2, Active: true}}
	if !reflect.DeepEqual(got, want) || bad != 1 {
		t.Fatalf("reopened: %+v (torn %d), want %+v and one torn line", got, bad, want)
	}
	// What comes after a restart goes to a new file: the torn line does
	// not hide it.
	if err := j.record([]PortNotice{up}); err != nil {
		t.Fatal(err)
	}
	j.close()
	j, got, bad, err = openToldJournal(path, 0)
	if err != nil || bad != 1 || !reflect.DeepEqual(got, append(want, want[1])) {
		t.Fatalf("after a restart and one more: %+v (torn %d) %v", got, bad, err)
	}
	// A save's snapshot ends a generation; with nothing journalled since
	// the last one it ends none (saves that keep failing add no files).
	if gen, err := j.rotate(); err != nil || gen != 2 {
		t.Fatalf("rotation with nothing journalled: generation %d (%v), want the restart's 2", gen, err)
	}
	if err := j.record([]PortNotice{down}); err != nil {
		t.Fatal(err)
	}
	gen, err := j.rotate()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.record([]PortNotice{up}); err != nil {
		t.Fatal(err)
	}
	if gens, err := toldGenerations(path); err != nil || len(gens) != 3 || gens[2] != gen {
		t.Fatalf("before the save is written: generations %v (%v), want three (two restarts, one save), the newest %d", gens, err, gen)
	}
	j.close()
	// A crash after the state file holding gen was written and before
	// its generations were removed: they are not replayed over it, and
	// go; only what came after is replayed.
	j, got, bad, err = openToldJournal(path, gen)
	if err != nil || bad != 0 || !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("after the save: %+v (torn %d) %v, want %+v", got, bad, err, want[1:])
	}
	if gens, err := toldGenerations(path); err != nil || len(gens) != 1 || gens[0] != gen+1 {
		t.Fatalf("after the save: generations %v (%v), want only %d, the live file read at the start", gens, err, gen+1)
	}
	if err := j.record([]PortNotice{down}); err != nil {
		t.Fatal(err)
	}
	if next, err := j.rotate(); err != nil || next != gen+2 {
		t.Fatalf("the next rotation: generation %d (%v), want %d", next, err, gen+2)
	}
	// The journal file deleted under the agent: the rotation opens a new
	// one (the snapshot holds what it had).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := j.record([]PortNotice{up}); err != nil {
		t.Fatal(err)
	}
	if g, err := j.rotate(); err != nil || g != gen+2 {
		t.Fatalf("rotation of a deleted journal: generation %d (%v), want %d", g, err, gen+2)
	}
	if err := j.record([]PortNotice{down}); err != nil {
		t.Fatal(err)
	}
	j.close()
	if _, got, _, err := openToldJournal(path, gen+2); err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("after the deleted journal: %+v %v, want %+v", got, err, want[:1])
	}
}

func TestReplayTold(t *testing.T) {
	saved := map[netip.Addr][]inof.Device{hostA.Addr: {tgt1}}
	got := replayTold(saved, []toldEntry{
		{Host: hostA.Addr, Target: tgt1},               // told inactive
		{Host: hostA.Addr, Target: tgt2, Active: true}, // then tgt2 active
		{Host: hostA.Addr, Target: tgt1, Active: true}, // then tgt1 again
		{Host: hostA.Addr, Target: tgt2},               // and tgt2 gone
	})
	if want := []inof.Device{tgt1}; !reflect.DeepEqual(got[hostA.Addr], want) {
		t.Fatalf("replayed %v, want %v", got[hostA.Addr], want)
	}
	if !reflect.DeepEqual(saved[hostA.Addr], []inof.Device{tgt1}) {
		t.Fatalf("the saved map changed: %v", saved)
	}
}

// TestEngineRestoreAfterCrash: the agent told the host a target inactive
// and was killed before the state file saved it; back, with the journal
// replayed, the target's record (active again) must be told to the host.
// Restored from the state file alone the engine believes the host knows.
func TestEngineRestoreAfterCrash(t *testing.T) {
	e := newEngine(t, nil)
	e.Register(registration("swp1", hostA, at(0)), at(0))
	e.ZoneQuery(hostA.Addr)
	up := inof.Report{Switch: remote, Device: tgt1, Status: inof.Status{State: inof.StateActive, Changed: at(1)}}
	e.Record(up)
	published, saved := e.Published(), e.Told() // the last save
	out := e.Gone(remote, tgt1.Addr)
	notices(t, "the target's switch is lost", out, inactive("swp1", hostA, tgt1, inof.ReasonBFDDown))
	var journal []toldEntry
	for _, n := range out.Notices {
		journal = append(journal, toldEntry{Host: n.Host, Target: n.Target, Active: n.State == inof.StateActive})
	}

	for _, c := range []struct {
		name string
		told map[netip.Addr][]inof.Device
		want []want
	}{
		{"with the journal", replayTold(saved, journal), []want{active("swp1", hostA, tgt1)}},
		{"from the state file alone", saved, nil},
	} {
		r := newEngine(t, nil)
		notices(t, c.name+": restore", r.Restore(published, c.told, nil, at(10)))
		notices(t, c.name+": the host's LLDPDU", r.Register(registration("swp1", hostA, at(0)), at(11)))
		notices(t, c.name+": the target back", r.Record(up), c.want...)
	}
}

// TestRestartReplaysToldJournal: an agent was killed after telling a host
// a target inactive and before its state file saved that (the journal
// holds the notice, the state file says "active"). Started again with the
// target healthy, it must tell the host the target is active; from the
// state file alone it believed the host knew.
func TestRestartReplaysToldJournal(t *testing.T) {
	dir, id, ports, tgt, hd := directPair(t, 120)
	opts := Options{Common: daemon.Common{StateDir: dir}}

	// What the killed agent had journalled after its last save.
	j, _, _, err := openToldJournal(opts.toldJournalFile(), 0)
	if err != nil {
		t.Fatal(err)
	}
	lost := PortNotice{Port: "p2", Notice: Notice{Host: hd.Addr, Target: tgt, State: inof.StateInactive, Reason: inof.ReasonLinkDown}}
	if err := j.record([]PortNotice{lost}); err != nil {
		t.Fatal(err)
	}
	j.close()

	near2, far2 := memPorts(id, ports...)
	h2 := newSimHost(t, far2["p2"], hd)
	s2 := runSwitch(t, bgp.NewFakeFabric(), netip.Addr{}, id, dir, nil, directOptions(ports...), near2)
	<-s2.agent.Ready()
	newSimHost(t, far2["p1"], tgt).refresh(120)
	h2.refresh(120)
	h2.waitFor("the host told the target is active again", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
}

// BenchmarkToldJournal measures journalling one batch of notices: one, and
// the 64 of a target that changed for 64 local hosts.
func BenchmarkToldJournal(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("notices=%d", n), func(b *testing.B) {
			j, _, _, err := openToldJournal(filepath.Join(b.TempDir(), "switch.told"), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer j.close()
			ns := make([]PortNotice, n)
			for i := range ns {
				ns[i] = PortNotice{Port: "swp1", Notice: Notice{Host: netip.AddrFrom4([4]byte{10, 1, byte(i / 250), byte(i%250 + 1)}),
					Target: tgt1, State: inof.StateInactive, Reason: inof.ReasonLinkDown}}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%1024 == 0 { // as the saves do
					gen, err := j.rotate()
					if err != nil {
						b.Fatal(err)
					}
					if err := releaseTold(j.path, gen); err != nil {
						b.Fatal(err)
					}
				}
				if err := j.record(ns); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
