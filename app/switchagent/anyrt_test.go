package switchagent

import (
	"testing"

	"github.com/openinof/inof/zones"
)

// TestCoversEveryZone: the agent trades its per-zone memberships for the
// one AnyRT membership only when it wants the default zone and every
// custom zone, and there is at least one.
func TestCoversEveryZone(t *testing.T) {
	cfg := zones.NewConfig(zones.Settings{DefaultZoneEnabled: true})
	if coversEveryZone(cfg, []string{zones.DefaultZone}) {
		t.Fatal("no custom zone: the default zone's membership is enough")
	}
	for _, z := range []string{"a", "b"} {
		cfg.Zones[z] = &zones.Zone{Name: z}
	}
	for _, c := range []struct {
		want []string
		all  bool
	}{
		{[]string{zones.DefaultZone, "a", "b"}, true},
		{[]string{"a", zones.DefaultZone, "b", "c"}, true},
		{[]string{"a", "b"}, false},
		{[]string{zones.DefaultZone, "a"}, false},
		{nil, false},
	} {
		if got := coversEveryZone(cfg, c.want); got != c.all {
			t.Errorf("coversEveryZone(%v) = %v", c.want, got)
		}
	}
	if coversEveryZone(nil, []string{zones.DefaultZone, "a", "b"}) {
		t.Error("no configuration yet")
	}
	// Soft zoning with an unzoned local device wants every zone.
	want := Subscriptions([][]string{nil}, zones.Settings{DefaultZoneEnabled: true}, cfg.ZoneNames())
	if !coversEveryZone(cfg, want) {
		t.Errorf("an unzoned device with soft zoning wants %v", want)
	}
}
