package zones

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openinof/inof/inof"
)

const array1 = "nqn.2014-08.org.example:array1"

func loc(t *testing.T, s string) Location {
	t.Helper()
	l, err := ParseLocation(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestParseLocation(t *testing.T) {
	l := loc(t, " 10.0.0.11:Ethernet4 ")
	if l.Switch != inof.RouterID(0x0a00000b) || l.Port != "Ethernet4" || l.String() != "10.0.0.11:Ethernet4" {
		t.Fatalf("parsed %+v (%s)", l, l)
	}
	if l := loc(t, "10.0.0.11:eth0:1"); l.Port != "eth0:1" {
		t.Errorf("a port with a colon: %+v", l)
	}
	for _, bad := range []string{"", "eth3", "leaf1:eth3", "10.0.0.11:", "0.0.0.0:eth3", "10.0.0.11:eth 3",
		"10.0.0.11:" + strings.Repeat("e", MaxPortNameLen+1), "10.0.0.11:eth\x1b[2J"} {
		if _, err := ParseLocation(bad); !errors.Is(err, ErrPin) {
			t.Errorf("ParseLocation(%q) = %v, want ErrPin", bad, err)
		}
	}
}

func TestPinValidate(t *testing.T) {
	a, b := loc(t, "10.0.0.12:eth3"), loc(t, "10.0.0.11:eth3")
	p, err := NewPin(array1, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.At, []Location{b, a}) {
		t.Errorf("not sorted: %v", p.At)
	}
	many := make([]Location, MaxPinPorts+1)
	for i := range many {
		many[i] = Location{Switch: inof.RouterID(i + 1), Port: "eth0"}
	}
	for name, c := range map[string]struct {
		nqn  string
		at   []Location
		want string
	}{
		"no port":   {array1, nil, "no switch port"},
		"duplicate": {array1, []Location{a, a}, "already exists"},
		"bad nqn":   {"iqn.2001-04.com.example:x", []Location{a}, "iSCSI"},
		"too many":  {array1, many, "at most"},
		"bad port":  {array1, []Location{{Switch: 1, Port: ""}}, "port"},
	} {
		if _, err := NewPin(c.nqn, c.at...); !errors.Is(err, ErrPin) && !errors.Is(err, ErrDuplicate) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.want)
		}
	}
	cfg := NewConfig(DefaultSettings())
	cfg.Pins["nqn.2014-08.org.example:other"] = p
	if err := cfg.Validate(); !errors.Is(err, ErrPin) {
		t.Errorf("a pin under another NQN: %v", err)
	}
}

func TestJudge(t *testing.T) {
	cfg := NewConfig(DefaultSettings())
	p, _ := NewPin(array1, loc(t, "10.0.0.11:eth3"), loc(t, "10.0.0.12:eth3"))
	cfg.Pins[array1] = p
	dev := func(nqn string) inof.Device { return inof.Device{NQN: nqn, Role: inof.RoleTarget} }
	rep := func(nqn string, sw inof.RouterID, port string) inof.Report {
		return inof.Report{Device: dev(nqn), Switch: sw, AccessPort: port}
	}
	const leaf1, leaf2, leaf3 = inof.RouterID(0x0a00000b), inof.RouterID(0x0a00000c), inof.RouterID(0x0a00000d)
	for _, c := range []struct {
		r       inof.Report
		refused bool
	}{
		{rep(array1, leaf1, "eth3"), false},
		{rep(array1, leaf2, "eth3"), false},
		{rep(array1, leaf1, "eth4"), true}, // another port of a pinned switch
		{rep(array1, leaf3, "eth3"), true}, // the pinned port's name on another switch
		{rep("nqn.2014-08.org.example:array2", leaf3, "eth9"), false},
		{rep("", leaf3, "eth9"), false},
	} {
		if got := cfg.Refuses(c.r); got != c.refused {
			t.Errorf("%s on %s:%s: refused %v, want %v (%s)", c.r.Device.NQN, c.r.Switch, c.r.AccessPort, got, c.refused,
				cfg.Judge(c.r.Device, c.r.Switch, c.r.AccessPort))
		}
	}
	if got := cfg.Judge(dev(array1), leaf3, "eth3").String(); !strings.Contains(got, "claimed on 10.0.0.13:eth3, pinned to 10.0.0.11:eth3, 10.0.0.12:eth3") {
		t.Errorf("claim text %q", got)
	}
}

