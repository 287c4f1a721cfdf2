package table

import (
	"context"
	"net/netip"

	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// fabric2 is two reflectors (one cluster) and two clients peering with both.
type fabric2 struct {
	r1, r2, a, b *bgptest.Node
	rep1, rep2   *ConfigReplicator
	zone         record.RouteTarget
}

func newFabric2(t *testing.T) *fabric2 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cluster := bgptest.Addr("127.0.0.100")
	f := &fabric2{
		r1:   bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{ClusterID: cluster}),
		r2:   bgptest.StartReflector(t, bgptest.Addr("127.0.0.4"), bgp.Options{ClusterID: cluster}),
		a:    bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{}),
		b:    bgptest.StartClient(t, bgptest.Addr("127.0.0.3"), bgp.Options{}),
		zone: record.ZoneRT(bgptest.ASN, "prod"),
	}
	bgptest.PeerReflectors(t, f.r1, f.r2)
	for _, r := range []*bgptest.Node{f.r1, f.r2} {
		bgptest.Connect(t, r, f.a, nil)
		bgptest.Connect(t, r, f.b, nil)
	}
	for _, c := range []*bgptest.Node{f.a, f.b} {
		for _, rt := range []record.RouteTarget{f.zone, record.ConfigRT(bgptest.ASN)} {
			if err := c.Subscribe(ctx, rt); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range []struct {
		r   *bgptest.Node
		rep **ConfigReplicator
	}{{f.r1, &f.rep1}, {f.r2, &f.rep2}} {
		rep, err := NewConfigReplicator(ReplicatorOptions{Speaker: p.r.GoBGP, RouterID: p.r.RouterID(), RT: record.ConfigRT(bgptest.ASN)})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Run(ctx); err != nil {
			t.Fatal(err)
		}
		*p.rep = rep
	}
	bgptest.WaitEstablished(t, f.r1, 3)
	bgptest.WaitEstablished(t, f.r2, 3)
	bgptest.WaitEstablished(t, f.a, 2)
	bgptest.WaitEstablished(t, f.b, 2)
	return f
}

// configAt returns the newest version of an object among the copies of
// it in records (a view's).
func configAt(records map[string]bgp.RecordEvent, obj record.ConfigObject) (record.Config, bool) {
	cv := NewConfigView()
	for _, e := range records {
		cv.Apply(e)
	}
	for _, c := range cv.Objects() {
		if c.Object() == obj {
			return c, true
		}
	}
	return record.Config{}, false
}

// hasVersion is a wait condition: the newest copy of obj is at gen.
func hasVersion(obj record.ConfigObject, gen uint64) func(map[string]bgp.RecordEvent) bool {
	return func(m map[string]bgp.RecordEvent) bool {
		c, ok := configAt(m, obj)
		return ok && c.Gen == gen
	}
}

// TestTwoReflectors covers docs/design.md §3's reflector redundancy: configuration
// edits on either reflector reach the other and every client; device
// records never cross between reflectors; stopping a reflector loses no
// record and makes no client see a withdraw; 200 add/withdraw cycles leave
// no ghost anywhere.
func TestTwoReflectors(t *testing.T) {
	ctx := context.Background()
	f := newFabric2(t)

	// Configuration written on r1, then a newer version on r2.
	obj := record.ConfigObject{Kind: 2, Name: "prod"}
	clock := inof.NewClock(nil)
	gen1 := clock.Next()
	if _, err := f.rep1.Put(ctx, record.Config{Kind: 2, Name: "prod", Gen: gen1, Writer: f.r1.RouterID(), Payload: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*bgptest.Node{f.a, f.b} {
		n.View.WaitFor(t, "config v1 at client", hasVersion(obj, gen1))
	}
	waitObject(t, f.rep2, obj, gen1)
	gen2 := clock.Next()
	if _, err := f.rep2.Put(ctx, record.Config{Kind: 2, Name: "prod", Gen: gen2, Writer: f.r2.RouterID(), Deleted: true}); err != nil {
		t.Fatal(err)
	}
	waitObject(t, f.rep1, obj, gen2)
	for _, n := range []*bgptest.Node{f.a, f.b} {
		n.View.WaitFor(t, "tombstone at client", hasVersion(obj, gen2))
	}
	// An old copy offered again loses against the tombstone.
	if took, _ := f.rep1.Put(ctx, record.Config{Kind: 2, Name: "prod", Gen: gen1, Writer: f.r1.RouterID()}); took {
		t.Fatal("old version replaced the tombstone")
	}

	// What b receives from each reflector (Adj-RIB-In).
	rx := map[netip.Addr]*bgptest.RecordView{f.r1.Addr: bgptest.NewRecordView(), f.r2.Addr: bgptest.NewRecordView()}
	if err := f.b.WatchReceived(ctx, func(e bgp.RecordEvent) {
		if v := rx[e.Source]; v != nil {
			v.Apply(e)
		}
	}); err != nil {
		t.Fatal(err)
	}

	// Device records from a reach b through both reflectors.
	const n = 50
	for i := range n {
		if err := f.a.Publish(ctx, bgptest.Device(f.a.RouterID(), i), f.zone); err != nil {
			t.Fatal(err)
		}
	}
	allAt := func(want int) func(map[string]bgp.RecordEvent) bool {
		return func(m map[string]bgp.RecordEvent) bool {
			c := 0
			for _, e := range m {
				if _, ok := e.Record.(*record.Device); ok {
					c++
				}
			}
			return c == want
		}
	}
	for _, nd := range []*bgptest.Node{f.b, f.r1, f.r2} {
		nd.View.WaitFor(t, "50 devices", allAt(n))
	}
	for _, r := range []*bgptest.Node{f.r1, f.r2} {
		for _, e := range r.View.Records() {
			if _, ok := e.Record.(*record.Device); ok && e.Source != f.a.Addr {
				t.Errorf("reflector %s holds a device record from %s: records crossed reflectors", r.Addr, e.Source)
			}
		}
	}

	// 200 add/withdraw cycles, then a marker: nothing of the cycles stays.
	for i := range 200 {
		d := bgptest.Device(f.a.RouterID(), 1000+i)
		if err := f.a.Publish(ctx, d, f.zone); err != nil {
			t.Fatal(err)
		}
		if err := f.a.Withdraw(ctx, d.Key()); err != nil {
			t.Fatal(err)
		}
	}
	marker := bgptest.Device(f.a.RouterID(), 5000)
	if err := f.a.Publish(ctx, marker, f.zone); err != nil {
		t.Fatal(err)
	}
	for _, nd := range []*bgptest.Node{f.b, f.r1, f.r2} {
		// Settles at exactly the 50 records and the marker; a ghost of a
		// cycle would keep the count above that until the wait gives up.
		nd.View.WaitFor(t, "marker and no ghosts", func(m map[string]bgp.RecordEvent) bool {
			_, ok := m[string(marker.Key())]
			return ok && allAt(n+1)(m)
		})
	}

	// Stop r1: b keeps every device record, without a single withdraw, and
	// records keep flowing through r2.
	stable := [][]byte{marker.Key()}
	for i := range n {
		stable = append(stable, bgptest.Device(f.a.RouterID(), i).Key())
	}
	// Both reflectors' copies of every stable record are at b before r1
	// goes (a copy still in flight from r2 would make a withdraw legitimate).
	for _, r := range []*bgptest.Node{f.r1, f.r2} {
		rx[r.Addr].WaitFor(t, "copies from both reflectors at b", func(m map[string]bgp.RecordEvent) bool {
			for _, k := range stable {
				if _, ok := m[string(k)]; !ok {
					return false
				}
			}
			return true
		})
	}
	before := f.b.View.WithdrawsOf(stable)
	f.r1.Stop()
	// Wait until b has processed the loss of r1: every record's best path
	// is then r2's copy (those via r1 moved in the same step that would
	// have withdrawn them).
	bgptest.WaitState(t, f.b, f.r1.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	f.b.View.WaitFor(t, "b's records via r2 only", func(m map[string]bgp.RecordEvent) bool {
		for _, k := range stable {
			if e, ok := m[string(k)]; ok && e.Source != f.r2.Addr {
				return false
			}
		}
		return true
	})
	more := bgptest.Device(f.a.RouterID(), 6000)
	if err := f.a.Publish(ctx, more, f.zone); err != nil {
		t.Fatal(err)
	}
	f.b.View.WaitFor(t, "record via r2", allAt(n+2))
	after := f.b.View.WithdrawsOf(stable)
	for k, w := range before {
		if after[k] != w {
			t.Fatalf("b saw a withdraw of %x after r1 stopped", k)
		}
	}
	if c, ok := configAt(f.b.View.Records(), obj); !ok || c.Gen != gen2 {
		t.Fatalf("configuration lost with r1: %+v %v", c, ok)
	}
	if err := f.a.Withdraw(ctx, more.Key()); err != nil {
		t.Fatal(err)
	}
	f.b.View.WaitFor(t, "withdraw via r2", allAt(n+1))
}

func waitObject(t *testing.T, rep *ConfigReplicator, obj record.ConfigObject, gen uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range originated(rep) {
			if c.Object() == obj && c.Gen == gen {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("object %v generation %d never adopted: %+v", obj, gen, originated(rep))
}
