package configsync

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

func bigZone(n int, gen uint64) zones.Record {
	r := zones.Record{Key: zones.Key{Kind: zones.KindZone, Name: "big"}, Version: zones.Version{Gen: gen, RouterID: 7}}
	for i := 0; i < n; i++ {
		r.Members = append(r.Members, zones.Member{Kind: zones.MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})})
	}
	return r
}

func TestRecordsFitAndReassemble(t *testing.T) {
	gen := inof.GenerationAt(inof.NewClock(nil).Now())
	want := bigZone(8000, gen)
	recs, err := Records(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 2 {
		t.Fatalf("8,000 members in %d record(s)", len(recs))
	}
	for _, c := range recs {
		c.Reflector = 1
		if _, _, err := record.Encode(&c, 1); err != nil {
			t.Fatalf("part %d does not fit a BGP record: %v", c.Part, err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	a := NewAssembler(0)
	var got zones.Record
	completed := 0
	for i, c := range append(recs, recs[:3]...) { // with duplicates
		r, ok, err := a.Add(c)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if ok {
			got = r
			completed++
			if i != len(recs)-1 {
				t.Fatalf("complete after %d of %d parts", i+1, len(recs))
			}
		}
	}
	if completed != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("completed %d times; members %d of %d, version %+v", completed, len(got.Members), len(want.Members), got.Version)
	}
}

func TestStaleAfterShrink(t *testing.T) {
	before, err := Records(bigZone(3000, 10<<16))
	if err != nil {
		t.Fatal(err)
	}
	after, err := Records(bigZone(10, 11<<16))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Records(zones.Record{Key: zones.Key{Kind: zones.KindZone, Name: "other"}, Version: zones.Version{Gen: 1}})
	stale := Stale(append(before, other...), after)
	if len(stale) != len(before)-1 {
		t.Fatalf("%d stale parts, want %d", len(stale), len(before)-1)
	}
	for i, o := range stale {
		if o.Name != "big" || o.Part != uint16(i+1) {
			t.Fatalf("stale %d = %+v", i, o)
		}
	}
}

// TestStaleSparesNewerParts: a part held of a version newer than the one
// being originated (adopted from a peer before its other parts, so not in
// the store yet) is not stale; one of an older version is. (Withdrawn as
// stale, the newer part was remembered as withdrawn and never originated
// again once its version was complete: a client lacked one reflector's
// copy, TestConcurrentCommitsConverge's rare failure.)
func TestStaleSparesNewerParts(t *testing.T) {
	stored, err := Records(bigZone(10, 11<<16))
	if err != nil {
		t.Fatal(err)
	}
	older, err := Records(bigZone(3000, 10<<16))
	if err != nil {
		t.Fatal(err)
	}
	newer, err := Records(bigZone(3000, 12<<16))
	if err != nil {
		t.Fatal(err)
	}
	if len(older) < 3 || len(newer) != len(older) || len(stored) != 1 {
		t.Fatalf("parts: older %d, newer %d, stored %d", len(older), len(newer), len(stored))
	}
	// Held: part 1 of the newer version (adopted, the rest still on its
	// way), part 2 of the older one.
	held := []record.Config{stored[0], newer[1], older[2]}
	stale := Stale(held, stored)
	if len(stale) != 1 || stale[0].Part != 2 || stale[0].Gen != older[2].Gen {
		t.Fatalf("stale %+v, want only part 2 of the older version", stale)
	}
}

func TestAssemblerIgnoresOtherKindsAndRejectsGarbage(t *testing.T) {
	a := NewAssembler(0)
	if _, ok, err := a.Add(record.Config{Kind: 200, Name: "profile", Payload: []byte("x")}); ok || err != nil {
		t.Fatalf("foreign kind: ok %v err %v", ok, err)
	}
	_, ok, err := a.Add(record.Config{Reflector: 0x0a000001, Kind: uint8(zones.KindZone), Name: "z", Payload: []byte{9, 9}})
	if ok || err == nil {
		t.Fatalf("garbage payload: ok %v err %v", ok, err)
	}
	if want := "10.0.0.1"; !strings.Contains(fmt.Sprint(err), want) {
		t.Fatalf("error %q does not name the reflector %s", err, want)
	}
}

// TestPinFitsOneRecord: the largest pin (the longest NQN, MaxPinPorts ports
// of the longest names) is one BGP record and reassembles as it was.
func TestPinFitsOneRecord(t *testing.T) {
	nqn := "nqn.2014-08.org.example:" + strings.Repeat("a", inof.MaxNQNLen-len("nqn.2014-08.org.example:"))
	var at []zones.Location
	for i := range zones.MaxPinPorts {
		at = append(at, zones.Location{Switch: inof.RouterID(i + 1), Port: strings.Repeat("p", zones.MaxPortNameLen)})
	}
	p, err := zones.NewPin(nqn, at...)
	if err != nil {
		t.Fatal(err)
	}
	want := zones.Record{Key: zones.Key{Kind: zones.KindPin, Name: nqn},
		Version: zones.Version{Gen: inof.GenerationAt(inof.NewClock(nil).Now()), RouterID: 7}, At: p.At}
	recs, err := Records(want)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	recs[0].Reflector = 1
	if _, _, err := record.Encode(&recs[0], 1); err != nil {
		t.Fatalf("does not fit a BGP record: %v", err)
	}
	got, ok, err := NewAssembler(0).Add(recs[0])
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("reassembled %+v, %v, %v", got, ok, err)
	}
	if KindOf(recs[0]).Owner() != OwnerZoneStore || KindOf(recs[0]).String() != "pin" {
		t.Errorf("kind %s owned by %d", KindOf(recs[0]), KindOf(recs[0]).Owner())
	}
}
