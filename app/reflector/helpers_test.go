package reflector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

const testASN = 65000

// waitTimeout bounds every wait for a condition; only a broken fabric
// reaches it.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv("INOF_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

// testOptions are valid options for a reflector on the fake fabric or on
// loopback: no BFD, no metrics listener.
func testOptions(t testing.TB, id string, reflectors []string, clients []string) Options {
	t.Helper()
	o := DefaultOptions()
	o.MetricsListen = ""
	o.StateDir = t.TempDir()
	o.ASN = testASN
	o.RouterID = id
	o.ClusterID = "10.255.255.1"
	o.BFD.Enabled = false
	for _, r := range reflectors {
		o.Reflectors = append(o.Reflectors, PeerOptions{Address: r})
	}
	for _, c := range clients {
		o.Clients = append(o.Clients, ClientOptions{Address: c})
	}
	return o
}

// speakerLog records the speaker options each start of a reflector used.
type speakerLog struct {
	mu   sync.Mutex
	opts []bgp.Options
}

func (l *speakerLog) last() bgp.Options {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts[len(l.opts)-1]
}

// fakeSpeakers returns a NewSpeaker that builds speakers on f and logs
// their options.
func fakeSpeakers(f *bgp.FakeFabric, l *speakerLog) func(bgp.Options) (bgp.Speaker, error) {
	return func(o bgp.Options) (bgp.Speaker, error) {
		if l != nil {
			l.mu.Lock()
			l.opts = append(l.opts, o)
			l.mu.Unlock()
		}
		return f.NewSpeaker(o)
	}
}

// startReflector starts a reflector and stops it at the end of the test.
func startReflector(t testing.TB, cfg Config) *Reflector {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.testStart(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.testStop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// testRun is a Run in the background, as a daemon runs it.
type testRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// testRuns holds each started reflector's run.
var testRuns sync.Map // *Reflector → *testRun

// testStart runs r in the background and returns once it is ready, or
// Run's error when it fails to start.
func (r *Reflector) testStart() error {
	ctx, cancel := context.WithCancel(context.Background())
	x := &testRun{cancel: cancel, done: make(chan struct{})}
	go func() { x.err = r.Run(ctx); close(x.done) }()
	select {
	case <-r.Ready():
		testRuns.Store(r, x)
		return nil
	case <-x.done:
		cancel()
		return x.err
	}
}

// testStop ends the run testStart began and returns Run's error; later
// calls return the same.
func (r *Reflector) testStop() error {
	v, ok := testRuns.Load(r)
	if !ok {
		return nil
	}
	x := v.(*testRun)
	x.cancel()
	<-x.done
	return x.err
}

// clientView is a switch agent's view of the configuration records: every
// config record present, by key, and the zone records an assembler built
// from them, as a switch agent builds them.
type clientView struct {
	mu   sync.Mutex
	cond *sync.Cond
	keys map[string]record.Config
	asm  *configsync.Assembler
	recs map[zones.Key]zones.Record
	errs []error
}

func newClientView() *clientView {
	v := &clientView{keys: map[string]record.Config{}, asm: configsync.NewAssembler(0), recs: map[zones.Key]zones.Record{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *clientView) apply(ev bgp.RecordEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	defer v.cond.Broadcast()
	if ev.Withdrawn {
		delete(v.keys, string(ev.Key))
		return
	}
	c, ok := ev.Record.(*record.Config)
	if !ok {
		return
	}
	v.keys[string(ev.Key)] = *c
	rec, done, err := v.asm.Add(*c)
	if err != nil {
		v.errs = append(v.errs, err)
	}
	if done {
		v.recs[rec.Key] = rec
	}
}

// waitFor waits until cond holds over the view.
func (v *clientView) waitFor(t testing.TB, what string, cond func(*clientView) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	stop := time.AfterFunc(waitTimeout, func() { v.mu.Lock(); v.cond.Broadcast(); v.mu.Unlock() })
	defer stop.Stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	for !cond(v) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s at the client (%d config records, errors %v)", what, len(v.keys), v.errs)
		}
		v.cond.Wait()
	}
	if len(v.errs) > 0 {
		t.Fatalf("client assembler errors: %v", v.errs)
	}
}

// partsOf lists the config records present for an object name, as
// "reflector/part".
func (v *clientView) partsOf(kind zones.Kind, name string) []string {
	var out []string
	for _, c := range v.keys {
		if zones.Kind(c.Kind) == kind && c.Name == name {
			out = append(out, fmt.Sprintf("%s/%d", c.Reflector.String(), c.Part))
		}
	}
	return out
}

// startClient starts a fake switch agent peering with the reflectors and
// subscribed to the configuration route target.
func startClient(t testing.TB, f *bgp.FakeFabric, id string, reflectors ...string) *clientView {
	t.Helper()
	s := clientSpeaker(t, f, id, reflectors...)
	ctx := context.Background()
	v := newClientView()
	if err := s.WatchRecords(ctx, v.apply); err != nil {
		t.Fatal(err)
	}
	return v
}

// waitStore waits until cond holds over a reflector's stored records.
func waitStore(t testing.TB, r *Reflector, what string, cond func(map[zones.Key]zones.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		recs, err := r.Records()
		if err != nil {
			t.Fatal(err)
		}
		m := map[zones.Key]zones.Record{}
		for _, rec := range recs {
			m[rec.Key] = rec
		}
		if cond(m) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s in the store of %s", what, r.opts.RouterID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func zoneKey(name string) zones.Key { return zones.Key{Kind: zones.KindZone, Name: name} }

// sameRecord reports whether two records are the same version with the same
// content.
func sameRecord(a, b zones.Record) bool {
	if a.Key != b.Key || a.Version != b.Version || a.Deleted != b.Deleted || len(a.Members) != len(b.Members) {
		return false
	}
	x, _ := a.MarshalBinary()
	y, _ := b.MarshalBinary()
	return string(x) == string(y)
}

func ipv4Members(n int) []zones.Member {
	ms := make([]zones.Member, n)
	for i := range ms {
		ms[i] = zones.Member{Kind: zones.MemberAddr, Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next()}
	}
	return ms
}

// nqnMembers returns n distinct NQNs of the longest length (223 bytes).
func nqnMembers(n int) []zones.Member {
	ms := make([]zones.Member, n)
	for i := range ms {
		name := fmt.Sprintf("nqn.2014-08.org.example:array-%06d-", i)
		ms[i] = zones.Member{Kind: zones.MemberNQN, Name: name + strings.Repeat("x", zones.MaxNQNLen-len(name))}
	}
	return ms
}

// createZone commits a new zone on r.
func createZone(t testing.TB, r *Reflector, name string, ms []zones.Member) zones.Record {
	t.Helper()
	recs, err := r.Commit(context.Background(), func(tx *zones.Tx) error { return tx.CreateZone(name, ms...) })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Key != zoneKey(name) {
		t.Fatalf("commit returned %v", recs)
	}
	return recs[0]
}

// clientSpeaker starts a fake switch's speaker peering with the reflectors
// and subscribed to the configuration route target.
func clientSpeaker(t testing.TB, f *bgp.FakeFabric, id string, reflectors ...string) *bgp.FakeSpeaker {
	t.Helper()
	s, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleClient, ASN: testASN, RouterID: netip.MustParseAddr(id)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	for _, r := range reflectors {
		if err := s.AddNeighbor(ctx, bgp.Neighbor{Address: netip.MustParseAddr(r)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Subscribe(ctx, record.ConfigRT(testASN)); err != nil {
		t.Fatal(err)
	}
	return s
}
