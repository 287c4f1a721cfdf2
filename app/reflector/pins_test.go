package reflector

import (
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// The fabric view reports each device record that claims a pinned NQN on
// a port outside its pin once (an event, the counter), again only after
// the record went away or was allowed; allowed and unpinned claims are
// not reported.
func TestFabricViewJudgesPins(t *testing.T) {
	const nqn = "nqn.2014-08.org.example:array1"
	evs := &eventLog{}
	f := newFabricView(0, nil, evs, time.Now, slog.Default())
	pin, err := zones.NewPin(nqn, zones.Location{Switch: inof.MustParseRouterID("10.0.0.11"), Port: "eth3"})
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]*zones.Pin{nqn: pin}
	f.pins = func() map[string]*zones.Pin { return pins }
	change := func(sw, port, addr, nqn string, gone bool) table.DeviceChange {
		id := record.DeviceID{Switch: inof.MustParseRouterID(sw), Addr: netip.MustParseAddr(addr)}
		if gone {
			return table.DeviceChange{ID: id}
		}
		return table.DeviceChange{ID: id, Record: &record.Device{Report: inof.Report{Switch: id.Switch, AccessPort: port,
			Device: inof.Device{Addr: id.Addr, Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, NQN: nqn},
			Status: inof.Status{State: inof.StateActive}}}}
	}
	f.judge(change("10.0.0.11", "eth3", "10.0.1.1", nqn, false))                         // the pinned array
	f.judge(change("10.0.0.12", "eth9", "10.0.1.2", "nqn.2014-08.org.example:x", false)) // unpinned
	if n := f.refused.count.Load(); n != 0 || len(evs.of("pin", "10.0.1.1")) != 0 {
		t.Fatalf("allowed claims counted %d", n)
	}
	rogue := change("10.0.0.12", "eth3", "10.0.1.66", nqn, false)
	f.judge(rogue)
	f.judge(rogue) // a change of the same record: reported once
	if n := f.refused.count.Load(); n != 1 {
		t.Fatalf("refused %d times, want 1", n)
	}
	if ev := evs.of("pin", "10.0.1.66"); len(ev) != 1 || ev[0].Attributes["pinned"] != "10.0.0.11:eth3" || ev[0].Attributes["switch"] != "10.0.0.12" {
		t.Fatalf("events %+v", ev)
	}
	f.judge(change("10.0.0.12", "eth3", "10.0.1.66", nqn, true))
	f.judge(rogue)
	if n := f.refused.count.Load(); n != 2 {
		t.Errorf("a claim made again after it went: counted %d, want 2", n)
	}
}
