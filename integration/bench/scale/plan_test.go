package scale

import (
	"testing"

	"github.com/openinof/inof/zones"
)

// TestPlanZones: every device of a plan is in exactly the zone whose route
// target its record carries, and addresses are distinct.
func TestPlanZones(t *testing.T) {
	for _, p := range []Plan{Small.Convergence, Small.Sessions, {Devices: 1000, Zones: 7, Switches: 3}} {
		cfg := zones.NewConfig(zones.Settings{DefaultZoneEnabled: true})
		for z := range p.Zones {
			cfg.Zones[ZoneName(z)] = &zones.Zone{Name: ZoneName(z), Members: p.ZoneMembers(z)}
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i := range p.Devices {
			a := p.addr(i)
			if seen[a.String()] {
				t.Fatalf("%+v: address %s twice", p, a)
			}
			seen[a.String()] = true
			var in []string
			for z := range p.Zones {
				if m := p.ZoneMembers(z)[0]; m.Kind == zones.MemberPrefix && m.Prefix.Contains(a) {
					in = append(in, ZoneName(z))
				}
			}
			if want := ZoneName(i / p.perZone()); len(in) != 1 || in[0] != want {
				t.Fatalf("%+v: device %d (%s) in %v, want [%s]", p, i, a, in, want)
			}
		}
		n := 0
		for s := range p.Switches {
			recs, err := p.SwitchRecords(s)
			if err != nil {
				t.Fatal(err)
			}
			n += len(recs)
		}
		if n != p.Devices {
			t.Fatalf("%+v: %d records", p, n)
		}
	}
}
