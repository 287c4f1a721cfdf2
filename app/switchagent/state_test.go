package switchagent

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
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
		lr := LocalRecord{Device: d, Port: fmt.Sprintf("eth%d", i/128), Status: st, Since: now}
		s.Local = append(s.Local, lr)
		s.Published = append(s.Published, table.PublishedDevice{Record: record.Device{Report: inof.Report{Switch: 1, Device: d, Status: st},
			Epoch: uint64(i), AccessPort: lr.Port, Since: now}, RouteTargets: []record.RouteTarget{{}}})
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
