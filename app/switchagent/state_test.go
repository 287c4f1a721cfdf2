package switchagent

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// BenchmarkSaveState measures one state file save of a switch carrying
// 2,048 devices (the churn benchmark's leaf).
func BenchmarkSaveState(b *testing.B) {
	now := time.Now()
	s := savedState{Saved: now, Told: map[netip.Addr][]inof.Device{}}
	for i := range 2048 {
		d := inof.Device{Addr: netip.AddrFrom4([4]byte{10, 200, byte(i / 128), byte(i%128 + 1)}), Role: inof.RoleTarget,
			Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:churn:%d", i)}
		st := inof.Status{State: inof.StateActive, Changed: now}
		lr := inof.Report{Switch: 1, Device: d, Status: st, AccessPort: fmt.Sprintf("eth%d", i/128), Since: now}
		s.Local = append(s.Local, lr)
		s.Published = append(s.Published, table.PublishedDevice{Record: record.Device{Report: lr, Epoch: uint64(i)},
			RouteTargets: []record.RouteTarget{{}}})
	}
	path := filepath.Join(b.TempDir(), "state.json")
	b.ReportAllocs()
	for b.Loop() {
		if err := saveState(path, s); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSaveSpacing(t *testing.T) {
	for _, tc := range []struct{ took, want time.Duration }{
		{0, minSaveSpacing},
		{5 * time.Millisecond, minSaveSpacing},
		{20 * time.Millisecond, 400 * time.Millisecond},
		{time.Second, maxSaveSpacing},
	} {
		if got := saveSpacing(tc.took); got != tc.want {
			t.Errorf("saveSpacing(%v) = %v, want %v", tc.took, got, tc.want)
		}
	}
}

// TestLoadStateBeforeCarrier: a state file written before the local
// records became the device carrier (inof.Report: "AccessPort" and
// "Switch", where the file has "Port" and no switch) loads, restores the
// same records under this switch, and saves and loads back unchanged.
func TestLoadStateBeforeCarrier(t *testing.T) {
	st, ok, err := loadState(filepath.Join("testdata", "state-before-carrier.json"))
	if err != nil || !ok {
		t.Fatalf("loading a file of the older format: ok %v, %v", ok, err)
	}
	since := time.UnixMilli(1764000000000 - 60000)
	want := map[string]string{"10.1.0.2": "swp3", "10.1.0.9": "swp4"}
	if len(st.Local) != len(want) {
		t.Fatalf("%d local records, want %d", len(st.Local), len(want))
	}
	for _, r := range st.Local {
		if r.AccessPort != want[r.Device.Addr.String()] || r.State != inof.StateActive || !r.Since.Equal(since) || r.Device.NQN == "" {
			t.Fatalf("local record %+v: access port, state, since or device lost", r)
		}
	}
	if p := st.Published[0].Record; p.AccessPort != "swp3" || p.Epoch != 7 || !p.Since.Equal(since) {
		t.Fatalf("published record %+v", p)
	}
	self := inof.MustParseRouterID("10.0.0.1")
	e, err := NewEngine(self, 0, zones.NewConfig(zones.Settings{DefaultZoneEnabled: true}))
	if err != nil {
		t.Fatal(err)
	}
	out := e.Restore(st.Local, st.Told, st.expiries(time.UnixMilli(1764000000000)), time.UnixMilli(1764000000000))
	if len(out.Publish) != 2 {
		t.Fatalf("%d records republished, want 2", len(out.Publish))
	}
	for _, p := range out.Publish {
		if p.Record.Switch != self || p.Record.AccessPort != want[p.Record.Device.Addr.String()] {
			t.Fatalf("republished %+v: want switch %s on its access port", p.Record, self)
		}
	}
	path := filepath.Join(t.TempDir(), "state.json")
	st.Local = e.Published()
	if err := saveState(path, st); err != nil {
		t.Fatal(err)
	}
	again, _, err := loadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(again.Local, st.Local, func(a, b inof.Report) bool {
		return a.Switch == b.Switch && a.Device == b.Device && a.AccessPort == b.AccessPort && a.Since.Equal(b.Since) &&
			a.State == b.State && a.Reason == b.Reason && a.Changed.Equal(b.Changed)
	}) {
		t.Fatalf("saved and loaded back: %+v, want %+v", again.Local, st.Local)
	}
}
