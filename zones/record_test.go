package zones

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

func (g gen) record() Record {
	k := Key{Kind: Kind(1 + g.r.IntN(3))}
	if k.Kind != KindSettings {
		k.Name = fmt.Sprintf("o%d", g.r.IntN(4))
	}
	r := Record{Key: k, Version: Version{Gen: uint64(g.r.IntN(5)), RouterID: inof.RouterID(1 + g.r.IntN(2))}}
	switch {
	case g.r.IntN(4) == 0:
		r.Deleted = true
	case k.Kind == KindSettings:
		r.Settings = Settings{DefaultZoneEnabled: g.r.IntN(2) == 0, HardZoning: g.r.IntN(2) == 0}
	default:
		r.Members = g.members(g.r.IntN(4), nil)
	}
	return r
}

func (g gen) recordSet() Records {
	rs := Records{}
	for range g.r.IntN(8) {
		rs.Apply(g.record())
	}
	return rs
}

func TestRecordRoundTrip(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(7, 7))}
	for range 500 {
		r := g.record()
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Record
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if len(got.Members) == 0 && len(r.Members) == 0 {
			got.Members, r.Members = nil, nil
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, r)
		}
	}
	for _, bad := range [][]byte{nil, {2}, {1, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 'z', 0, 1, 1, 4, 0, 0, 0, 0}} {
		var r Record
		if err := r.UnmarshalBinary(bad); !errors.Is(err, ErrRecord) {
			t.Errorf("%x: %v", bad, err)
		}
	}
}

// TestPropertyMerge: merge is commutative, associative and idempotent, so
// reflectors converge whatever order records arrive in.
func TestPropertyMerge(t *testing.T) {
	for seed := range uint64(500) {
		g := gen{rand.New(rand.NewPCG(seed, 3))}
		a, b, c := g.recordSet(), g.recordSet(), g.recordSet()
		if !reflect.DeepEqual(Merge(a, b), Merge(b, a)) {
			t.Fatalf("seed %d: not commutative", seed)
		}
		if !reflect.DeepEqual(Merge(Merge(a, b), c), Merge(a, Merge(b, c))) {
			t.Fatalf("seed %d: not associative", seed)
		}
		if !reflect.DeepEqual(Merge(a, a), Merge(a)) || !reflect.DeepEqual(Merge(Merge(a, b), b), Merge(a, b)) {
			t.Fatalf("seed %d: not idempotent", seed)
		}
		for k, r := range Merge(a, b, c) {
			for _, s := range []Records{a, b, c} {
				if o, ok := s[k]; ok && r.Version.Less(o.Version) {
					t.Fatalf("seed %d: merge kept %v over newer %v", seed, r.Version, o.Version)
				}
			}
		}
	}
}

func TestTombstoneAndPrune(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := Record{Key: Key{KindZone, "z"}, Version: Version{Gen: inof.GenerationAt(at), RouterID: 1}, Members: []Member{MustParseMember("10.0.0.1")}}
	del := Record{Key: Key{KindZone, "z"}, Version: Version{Gen: inof.GenerationAt(at.Add(time.Minute)), RouterID: 2}, Deleted: true}
	rs := Merge(Records{del.Key: del}, Records{old.Key: old})
	if _, live := rs.Config().Zones["z"]; live {
		t.Fatal("an old copy resurrected a deleted zone")
	}
	if n := rs.Prune(del.Time().Add(inof.TombstoneLifetime)); n != 0 {
		t.Fatal("pruned a tombstone within its lifetime")
	}
	if n := rs.Prune(del.Time().Add(inof.TombstoneLifetime + time.Millisecond)); n != 1 || len(rs) != 0 {
		t.Fatalf("pruned %d, left %d", n, len(rs))
	}
}

func FuzzRecord(f *testing.F) {
	g := gen{rand.New(rand.NewPCG(1, 1))}
	for range 20 {
		b, _ := g.record().MarshalBinary()
		f.Add(b)
	}
	for _, r := range pinRecords() {
		b, _ := r.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := r.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("error not wrapping ErrRecord: %v", err)
			}
			return
		}
		enc, err := r.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again Record
		if err := again.UnmarshalBinary(enc); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, r)
		}
	})
}