func TestPinRecordCodec(t *testing.T) {
	at := []Location{loc(t, "10.0.0.11:eth3"), loc(t, "10.0.0.12:Ethernet12")}
	for _, r := range []Record{
		{Key: Key{KindPin, array1}, Version: Version{Gen: 7, RouterID: 1}, At: at},
		{Key: Key{KindPin, array1}, Version: Version{Gen: 8, RouterID: 2}, Deleted: true},
	} {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != recordVersionPin {
			t.Errorf("a pin record of version %d", b[0])
		}
		var got Record
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("store round trip\n got %+v\nwant %+v", got, r)
		}
		parts, err := r.Parts(MinPartPayload + 64)
		if err != nil || len(parts) != 1 {
			t.Fatalf("parts: %v, %v", parts, err)
		}
		got, ok, err := NewAssembler(0).Add(r.Key, 0, r.Version, r.Deleted, parts[0].Payload)
		if err != nil || !ok || !reflect.DeepEqual(got, r) {
			t.Fatalf("parts round trip: %+v %v %v", got, ok, err)
		}
		b[0] = recordVersion // a pin needs the version that knows pins
		if err := got.UnmarshalBinary(b); !errors.Is(err, ErrRecord) {
			t.Errorf("a pin record of version 1: %v", err)
		}
	}
	// Version 1 records keep their bytes.
	z := Record{Key: Key{KindZone, "web"}, Version: Version{Gen: 1, RouterID: 1}, Members: []Member{MustParseMember(array1)}}
	if b, _ := z.MarshalBinary(); b[0] != recordVersion {
		t.Errorf("a zone record of version %d", b[0])
	}
	bad := []Record{
		{Key: Key{KindPin, "not-an-nqn"}, At: at},
		{Key: Key{KindPin, array1}},
		{Key: Key{KindPin, array1}, At: []Location{at[0], at[0]}},
	}
	for _, r := range bad {
		b, err := r.MarshalBinary()
		if err != nil {
			continue
		}
		var got Record
		if err := got.UnmarshalBinary(b); !errors.Is(err, ErrRecord) {
			t.Errorf("%+v decoded: %v", r, err)
		}
		if _, err := r.Parts(MinPartPayload); err == nil {
			t.Errorf("%+v split into parts", r)
		}
	}
}

func TestStorePins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zones.db")
	s := openStore(t, path, 1)
	a, b := loc(t, "10.0.0.11:eth3"), loc(t, "10.0.0.12:eth3")
	tx := s.Begin()
	if err := tx.SetPin(array1, b, a); err != nil {
		t.Fatal(err)
	}
	if err := tx.SetPin(array1); !errors.Is(err, ErrPin) {
		t.Errorf("a pin without ports: %v", err)
	}
	rs, err := tx.Commit()
	if err != nil || len(rs) != 1 || rs[0].Kind != KindPin {
		t.Fatalf("commit: %+v, %v", rs, err)
	}
	if e, _ := tx.Entry(); !strings.Contains(e.Summary, "pin "+array1+": 2 switch ports") {
		t.Errorf("journal summary %q", e.Summary)
	}
	s.Close()
	s = openStore(t, path, 1)
	if got := s.Config().Pins[array1]; got == nil || !reflect.DeepEqual(got.At, []Location{a, b}) {
		t.Fatalf("reopened: %+v", got)
	}
	if got := s.Pins()[array1]; got == nil || !reflect.DeepEqual(got.At, []Location{a, b}) {
		t.Fatalf("Pins after reopening: %+v", got)
	}
	tx = s.Begin()
	if err := tx.RemovePin("nqn.2014-08.org.example:none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing a pin that is not there: %v", err)
	}
	if err := tx.RemovePin(array1); err != nil {
		t.Fatal(err)
	}
	if rs, err := tx.Commit(); err != nil || len(rs) != 1 || !rs[0].Deleted {
		t.Fatalf("remove: %+v, %v", rs, err)
	}
	if len(s.Config().Pins) != 0 || len(s.Pins()) != 0 {
		t.Errorf("pins left: %v, %v", s.Config().Pins, s.Pins())
	}
}

// TestStoreBeforePinsLoads opens a store file written by the release
// before pins (testdata/store-before-pins.db: an alias, a zone, a zone's
// tombstone and settings) and adds a pin to it.
func TestStoreBeforePinsLoads(t *testing.T) {
	src, err := os.Open("testdata/store-before-pins.db")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "zones.db")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	s := openStore(t, path, 1)
	c := s.Config()
	if c.Settings != (Settings{DefaultZoneEnabled: true}) || c.Zones["web"] == nil || c.Aliases["arrays"] == nil || len(c.Pins) != 0 {
		t.Fatalf("old store: %+v", c)
	}
	if n := len(s.Records()); n != 4 {
		t.Errorf("%d records, want 4 (settings, alias, zone, tombstone)", n)
	}
	tx := s.Begin()
	if err := tx.SetPin(array1, loc(t, "10.0.0.11:eth3")); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if c := s.Config(); c.Pins[array1] == nil || len(c.Zones["web"].Members) != 2 {
		t.Errorf("after a pin: %+v", c)
	}
}

func TestPinsChanged(t *testing.T) {
	a, b := NewConfig(DefaultSettings()), NewConfig(DefaultSettings())
	p1, _ := NewPin(array1, loc(t, "10.0.0.11:eth3"))
	p2, _ := NewPin(array1, loc(t, "10.0.0.11:eth4"))
	const other = "nqn.2014-08.org.example:array2"
	po, _ := NewPin(other, loc(t, "10.0.0.11:eth5"))
	a.Pins[array1], a.Pins[other] = p1, po
	b.Pins[array1] = p2
	if got := PinsChanged(a, b); !reflect.DeepEqual(got, []string{array1, other}) {
		t.Errorf("PinsChanged = %v", got)
	}
	if got := PinsChanged(a, a.Clone()); len(got) != 0 {
		t.Errorf("a clone changed %v", got)
	}
}

// pinRecords are seeds for the fuzz targets: a pin and its tombstone.
func pinRecords() []Record {
	at := []Location{{Switch: 0x0a00000b, Port: "eth3"}, {Switch: 0x0a00000c, Port: "Ethernet12"}}
	return []Record{
		{Key: Key{KindPin, array1}, Version: Version{Gen: 7, RouterID: 1}, At: at},
		{Key: Key{KindPin, array1}, Version: Version{Gen: 8, RouterID: 1}, Deleted: true},
	}
}
