package bgp

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// protoRouteTargets is the reference: the route targets of a path read
// with proto.Unmarshal.
func protoRouteTargets(t *testing.T, p *api.Path) []record.RouteTarget {
	t.Helper()
	var out []record.RouteTarget
	for _, a := range p.Pattrs {
		var ec api.ExtendedCommunitiesAttribute
		if !a.MessageIs(&ec) {
			continue
		}
		if err := a.UnmarshalTo(&ec); err != nil {
			t.Fatal(err)
		}
		for _, c := range ec.Communities {
			var two api.TwoOctetAsSpecificExtended
			var four api.FourOctetAsSpecificExtended
			switch {
			case c.MessageIs(&two) && c.UnmarshalTo(&two) == nil && two.SubType == 0x02:
				out = append(out, record.RouteTarget{Global: two.Asn, Local: two.LocalAdmin})
			case c.MessageIs(&four) && c.UnmarshalTo(&four) == nil && four.SubType == 0x02:
				out = append(out, record.RouteTarget{Global: four.Asn, Local: four.LocalAdmin})
			}
		}
	}
	return out
}

// wireDevice is the device record the path codec's tests and benchmarks
// carry (an active NVMe/TCP target of switch 127.1.0.1).
func wireDevice() *record.Device {
	return &record.Device{Report: inof.Report{Switch: 0x7f010001, Device: inof.Device{Addr: netip.MustParseAddr("10.0.0.8"),
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: "nqn.2014-08.org.example:t7"},
		Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(2000)}, AccessPort: "swp1", Since: time.UnixMilli(1000)}}
}

func TestPathWireMatchesProto(t *testing.T) {
	rts := []record.RouteTarget{record.ZoneRT(65000, "a"), record.ConfigRT(65000), {Global: 4200000000, Local: 7}, {Global: 1, Local: 0}}
	key, value, err := record.Encode(wireDevice(), len(rts))
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(rts) + 1 {
		p, err := opaquePath(key, value, rts[:n])
		if err != nil {
			t.Fatal(err)
		}
		// Communities that are not route targets are skipped by both.
		other, err := anypb.New(&api.TwoOctetAsSpecificExtended{IsTransitive: true, SubType: 0x03, Asn: 9, LocalAdmin: 9})
		if err != nil {
			t.Fatal(err)
		}
		opaque, err := anypb.New(&api.OpaqueExtended{IsTransitive: true, Value: []byte{1, 2, 3, 4, 5, 6, 7}})
		if err != nil {
			t.Fatal(err)
		}
		ec, err := anypb.New(&api.ExtendedCommunitiesAttribute{Communities: []*anypb.Any{other, opaque}})
		if err != nil {
			t.Fatal(err)
		}
		p.Pattrs = append(p.Pattrs, ec)

		k, v, ok := opaqueNLRI(p.Nlri)
		if !ok || !bytes.Equal(k, key) || !bytes.Equal(v, value) {
			t.Fatalf("opaqueNLRI = %x, %x, %v; want %x, %x", k, v, ok, key, value)
		}
		got, want := pathRouteTargets(p), protoRouteTargets(t, p)
		if !slices.Equal(got, want) || len(got) != n {
			t.Fatalf("%d route targets: got %v, proto reads %v", n, got, want)
		}
	}
}

func TestPathWireRefusesOtherAndMalformed(t *testing.T) {
	rtc := rtcPath(65000, &record.RouteTarget{Global: 65000, Local: 1})
	if _, _, ok := opaqueNLRI(rtc.Nlri); ok {
		t.Fatal("an RT-constraint NLRI read as an opaque NLRI")
	}
	if _, _, ok := opaqueNLRI(nil); ok {
		t.Fatal("nil NLRI read")
	}
	p, err := opaquePath([]byte{1, 2, 3}, []byte{4, 5}, []record.RouteTarget{record.ZoneRT(65000, "z")})
	if err != nil {
		t.Fatal(err)
	}
	// Truncating the wire bytes anywhere must never panic; the NLRI is
	// then refused or read shorter, and route targets are dropped, never
	// invented.
	nlri := p.Nlri.Value
	for i := range len(nlri) {
		p.Nlri.Value = nlri[:i]
		if k, v, ok := opaqueNLRI(p.Nlri); ok && (len(k) > 3 || len(v) > 2) {
			t.Fatalf("truncated to %d bytes: read %x, %x", i, k, v)
		}
	}
	for ai, a := range p.Pattrs {
		full := a.Value
		for i := range len(full) {
			a.Value = full[:i]
			if rts := pathRouteTargets(p); len(rts) > 1 {
				t.Fatalf("attribute %d truncated to %d bytes: %v", ai, i, rts)
			}
		}
		a.Value = full
	}
}

func FuzzPathRouteTargets(f *testing.F) {
	p, err := opaquePath([]byte{1}, []byte{2}, []record.RouteTarget{record.ZoneRT(65000, "z"), {Global: 1 << 20, Local: 3}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.Pattrs[len(p.Pattrs)-1].Value)
	f.Fuzz(func(t *testing.T, b []byte) {
		a := &anypb.Any{TypeUrl: "type.googleapis.com/" + nameExtComms, Value: b}
		pathRouteTargets(&api.Path{Pattrs: []*anypb.Any{a}})
		opaqueNLRI(&anypb.Any{TypeUrl: "type.googleapis.com/" + nameOpaqueNLRI, Value: b})
	})
}
