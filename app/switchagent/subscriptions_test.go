package switchagent

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

func TestSubscriptionsTable(t *testing.T) {
	all := []string{"blue", "red"}
	hard := zones.Settings{DefaultZoneEnabled: true, HardZoning: true}
	soft := zones.Settings{DefaultZoneEnabled: true}
	off := zones.Settings{HardZoning: true}
	for _, tc := range []struct {
		name  string
		local [][]string
		s     zones.Settings
		want  []string
	}{
		{"hard, zoned", [][]string{{"red"}}, hard, []string{"red"}},
		{"hard, unzoned", [][]string{nil}, hard, []string{"default"}},
		{"soft, zoned sees the default zone", [][]string{{"red"}}, soft, []string{"default", "red"}},
		{"soft, unzoned sees every zone", [][]string{nil}, soft, []string{"blue", "default", "red"}},
		{"default zone off, unzoned sees nothing", [][]string{nil, {"blue"}}, off, []string{"blue"}},
		{"no local devices", nil, soft, []string{}},
	} {
		if got := Subscriptions(tc.local, tc.s, all); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSubscriptionsCoverVisibility checks the rule against the zoning rule
// itself: whenever a local device may see a remote one (zones.Visible), the
// remote device's record carries a zone the local switch subscribed to.
func TestSubscriptionsCoverVisibility(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c"}
	for seed := 0; seed < 300; seed++ {
		cfg := zones.NewConfig(zones.Settings{DefaultZoneEnabled: rng.IntN(2) == 0, HardZoning: rng.IntN(2) == 0})
		var devs []inof.Device
		for i := 0; i < 8; i++ {
			devs = append(devs, inof.Device{
				Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), Role: inof.Role(1 + rng.IntN(3)), Protocol: inof.ProtocolTCP})
		}
		for _, z := range names {
			zone := &zones.Zone{Name: z}
			for _, d := range devs {
				if rng.IntN(4) == 0 {
					zone.Members = append(zone.Members, zones.Member{Kind: zones.MemberAddr, Addr: d.Addr})
				}
			}
			if len(zone.Members) > 0 {
				cfg.Zones[z] = zone
			}
		}
		zonesOf := func(d inof.Device) []string {
			var out []string
			for _, z := range cfg.ZoneNames() {
				if slices.ContainsFunc(cfg.Zones[z].Members, func(m zones.Member) bool { return m.Addr == d.Addr }) {
					out = append(out, z)
				}
			}
			return out
		}
		local, remote := devs[:3], devs[3:]
		var localZones [][]string
		for _, d := range local {
			localZones = append(localZones, zonesOf(d))
		}
		subs := Subscriptions(localZones, cfg.Settings, cfg.ZoneNames())
		for _, l := range local {
			for _, r := range remote {
				if !zones.Visible(cfg, l, r) {
					continue
				}
				tags := Tags(zonesOf(r))
				if !slices.ContainsFunc(tags, func(z string) bool { return slices.Contains(subs, z) }) {
					t.Fatalf("seed %d: %v may see %v (tags %v) but the switch subscribes to %v only (settings %+v)",
						seed, l, r, tags, subs, cfg.Settings)
				}
			}
		}
	}
}

// TestTallyIncremental drives one tally through random registrations,
// zone moves and departures and checks after each that its set is the one
// computed afresh from the active devices, and that it reports "unchanged"
// only when the set did not change.
func TestTallyIncremental(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all := []string{"a", "b", "c", "d"}
	for seed := 0; seed < 200; seed++ {
		s := zones.Settings{DefaultZoneEnabled: rng.IntN(2) == 0, HardZoning: rng.IntN(2) == 0}
		tl := newTally()
		active := map[netip.Addr][]string{}
		var last []string
		for step := 0; step < 60; step++ {
			addr := netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + rng.IntN(6))})
			var zs []string
			for _, z := range all {
				if rng.IntN(3) == 0 {
					zs = append(zs, z)
				}
			}
			on := rng.IntN(3) != 0
			tl.set(addr, zs, on)
			if on {
				active[addr] = zs
			} else {
				delete(active, addr)
			}
			var local [][]string
			for _, zs := range active {
				local = append(local, zs)
			}
			want := Subscriptions(local, s, all)
			got, changed := tl.subscriptions(s, func() []string { return all })
			if !changed {
				got = last
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d (%+v): tally gives %v (changed %v), afresh %v", seed, step, s, got, changed, want)
			}
			last = got
		}
	}
}
