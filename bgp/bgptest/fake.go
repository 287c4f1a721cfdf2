package bgptest

import (
	"context"
	"net/netip"
	"testing"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// FakeNode is a speaker of a bgp.FakeFabric under test with what it has
// seen.
type FakeNode struct {
	*bgp.FakeSpeaker
	Addr netip.Addr  // its router-id
	View *RecordView // its record watch
}

// RouterID is the node's router-id.
func (n *FakeNode) RouterID() inof.RouterID { return RouterID(n.Addr) }

// NewFakeNode starts a speaker at address a in f (a client unless
// opts.Role says otherwise), with its record watch, stopped when the test
// ends.
func NewFakeNode(t testing.TB, f *bgp.FakeFabric, a string, opts bgp.Options) *FakeNode {
	t.Helper()
	opts.ASN, opts.RouterID = ASN, Addr(a)
	if opts.Role == 0 {
		opts.Role = bgp.RoleClient
	}
	s, err := f.NewSpeaker(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &FakeNode{FakeSpeaker: s, Addr: Addr(a), View: start(t, s, true)}
}

// FakeConnect makes c a client of reflector r; edit, if not nil, edits the
// reflector's side.
func FakeConnect(t testing.TB, r, c *FakeNode, edit func(*bgp.Neighbor)) {
	t.Helper()
	rn := bgp.Neighbor{Address: c.Addr, RRClient: true}
	if edit != nil {
		edit(&rn)
	}
	if err := r.AddNeighbor(context.Background(), rn); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNeighbor(context.Background(), bgp.Neighbor{Address: r.Addr}); err != nil {
		t.Fatal(err)
	}
}

// FakeStar is a fake fabric with a reflector at 127.0.0.1 and clients at
// the given addresses, each subscribed to its route targets.
func FakeStar(t testing.TB, clients map[string][]record.RouteTarget) (*bgp.FakeFabric, *FakeNode, map[string]*FakeNode) {
	t.Helper()
	f := bgp.NewFakeFabric()
	r := NewFakeNode(t, f, "127.0.0.1", bgp.Options{Role: bgp.RoleReflector})
	out := map[string]*FakeNode{}
	for a, rts := range clients {
		c := NewFakeNode(t, f, a, bgp.Options{})
		FakeConnect(t, r, c, nil)
		for _, rt := range rts {
			if err := c.Subscribe(context.Background(), rt); err != nil {
				t.Fatal(err)
			}
		}
		out[a] = c
	}
	return f, r, out
}
