package switchagent

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// BenchmarkEngineRecord measures one remote target record (its state
// toggling, so every call changes something) at a switch with many local
// hosts: 100 zones, each local host in one, each target in one, so a
// target concerns a hundredth of the local hosts.
func BenchmarkEngineRecord(b *testing.B) {
	for _, hosts := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			const nZones = 100
			zs := map[string][]string{}
			for z := range nZones {
				zs[fmt.Sprintf("z%d", z)] = []string{fmt.Sprintf("10.%d.0.0/16", 100+z)}
			}
			e, err := NewEngine(self, 30*time.Second, zoned(zones.Settings{DefaultZoneEnabled: true, HardZoning: true}, zs))
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			for i := range hosts {
				h := inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(100 + i%nZones), byte(i / nZones >> 8), byte(i/nZones) + 1}),
					Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
				e.Register(registration(fmt.Sprintf("swp%d", i%48), h, now), now)
				e.ZoneQuery(h.Addr)
			}
			targets := make([]inof.Report, 1000)
			for i := range targets {
				d := inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(100 + i%nZones), 200, byte(i/nZones) + 1}),
					Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
				targets[i] = inof.Report{Switch: remote, Device: d, Status: inof.Status{State: inof.StateActive}}
				e.Record(targets[i])
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := &targets[i%len(targets)]
				if r.State == inof.StateActive {
					r.State, r.Reason = inof.StateInactive, inof.ReasonLinkDown
				} else {
					r.State, r.Reason = inof.StateActive, inof.ReasonNone
				}
				if out := e.Record(*r); len(out.Notices) == 0 {
					b.Fatal("no notice")
				}
				i++
			}
		})
	}
}
