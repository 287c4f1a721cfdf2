package reflector

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/zones"
)

// BenchmarkReconcile: what a reflector pays on its configuration path with
// 10,000 zones originated: the sync loop's reconcile of the one key a
// commit touched, its journal reconcile after it, and the parts count of
// the reflectors view (Reflectors).
func BenchmarkReconcile(b *testing.B) {
	r := startReflector(b, Config{Options: testOptions(b, r1ID, nil, nil), NewSpeaker: fakeSpeakers(bgp.NewFakeFabric(), nil)})
	rn := r.run
	tx := rn.store.Begin()
	keys := make([]zones.Key, 0, 10000)
	for i := range 10000 {
		name := fmt.Sprintf("z%05d", i)
		if err := tx.CreateZone(name, zones.Member{Kind: zones.MemberAddr, Addr: netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})}); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, zones.Key{Kind: zones.KindZone, Name: name})
	}
	if _, err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := rn.sync.reconcile(ctx, keys); err != nil {
		b.Fatal(err)
	}
	k := []zones.Key{keys[5000]}
	b.Run("key", func(b *testing.B) {
		for b.Loop() {
			if err := rn.sync.reconcile(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("journal", func(b *testing.B) {
		for b.Loop() {
			if _, err := rn.sync.reconcileJournal(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflectors", func(b *testing.B) {
		for b.Loop() {
			st, err := r.Reflectors(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if st.Reflectors[0].Parts < len(keys) {
				b.Fatalf("%d parts", st.Reflectors[0].Parts)
			}
		}
	})
}
