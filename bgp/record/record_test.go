package record

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

func TestRecordRoundTrip(t *testing.T) {
	recs := []Record{
		device(0x0a000001, 7),
		&Device{Report: inof.Report{Switch: 9, Device: inof.Device{Addr: netip.MustParseAddr("fd00::7"), Role: inof.RoleBoth,
			Protocol: inof.ProtocolRoCE}, Status: inof.Status{State: inof.StateInactive, Reason: inof.ReasonLinkDown, Changed: time.UnixMilli(6)}, Since: time.UnixMilli(5)},
			Epoch: 1 << 50},
		&Config{Reflector: 1, Kind: 2, Name: "prod", Gen: 1 << 40, Writer: 2, Payload: []byte{1, 2, 3}},
		&Config{Reflector: 3, Kind: 1, Deleted: true, Gen: 9, Writer: 3},
		&Config{Reflector: 3, Kind: 2, Name: "big", Part: 7, Gen: 9, Writer: 3, Payload: []byte{4}},
	}
	for _, r := range recs {
		k, v, err := Encode(r, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(k, v)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if c, ok := got.(*Config); ok && len(c.Payload) == 0 {
			c.Payload = nil
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, r)
		}
	}
}

func TestRecordMalformed(t *testing.T) {
	good := device(1, 1)
	k, v, _ := Encode(good, 0)
	mut := func(b []byte, i int, x byte) []byte { b = bytes.Clone(b); b[i] = x; return b }
	cases := []struct {
		name string
		k, v []byte
	}{
		{"empty", nil, nil},
		{"value version", k, mut(v, 0, 9)},
		{"type mismatch", k, mut(v, 1, 2)},
		{"unknown type", mut(k, 0, 7), mut(v, 1, 7)},
		{"role", k, mut(v, 2, 0)},
		{"protocol", k, mut(v, 3, 9)},
		{"state", k, mut(v, 6, 5)},
		{"reason", k, mut(v, 7, 99)},
		{"truncated", k, v[:len(v)-3]},
		{"trailing", k, append(bytes.Clone(v), 0)},
		{"family", mut(k, 5, 5), v},
		{"key trailing", append(bytes.Clone(k), 1), v},
	}
	for _, c := range cases {
		if _, err := Decode(c.k, c.v); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestEncodeTooLarge(t *testing.T) {
	c := &Config{Reflector: 1, Kind: 2, Name: "z", Payload: make([]byte, 3000)}
	if _, _, err := Encode(c, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Encode(c, 200); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("3000 bytes and 200 route targets: %v", err)
	}
	long := device(1, 1)
	long.Device.NQN = string(make([]byte, 300))
	if _, _, err := Encode(long, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("long NQN: %v", err)
	}
}

func TestZoneRT(t *testing.T) {
	a, b := ZoneRT(65000, "prod"), ZoneRT(65000, "prod")
	if a != b || a == ZoneRT(65000, "dev") || a.Local == 0 || a == ConfigRT(65000) {
		t.Fatalf("zone RTs %v %v", a, ZoneRT(65000, "dev"))
	}
	if rt := ZoneRT(4200000000, "prod"); rt.Local > 0xFFFF || rt.Local == 0 {
		t.Fatalf("four-octet AS RT %v", rt)
	}
	// No zone takes a reserved value: look for names whose 16-bit hash is
	// the configuration's or the peering one (a four-octet AS keeps 16
	// bits, so such names are found among a few hundred thousand).
	const asn = 4200000000
	found := map[uint32]bool{}
	for i := 0; len(found) < 2 && i < 1<<22; i++ {
		name := fmt.Sprintf("z%d", i)
		h := fnv.New32a()
		h.Write([]byte(name))
		v := h.Sum32() & 0xFFFF
		if v != configRTLocal && v != peeringRTLocal {
			continue
		}
		found[v] = true
		if rt := ZoneRT(asn, name); rt == ConfigRT(asn) || rt == PeeringRT(asn) {
			t.Fatalf("zone %q got a reserved route target %v", name, rt)
		}
	}
	if len(found) < 2 {
		t.Fatal("no name hashing to a reserved value found")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range []Record{device(1, 1), &Config{Reflector: 1, Kind: 2, Name: "z", Payload: []byte("x")},
		discoveryRec(1, "192.0.2.1/24", "fd00::1/64")} {
		k, v, _ := Encode(r, 0)
		f.Add(k, v)
	}
	f.Fuzz(func(t *testing.T, k, v []byte) {
		r, err := Decode(k, v)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		k2, v2, err := Encode(r, 0)
		if err != nil {
			// Encoder and decoder share the validation: what decodes
			// encodes, unless key and value together pass the size limit.
			if !errors.Is(err, ErrTooLarge) || len(k)+len(v) <= MaxSize {
				t.Fatalf("decoded record refused by the encoder: %v", err)
			}
			return
		}
		if !bytes.Equal(k2, k) {
			t.Fatalf("key not canonical: %x vs %x", k2, k)
		}
		again, err := Decode(k2, v2)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, r)
		}
	})
}

// TestHostileTextRefused: a device record (alone or in a set) whose NQN
// could add options to a host's connect, is not UTF-8 or carries control
// characters, or whose access port carries them, is refused by the
// decoder as malformed, and the encoder refuses to write one.
func TestHostileTextRefused(t *testing.T) {
	for _, bad := range []struct{ nqn, port string }{
		{nqn: "nqn.2014-08.org.example:t1,nr_io_queues=1"},
		{nqn: "nqn.2014-08.org.example:\xff\xfe"},
		{nqn: "nqn.2014-08.org.example:\x1b[2J"},
		{port: "swp1\x1b]0;x\x07"},
	} {
		d := device(1, 1)
		if bad.nqn != "" {
			d.Device.NQN = bad.nqn
		}
		if bad.port != "" {
			d.AccessPort = bad.port
		}
		if _, _, err := Encode(d, 0); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q %q: Encode: %v, want ErrMalformed", bad.nqn, bad.port, err)
		}
		// The value as an older release would have written it.
		v := d.appendBody([]byte{valueVersion, byte(TypeDevice)})
		if _, err := Decode(d.Key(), v); !errors.Is(err, ErrMalformed) || !errors.Is(err, inof.ErrText) {
			t.Errorf("%q %q: Decode: %v, want ErrMalformed and inof.ErrText", bad.nqn, bad.port, err)
		}
	}
}
