package record

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/openinof/inof/inof"
)

func discoveryRec(sw inof.RouterID, eps ...string) *Discovery {
	d := &Discovery{Switch: sw, Port: 8009}
	for _, e := range eps {
		d.Endpoints = append(d.Endpoints, netip.MustParsePrefix(e))
	}
	d.Endpoints = SortEndpoints(d.Endpoints)
	return d
}

func TestDiscoveryRecordRoundTrip(t *testing.T) {
	for _, d := range []*Discovery{
		discoveryRec(0x0a000001),
		discoveryRec(0x0a000001, "192.0.2.1/24", "198.51.100.1/24", "fd00:1::1/64"),
	} {
		k, v, err := Encode(d, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(k, v)
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
	bad := map[string]*Discovery{
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
	k, v, err := Encode(good, 1)
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
		if _, err := Decode(k, val); !errors.Is(err, ErrMalformed) {
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
