package bgp

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/openinof/inof/inof"
)

func discoveryRec(sw inof.RouterID, eps ...string) *DiscoveryRecord {
	d := &DiscoveryRecord{Switch: sw, Port: 8009}
	for _, e := range eps {
		d.Endpoints = append(d.Endpoints, netip.MustParsePrefix(e))
	}
	d.Endpoints = SortEndpoints(d.Endpoints)
	return d
}

func TestDiscoveryRecordRoundTrip(t *testing.T) {
	for _, d := range []*DiscoveryRecord{
		discoveryRec(0x0a000001),
		discoveryRec(0x0a000001, "192.0.2.1/24", "198.51.100.1/24", "fd00:1::1/64"),
	} {
		k, v, err := EncodeRecord(d, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, d)
		}
	}
}

// TestDiscoveryRecordRefused: what a receiver refuses, the publisher
// refuses to encode, and a value edited on the wire is refused with
// ErrMalformed.
func TestDiscoveryRecordRefused(t *testing.T) {
	bad := map[string]*DiscoveryRecord{
		"no port":   {Switch: 1, Endpoints: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24")}},
		"unsorted":  {Switch: 1, Port: 8009, Endpoints: []netip.Prefix{netip.MustParsePrefix("192.0.2.9/24"), netip.MustParsePrefix("192.0.2.1/24")}},
		"repeated":  {Switch: 1, Port: 8009, Endpoints: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("192.0.2.1/24")}},
		"multicast": {Switch: 1, Port: 8009, Endpoints: []netip.Prefix{netip.MustParsePrefix("224.0.0.251/24")}},
		"mapped":    {Switch: 1, Port: 8009, Endpoints: []netip.Prefix{netip.MustParsePrefix("::ffff:192.0.2.1/120")}},
		"too many":  {Switch: 1, Port: 8009, Endpoints: make([]netip.Prefix, MaxDiscoveryEndpoints+1)},
	}
	for name, d := range bad {
		if _, err := d.MarshalValue(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: encoded (err %v)", name, err)
		}
	}
	good := discoveryRec(1, "192.0.2.1/24")
	k, v, err := EncodeRecord(good, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func([]byte) []byte{
		"prefix longer than the address": func(v []byte) []byte { v[len(v)-1] = 33; return v },
		"family 5":                       func(v []byte) []byte { v[5] = 5; return v },
		"truncated":                      func(v []byte) []byte { return v[:len(v)-2] },
		"trailing byte":                  func(v []byte) []byte { return append(v, 0) },
		"count beyond the value":         func(v []byte) []byte { v[4] = 2; return v },
	} {
		val := edit(append([]byte(nil), v...))
		if _, err := DecodeRecord(k, val); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decoded (err %v)", name, err)
		}
	}
}

func TestDiscoveryRecordContains(t *testing.T) {
	d := discoveryRec(1, "192.0.2.1/24", "192.0.2.129/25", "fd00:1::1/64")
	for addr, want := range map[string]string{
		"192.0.2.7":   "192.0.2.1",
		"192.0.2.200": "192.0.2.129", // the longest prefix
		"fd00:1::9":   "fd00:1::1",
		"203.0.113.1": "",
	} {
		got, ok := d.Contains(netip.MustParseAddr(addr))
		if want == "" {
			if ok {
				t.Errorf("%s: got %s, want none", addr, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("%s: got %s %v, want %s", addr, got, ok, want)
		}
	}
}

// TestDiscoveryRecordReachesSubscribersGoBGP: a discovery record reaches,
// through a real GoBGP reflector, the clients subscribed to DiscoveryRT or
// to every record, and no client subscribed to a zone only; the reflector
// takes it from its owner, and refuses one that names another switch.
func TestDiscoveryRecordReachesSubscribersGoBGP(t *testing.T) {
	ctx := context.Background()
	red := ZoneRT(testASN, "red")
	r, cs, _ := realStar(t, nil, []RouteTarget{DiscoveryRT}, []RouteTarget{red}, []RouteTarget{AnyRT})
	rx := newRecordView()
	if err := r.WatchReceived(ctx, rx.apply, TypeDiscovery); err != nil {
		t.Fatal(err)
	}
	d := discoveryRec(routerID(cs[0]), "192.0.2.1/24")
	if err := cs[0].Publish(ctx, d, DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	rx.waitFor(t, "the discovery record at the reflector", hasKey(d.Key()))
	origins := Origins{Role: RoleReflector, ASN: testASN}
	if got, _ := rx.get(d.Key()); origins.Check(got) != "" {
		t.Fatalf("the reflector refused its owner's discovery record: %s", origins.Check(got))
	}
	cs[1].view.waitFor(t, "the discovery record at the DiscoveryRT subscriber", hasKey(d.Key()))
	cs[3].view.waitFor(t, "the discovery record at the AnyRT subscriber", hasKey(d.Key()))
	if got, _ := cs[1].view.get(d.Key()); !reflect.DeepEqual(got.Record, d) || got.NextHop != routerID(cs[0]).Addr() {
		t.Fatalf("subscriber got %+v (next hop %s)", got.Record, got.NextHop)
	}
	marker := device(routerID(cs[0]), 1)
	if err := cs[0].Publish(ctx, marker, red); err != nil {
		t.Fatal(err)
	}
	cs[2].view.waitFor(t, "the device record at the zone subscriber", hasKey(marker.Key()))
	if cs[2].view.has(d.Key()) {
		t.Fatal("the discovery record reached a client subscribed to a zone only")
	}

	// Another client announcing the first one's controller is refused.
	forged := discoveryRec(routerID(cs[0]), "198.51.100.1/24")
	if err := cs[2].Publish(ctx, forged, DiscoveryRT); err != nil {
		t.Fatal(err)
	}
	rx.waitFor(t, "the forged discovery record at the reflector", func(m map[string]RecordEvent) bool {
		return m[string(forged.Key())].Source == cs[2].addr
	})
	if got, _ := rx.get(forged.Key()); origins.Check(got) != RefusedOtherSwitch {
		t.Fatalf("forged discovery record: check %q, want %q", origins.Check(got), RefusedOtherSwitch)
	}
}
