package zones

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// maxPayload is about what the bgp envelope leaves of a 3,900-byte record.
const maxPayload = 3700

func ipv4Members(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{Kind: MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next()}
	}
	return ms
}

func nqnMembers(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		name := fmt.Sprintf("nqn.2014-08.org.example:array-%06d-", i)
		ms[i] = Member{Kind: MemberNQN, Name: name + strings.Repeat("x", MaxNQNLen-len(name))}
	}
	return ms
}

// TestStoreCommitsLargeZones: zones of 8,000 IPv4 members and of 8,000
// NQNs of the longest length commit, and every committed record splits into
// parts that fit the payload limit. Before, a 700-member zone committed
// but its single record (4,221 bytes) could not replicate.
func TestStoreCommitsLargeZones(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "z.db"), 1)
	tx := s.Begin()
	for name, ms := range map[string][]Member{"v4": ipv4Members(8000), "nqn": nqnMembers(8000), "small": ipv4Members(700)} {
		if err := tx.CreateZone(name, ms...); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		parts, err := r.Parts(maxPayload)
		if err != nil {
			t.Fatalf("%s: %v", r.Key, err)
		}
		for _, p := range parts {
			if len(p.Payload) > maxPayload {
				t.Fatalf("%s part %d: %d bytes", r.Key, p.Index, len(p.Payload))
			}
		}
		t.Logf("%s: %d members in %d parts", r.Key, len(r.Members), len(parts))
	}
}

