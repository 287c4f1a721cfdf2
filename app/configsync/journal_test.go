package configsync

import (
	"errors"
	"fmt"
	"testing"

	"github.com/openinof/inof/zones"
)

func bigEntry(n int) zones.Entry {
	ms := make([]zones.Member, n)
	for i := range ms {
		ms[i] = zones.MustParseMember(fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	before := zones.Record{Key: zones.Key{Kind: zones.KindZone, Name: "big"}, Version: zones.Version{Gen: 5, RouterID: 1}, Members: ms}
	return zones.Entry{Version: zones.Version{Gen: 99, RouterID: 2}, Identity: "user:alice", Action: zones.ActionCommit,
		Writes: []zones.Write{{Key: before.Key, Base: before.Version, New: zones.Version{Gen: 98, RouterID: 2}, Before: &before}}}
}

func TestJournalParts(t *testing.T) {
	e := bigEntry(3000)
	recs, err := JournalRecords(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 {
		t.Fatalf("%d parts for a large entry", len(recs))
	}
	for _, r := range recs {
		if len(r.Payload) > PartPayload || KindOf(r).Owner() != OwnerJournal {
			t.Fatalf("part %d: %d bytes, owner %v", r.Part, len(r.Payload), KindOf(r).Owner())
		}
	}
	a := NewJournalAssembler(0)
	for i := len(recs) - 1; i > 0; i-- { // out of order, with a duplicate
		if _, ok, err := a.Add(recs[i]); ok || err != nil {
			t.Fatalf("part %d: %v %v", i, ok, err)
		}
	}
	if _, ok, _ := a.Add(recs[1]); ok {
		t.Fatal("duplicate completed")
	}
	got, ok, err := a.Add(recs[0])
	if !ok || err != nil || got.ID() != e.ID() || len(got.Writes[0].Before.Members) != 3000 {
		t.Fatalf("assembled: %v %v", ok, err)
	}
	// A forged part: wrong name for its version, a tampered chunk.
	bad := recs[0]
	bad.Gen++
	if _, _, err := a.Add(bad); !errors.Is(err, ErrJournalPart) {
		t.Fatalf("renamed part: %v", err)
	}
	one, _ := JournalRecords(zones.Entry{Version: zones.Version{Gen: 7, RouterID: 1}, Action: zones.ActionLossless})
	one[0].Payload[len(one[0].Payload)-2] ^= 1
	if _, _, err := a.Add(one[0]); !errors.Is(err, ErrJournalPart) {
		t.Fatalf("tampered part: %v", err)
	}
}

func TestJournalAssemblerBound(t *testing.T) {
	a := NewJournalAssembler(10_000)
	for g := range 20 {
		e := bigEntry(1500)
		e.Gen = uint64(100 + g)
		recs, _ := JournalRecords(e)
		if _, ok, _ := a.Add(recs[0]); ok {
			t.Fatal("one part completed a multi-part entry")
		}
	}
	if a.held > 10_000+PartPayload || a.Evicted() == 0 {
		t.Fatalf("held %d bytes, evicted %d", a.held, a.Evicted())
	}
}
