package bgp

import (
	"net/netip"
	"testing"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/record"
)

// watchedPath is a device record as a client's watch gets it from GoBGP:
// the attributes a switch sends plus those its reflector adds.
func watchedPath(tb testing.TB) *api.Path {
	tb.Helper()
	key, value, err := record.Encode(wireDevice(), 1)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := opaquePath(key, value, []record.RouteTarget{record.ZoneRT(65000, "z0007")})
	if err != nil {
		tb.Fatal(err)
	}
	lp, err1 := anypb.New(&api.LocalPrefAttribute{LocalPref: 100})
	orig, err2 := anypb.New(&api.OriginatorIdAttribute{Id: "127.1.0.1"})
	cl, err3 := anypb.New(&api.ClusterListAttribute{Ids: []string{"127.0.0.1"}})
	if err1 != nil || err2 != nil || err3 != nil {
		tb.Fatal(err1, err2, err3)
	}
	p.Pattrs = append(p.Pattrs, lp, orig, cl)
	p.NeighborIp = "127.0.0.1"
	return p
}

// BenchmarkRecordEvent is the speaker's work per record a watch receives:
// reading GoBGP's protobuf path and decoding the record.
func BenchmarkRecordEvent(b *testing.B) {
	g, err := NewGoBGP(Options{Role: RoleClient, ASN: 65000, RouterID: netip.MustParseAddr("127.2.0.1")})
	if err != nil {
		b.Fatal(err)
	}
	p := watchedPath(b)
	b.ReportAllocs()
	for b.Loop() {
		if ev, ok := g.recordEvent(p, nil); !ok || ev.Record == nil || len(ev.RouteTargets) != 1 {
			b.Fatalf("%+v %v", ev, ok)
		}
	}
}