// feed adds parts to a and returns the records it completed.
func feed(t *testing.T, a *Assembler, v Version, deleted bool, parts []Part) []Record {
	t.Helper()
	var out []Record
	for _, p := range parts {
		r, ok, err := a.Add(p.Key, p.Index, v, deleted, p.Payload)
		if err != nil {
			t.Fatalf("part %d: %v", p.Index, err)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func mustParts(t *testing.T, r Record) []Part {
	t.Helper()
	ps, err := r.Parts(maxPayload)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestPartsRoundTrip: large zones, a settings record and a tombstone split
// and reassemble exactly, whatever the order and with every part sent twice.
func TestPartsRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	v := Version{Gen: 77, RouterID: 3}
	for _, r := range []Record{
		{Key: Key{KindZone, "v4"}, Version: v, Members: ipv4Members(8000)},
		{Key: Key{KindZone, "nqn"}, Version: v, Members: nqnMembers(8000)},
		{Key: Key{KindAlias, "empty"}, Version: v},
		{Key: Key{KindSettings, ""}, Version: v, Settings: Settings{HardZoning: true}},
		{Key: Key{KindZone, "gone"}, Version: v, Deleted: true},
	} {
		parts := mustParts(t, r)
		shuffled := append(append([]Part(nil), parts...), parts...)
		rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := feed(t, NewAssembler(0), v, r.Deleted, shuffled)
		if len(got) != 1 {
			t.Fatalf("%s: %d records from %d parts", r.Key, len(got), len(parts))
		}
		if len(got[0].Members) == 0 {
			got[0].Members = nil
		}
		if !reflect.DeepEqual(got[0], r) {
			t.Fatalf("%s: reassembled record differs", r.Key)
		}
	}
}

// TestAssemblerVersions: an older complete version stays in effect while a
// newer one is incomplete; parts of an older version interleaved with a
// newer one never yield the older after the newer; a zone that shrinks from
// 10 parts to 2 yields exactly the 2-part content, and the left-over parts
// of the old version change nothing.
func TestAssemblerVersions(t *testing.T) {
	k := Key{KindZone, "z"}
	v1, v2 := Version{Gen: 10, RouterID: 1}, Version{Gen: 20, RouterID: 2}
	big := Record{Key: k, Version: v1, Members: ipv4Members(6000)}
	small := Record{Key: k, Version: v2, Members: ipv4Members(1000)}
	p1, p2 := mustParts(t, big), mustParts(t, small)
	if len(p1) != 10 || len(p2) != 2 {
		t.Fatalf("test needs 10 and 2 parts, has %d and %d", len(p1), len(p2))
	}

	// v1 completes, then v2 arrives with old parts interleaved.
	a := NewAssembler(0)
	if got := feed(t, a, v1, false, p1); len(got) != 1 || len(got[0].Members) != 6000 {
		t.Fatalf("v1: %d records", len(got))
	}
	if got := feed(t, a, v2, false, p2[:1]); len(got) != 0 {
		t.Fatal("incomplete v2 yielded a record")
	}
	if got := feed(t, a, v1, false, p1[3:]); len(got) != 0 {
		t.Fatal("v1 parts yielded again")
	}
	got := feed(t, a, v2, false, p2[1:])
	if len(got) != 1 || !reflect.DeepEqual(got[0].Members, small.Members) || got[0].Version != v2 {
		t.Fatalf("shrunk zone: %d records", len(got))
	}
	if got := feed(t, a, v1, false, p1); len(got) != 0 {
		t.Fatal("old version's parts after the new one yielded a record")
	}

	// Interleaved from the start, the newer completing first: the older one
	// is never yielded.
	a = NewAssembler(0)
	var out []Record
	for i := range p1 {
		out = append(out, feed(t, a, v1, false, p1[i:i+1])...)
		if i < len(p2) {
			out = append(out, feed(t, a, v2, false, p2[i:i+1])...)
		}
	}
	if len(out) != 1 || out[0].Version != v2 {
		t.Fatalf("interleaved: yielded %d records", len(out))
	}

	// A tombstone after a large zone.
	del := Record{Key: k, Version: Version{Gen: 30, RouterID: 1}, Deleted: true}
	if got := feed(t, a, del.Version, true, mustParts(t, del)); len(got) != 1 || !got[0].Deleted {
		t.Fatalf("tombstone: %+v", got)
	}
}

// TestAssemblerRefuses: malformed parts, parts that do not add up (two
// splits mixed, content changed in flight) and versions larger than the
// limit are errors and change nothing in effect.
func TestAssemblerRefuses(t *testing.T) {
	k := Key{KindZone, "z"}
	v := Version{Gen: 5, RouterID: 1}
	r := Record{Key: k, Version: v, Members: ipv4Members(2000)}
	parts := mustParts(t, r)
	a := NewAssembler(0)
	for _, bad := range [][]byte{nil, {2, 0, 1}, {partFormat, 0, 1}, append([]byte{partFormat, 0, 0}, parts[0].Payload[3:]...)} {
		if _, _, err := a.Add(k, 0, v, false, bad); !errors.Is(err, ErrPart) {
			t.Errorf("%x: %v", bad, err)
		}
	}
	if _, _, err := a.Add(k, parts[0].Count, v, false, parts[0].Payload); !errors.Is(err, ErrPart) {
		t.Errorf("index past count: %v", err)
	}
	// A flipped byte in one part: the digest no longer matches.
	tampered := append([]Part(nil), parts...)
	tampered[1].Payload = append([]byte(nil), parts[1].Payload...)
	tampered[1].Payload[len(tampered[1].Payload)-1] ^= 1
	var err error
	for _, p := range tampered {
		_, _, err = a.Add(p.Key, p.Index, v, false, p.Payload)
	}
	if !errors.Is(err, ErrPart) {
		t.Fatalf("tampered part: %v", err)
	}
	// The intact parts still assemble afterwards.
	if got := feed(t, a, v, false, parts); len(got) != 1 {
		t.Fatal("intact version refused after a tampered copy")
	}
	// A version larger than the limit is refused and counted.
	small := NewAssembler(4000)
	var last error
	for _, p := range parts {
		if _, _, err := small.Add(p.Key, p.Index, Version{Gen: 6}, false, p.Payload); err != nil {
			last = err
		}
	}
	if !errors.Is(last, ErrPart) || small.Evicted() == 0 {
		t.Fatalf("over the limit: %v, evicted %d", last, small.Evicted())
	}
	if _, err := r.Parts(MinPartPayload - 1); err == nil {
		t.Fatal("payload limit below the minimum accepted")
	}
}

func FuzzPart(f *testing.F) {
	for _, r := range append([]Record{
		{Key: Key{KindZone, "z"}, Members: ipv4Members(3)},
		{Key: Key{KindSettings, ""}, Settings: DefaultSettings()},
	}, pinRecords()[0]) {
		ps, _ := r.Parts(maxPayload)
		f.Add(uint8(r.Kind), r.Name, ps[0].Payload)
	}
	f.Fuzz(func(t *testing.T, kind uint8, name string, payload []byte) {
		r, ok, err := NewAssembler(0).Add(Key{Kind(kind), name}, 0, Version{Gen: 1}, false, payload)
		if err != nil {
			if !errors.Is(err, ErrPart) && !errors.Is(err, ErrRecord) {
				t.Fatalf("error wraps neither ErrPart nor ErrRecord: %v", err)
			}
			return
		}
		if !ok {
			return
		}
		ps, err := r.Parts(maxPayload)
		if err != nil {
			t.Fatalf("assembled record does not split again: %v", err)
		}
		again, ok, err := NewAssembler(0).Add(r.Key, 0, r.Version, false, ps[0].Payload)
		if err != nil || !ok || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, r)
		}
	})
}
