package table

// Helpers of the table tests over bgptest's speakers.

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

func discoveryRec(sw inof.RouterID, eps ...string) *record.Discovery {
	d := &record.Discovery{Switch: sw, Port: 8009}
	for _, e := range eps {
		d.Endpoints = append(d.Endpoints, netip.MustParsePrefix(e))
	}
	d.Endpoints = record.SortEndpoints(d.Endpoints)
	return d
}

// devNode is a fake speaker under test with a device table of what it
// has seen beside its record view.
type devNode struct {
	*bgptest.FakeNode
	dev *deviceView
}

// fakeStar is bgptest.FakeStar's clients, each with a device view.
func fakeStar(t testing.TB, clients map[string][]record.RouteTarget) map[string]*devNode {
	t.Helper()
	_, _, cs := bgptest.FakeStar(t, clients)
	out := map[string]*devNode{}
	for a, c := range cs {
		n := &devNode{FakeNode: c, dev: newDeviceView()}
		if err := c.WatchRecords(t.Context(), n.dev.apply); err != nil {
			t.Fatal(err)
		}
		out[a] = n
	}
	return out
}

// Both speakers replicate configuration.
var (
	_ ConfigSpeaker = (*bgp.GoBGP)(nil)
	_ ConfigSpeaker = (*bgp.FakeSpeaker)(nil)
)

// originated returns every part rep originates, sorted (a copy of them
// all: for tests only).
func originated(rep *ConfigReplicator) []record.Config {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	out := slices.Collect(rep.objects.all())
	sortConfig(out)
	return out
}
