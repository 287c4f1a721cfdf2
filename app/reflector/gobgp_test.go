package reflector

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// skipUnderRace skips a test that runs the real GoBGP when the race
// detector is on: GoBGP v3.37 races inside its watcher (fixed upstream only
// in v4). Those tests run without -race (make test-unit runs this package
// a second time without it, like package bgp).
func skipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
}

// freePort returns a TCP port free on a right now.
func freePort(t testing.TB, a string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitEstablished waits until n sessions of r are established.
func waitEstablished(t testing.TB, ns func(context.Context) ([]bgp.NeighborStatus, error), n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		st, err := ns(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		up := 0
		for _, s := range st {
			if s.State == bgp.StateEstablished {
				up++
			}
		}
		if up >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d established sessions: %+v", n, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGoBGPLargeZone is the real-BGP proof of issue #9 item 3: two
// reflectors of one cluster and one client, all real GoBGP speakers on
// loopback; a zone of 8,000 IPv4 members committed on r1 arrives complete
// at the client (from both reflectors) and in r2's store, and so does one
// of 8,000 NQNs of 223 bytes (500 parts). Then the first zone shrinks
// to one part and no stale part is left at the client.
func TestGoBGPLargeZone(t *testing.T) {
	skipUnderRace(t)
	const a1, a2, ac = "127.0.0.1", "127.0.0.2", "127.0.0.3"
	p1, p2 := freePort(t, a1), freePort(t, a2)
	mk := func(id, peer string, port, peerPort int) *Reflector {
		o := testOptions(t, id, []string{peer}, []string{ac})
		o.Listen = ListenOptions{Addresses: []string{id}, Port: port}
		o.LocalAddress = id
		o.Reflectors[0].Port = peerPort
		return startReflector(t, Config{Options: o})
	}
	r1 := mk(a1, a2, p1, p2)
	r2 := mk(a2, a1, p2, p1)

	ctx := context.Background()
	c, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr(ac), ListenPort: -1,
		GracefulRestart: bgp.GracefulRestart{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	for _, r := range []struct {
		addr string
		port int
	}{{a1, p1}, {a2, p2}} {
		if err := c.AddNeighbor(ctx, bgp.Neighbor{Address: netip.MustParseAddr(r.addr), Port: uint16(r.port),
			LocalAddress: netip.MustParseAddr(ac)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Subscribe(ctx, record.ConfigRT(testASN)); err != nil {
		t.Fatal(err)
	}
	client := newClientView()
	if err := c.WatchRecords(ctx, client.apply); err != nil {
		t.Fatal(err)
	}
	waitEstablished(t, r1.Neighbors, 2)
	waitEstablished(t, r2.Neighbors, 2)
	waitEstablished(t, c.Neighbors, 2)

	begin := time.Now()
	big := createZone(t, r1, "big", ipv4Members(8000))
	committed := time.Since(begin)
	client.waitFor(t, "the 8,000-member zone", func(v *clientView) bool { return sameRecord(v.recs[big.Key], big) })
	atClient := time.Since(begin)
	waitStore(t, r2, "the 8,000-member zone", func(m map[zones.Key]zones.Record) bool { return sameRecord(m[big.Key], big) })
	atR2 := time.Since(begin)
	client.waitFor(t, "all 14 parts from both reflectors", func(v *clientView) bool {
		return len(v.partsOf(zones.KindZone, "big")) == 28
	})
	all := time.Since(begin)
	t.Logf("8,000-member zone (14 parts): committed and originated on r1 in %v, complete at the client after %v, "+
		"in r2's store after %v, r2's copy at the client after %v", committed, atClient, atR2, all)

	begin = time.Now()
	nqn := createZone(t, r1, "nqn", nqnMembers(8000))
	client.waitFor(t, "the 8,000-NQN zone", func(v *clientView) bool { return sameRecord(v.recs[nqn.Key], nqn) })
	atClient = time.Since(begin)
	waitStore(t, r2, "the 8,000-NQN zone", func(m map[zones.Key]zones.Record) bool { return sameRecord(m[nqn.Key], nqn) })
	t.Logf("8,000 NQNs of 223 bytes (500 parts): complete at the client after %v, in r2's store after %v", atClient, time.Since(begin))

	small, err := r2.Commit(ctx, func(tx *zones.Tx) error { return tx.RemoveZoneMembers("big", ipv4Members(8000)[1:]...) })
	if err != nil {
		t.Fatal(err)
	}
	client.waitFor(t, "only part 0 from each reflector", func(v *clientView) bool {
		parts := v.partsOf(zones.KindZone, "big")
		return sameRecord(v.recs[big.Key], small[0]) && len(parts) == 2 &&
			parts[0][len(parts[0])-2:] == "/0" && parts[1][len(parts[1])-2:] == "/0"
	})
	waitStore(t, r1, "the shrunk zone", func(m map[zones.Key]zones.Record) bool { return sameRecord(m[big.Key], small[0]) })
}
