package bgp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"sync"

	"github.com/openinof/inof/bgp/record"
)

// FakeFabric is an in-memory BGP fabric for tests of code above the
// speaker (daemons, replicator, device tables), so they can run with the
// race detector, which the real GoBGP cannot (see the Makefile). Speakers
// made by one fabric find each other by router-id: a Neighbor's Address is
// the other speaker's RouterID, and a session is up while both speakers
// run, both configured each other and the fabric has not cut the link.
//
// It models what the fabric's correctness depends on, as GoBGP v3.37 does
// it: one best record per key (local first, then the lowest neighbor
// address); route reflection (a reflector reflects client records to every
// other neighbor and records of non-clients to clients only; clients never
// re-advertise); RT-constraint (a record goes to a neighbor only if it
// carries a route target the neighbor subscribed to, or the neighbor
// advertised the default route target, as reflectors do towards clients
// unless NoDefaultRT; untagged records never go); GoBGP's re-tag gap (when a
// record's new route targets no longer interest a neighbor that holds it,
// nothing is sent: the neighbor keeps the old value); an unsubscribe
// withdraws the records that carried the route target; the reflector
// policies of docs/design.md §3 towards peer reflectors and the import
// policy of docs/security.md (a client's records with the configuration
// route target are refused, every other record of a client takes its
// address as next hop, a quarantined client's records are refused); a
// session that goes down
// withdraws what it brought, at once (no graceful restart, no BFD). Watches
// follow the real speaker's rules (one goroutine each, bounded queue,
// resync). Everything is synchronous: when Publish returns, every watch
// queue in the fabric holds the consequences.
type FakeFabric struct {
	mu       sync.Mutex
	speakers map[netip.Addr]*FakeSpeaker
	sessions map[[2]netip.Addr]bool
	cut      map[[2]netip.Addr]bool
	// eor holds, by [sender, receiver], the End-of-RIBs sent in the
	// current sessions; eorDeferred the speakers whose sessions come up
	// without one (DeferEndOfRIB).
	eor         map[[2]netip.Addr]bool
	eorDeferred map[netip.Addr]bool
}

// NewFakeFabric returns an empty fabric.
func NewFakeFabric() *FakeFabric {
	return &FakeFabric{speakers: map[netip.Addr]*FakeSpeaker{}, sessions: map[[2]netip.Addr]bool{},
		cut: map[[2]netip.Addr]bool{}, eor: map[[2]netip.Addr]bool{}, eorDeferred: map[netip.Addr]bool{}}
}

// DeferEndOfRIB makes the sessions of speaker from that come up from now on
// come up without its End-of-RIB (NeighborStatus.EndOfRIB stays false at
// the other end) until SendEndOfRIB; by default a session's End-of-RIB is
// sent right after its initial table.
func (f *FakeFabric) DeferEndOfRIB(from netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eorDeferred[from] = true
}

// SendEndOfRIB has from send End-of-RIB to to in their current session (if
// up), after everything it sent before.
func (f *FakeFabric) SendEndOfRIB(from, to netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions[pair(from, to)] {
		f.eor[[2]netip.Addr{from, to}] = true
	}
}

// NewSpeaker adds a speaker with the options' Role, ASN and RouterID
// (listen, GR, security and BFD options are ignored); call Start. A
// stopped speaker's router-id may be reused: the new speaker replaces it,
// as a restarted daemon does.
func (f *FakeFabric) NewSpeaker(opts Options) (*FakeSpeaker, error) {
	switch {
	case opts.Role != RoleClient && opts.Role != RoleReflector:
		return nil, errors.New("bgp: role must be client or reflector")
	case opts.ASN == 0:
		return nil, errors.New("bgp: ASN is required")
	case !opts.RouterID.Is4():
		return nil, errors.New("bgp: router-id must be an IPv4 address")
	}
	if opts.WatchQueue <= 0 {
		opts.WatchQueue = DefaultWatchQueue
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, dup := f.speakers[opts.RouterID]; dup && !old.stopped {
		return nil, fmt.Errorf("bgp: fake fabric already has a running speaker %s", opts.RouterID)
	}
	s := &FakeSpeaker{f: f, opts: opts, id: opts.RouterID, log: opts.Logger.With("router_id", opts.RouterID.String()),
		done: make(chan struct{}), neighbors: map[netip.Addr]Neighbor{}, subs: map[record.RouteTarget]bool{},
		local: map[string]fakePath{}, adjIn: map[netip.Addr]map[string]fakePath{}, adjOut: map[netip.Addr]map[string]fakePath{},
		interest: map[netip.Addr]fakeInterest{}, best: map[string]fakePath{}, quarantined: map[netip.Addr]bool{}}
	f.speakers[opts.RouterID] = s
	return s, nil
}

// Cut takes the link between two speakers down (their session drops, as
// when one of them dies) until Mend.
func (f *FakeFabric) Cut(a, b netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[pair(a, b)] = true
	f.reconcile()
}

// Mend brings a cut link back.
func (f *FakeFabric) Mend(a, b netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cut, pair(a, b))
	f.reconcile()
}

func pair(a, b netip.Addr) [2]netip.Addr {
	if b.Less(a) {
		a, b = b, a
	}
	return [2]netip.Addr{a, b}
}

// reconcile brings every session to its desired state (under f.mu).
func (f *FakeFabric) reconcile() {
	want := map[[2]netip.Addr]bool{}
	for _, x := range f.speakers {
		for a := range x.neighbors {
			y := f.speakers[a]
			p := pair(x.id, a)
			if y != nil && x.running && y.running && !f.cut[p] {
				if _, ok := y.neighbors[x.id]; ok {
					want[p] = true
				}
			}
		}
	}
	for _, p := range sortedPairs(f.sessions) {
		if !want[p] {
			f.down(f.speakers[p[0]], f.speakers[p[1]])
		}
	}
	for _, p := range sortedPairs(want) {
		if !f.sessions[p] {
			f.up(f.speakers[p[0]], f.speakers[p[1]])
		}
	}
}

func (f *FakeFabric) up(a, b *FakeSpeaker) {
	f.sessions[pair(a.id, b.id)] = true
	for _, x := range []*FakeSpeaker{a, b} {
		y := a
		if x == a {
			y = b
		}
		x.adjIn[y.id], x.adjOut[y.id] = map[string]fakePath{}, map[string]fakePath{}
		x.interest[y.id] = f.advertised(y, x)
		for _, w := range x.nbWatches {
			if w.q.push(NeighborEvent{Address: y.id, State: StateEstablished}) {
				x.watches.resyncs.Add(1)
			}
		}
	}
	f.refreshInterests()
	for _, x := range []*FakeSpeaker{a, b} {
		y := a
		if x == a {
			y = b
		}
		for _, k := range sortedKeys(x.best) {
			f.export(x, y, k)
		}
		if !f.eorDeferred[x.id] {
			f.eor[[2]netip.Addr{x.id, y.id}] = true
		}
	}
}

func (f *FakeFabric) down(a, b *FakeSpeaker) {
	delete(f.sessions, pair(a.id, b.id))
	delete(f.eor, [2]netip.Addr{a.id, b.id})
	delete(f.eor, [2]netip.Addr{b.id, a.id})
	for _, x := range []*FakeSpeaker{a, b} {
		y := a
		if x == a {
			y = b
		}
		lost := x.adjIn[y.id]
		delete(x.adjIn, y.id)
		delete(x.adjOut, y.id)
		delete(x.interest, y.id)
		for _, w := range x.nbWatches {
			if w.q.push(NeighborEvent{Address: y.id, State: StateActive}) {
				x.watches.resyncs.Add(1)
			}
		}
		for _, k := range sortedKeys(lost) {
			f.update(x, k)
		}
	}
	f.refreshInterests()
}

// advertised is the RT-constraint interest n advertises to x.
func (f *FakeFabric) advertised(n, x *FakeSpeaker) fakeInterest {
	in := fakeInterest{rts: map[record.RouteTarget]bool{}}
	for rt := range n.subs {
		if rt == record.AnyRT {
			in.def = true
			continue
		}
		in.rts[rt] = true
	}
	if n.opts.Role != RoleReflector {
		return in
	}
	nx := n.neighbors[x.id]
	if nx.PeerReflector {
		in.def = true // its own default membership; client memberships are rejected
		return in
	}
	in.def = !nx.NoDefaultRT
	// Memberships of other clients are reflected; a client's AnyRT is
	// not: the reflector's own default membership (same NLRI, local,
	// hence best) is what it advertises, or withholds (NoDefaultRT).
	for c, cn := range n.neighbors {
		if c == x.id || !cn.RRClient || !f.sessions[pair(n.id, c)] {
			continue
		}
		for rt := range f.speakers[c].subs {
			if rt != record.AnyRT {
				in.rts[rt] = true
			}
		}
	}
	return in
}

// refreshInterests recomputes what every neighbor advertised and applies
// GoBGP's RT-constraint reaction: a new membership sends the matching
// records; a withdrawn one withdraws the current records carrying it.
func (f *FakeFabric) refreshInterests() {
	for _, xa := range sortedAddrs(f.speakers) {
		x := f.speakers[xa]
		for _, na := range sortedAddrs(x.interest) {
			n := f.speakers[na]
			old, cur := x.interest[na], f.advertised(n, x)
			if old.equal(cur) {
				continue
			}
			x.interest[na] = cur
			for _, k := range sortedKeys(x.best) {
				p := x.best[k]
				if cur.wants(p.rts) {
					f.export(x, n, k)
					continue
				}
				removed := false
				for _, rt := range p.rts {
					if (old.def && !cur.def) || (old.rts[rt] && !cur.rts[rt]) {
						removed = true
					}
				}
				if _, had := x.adjOut[na][k]; had && removed {
					f.send(x, n, k, nil)
				}
			}
		}
	}
}

// update recomputes x's best path for k and propagates a change.
func (f *FakeFabric) update(x *FakeSpeaker, k string) {
	old, had := x.best[k]
	cur, has := x.selectBest(k)
	if had == has && (!has || old.same(cur)) {
		return
	}
	if has {
		x.best[k] = cur
		x.pushRecord(x.recWatches, x.event(cur, false))
	} else {
		delete(x.best, k)
		x.pushRecord(x.recWatches, x.event(old, true))
	}
	for _, na := range sortedAddrs(x.adjOut) {
		f.export(x, f.speakers[na], k)
	}
}

func (x *FakeSpeaker) selectBest(k string) (fakePath, bool) {
	if p, ok := x.local[k]; ok {
		return p, true
	}
	for _, na := range sortedAddrs(x.adjIn) {
		p, ok := x.adjIn[na][k]
		if !ok {
			continue
		}
		if x.opts.Role == RoleReflector {
			switch {
			case x.quarantined[na], x.neighbors[na].PeerReflector:
				continue // import policy: refused
			case slices.Contains(p.rts, record.ConfigRT(x.opts.ASN)):
				continue // import policy: configuration comes from reflectors only
			}
			p.nextHop = na // import policy: a client's address is its records' next hop
		}
		return p, true
	}
	return fakePath{}, false
}

// export sends x's best path for k to n as GoBGP would.
func (f *FakeFabric) export(x, n *FakeSpeaker, k string) {
	if !f.sessions[pair(x.id, n.id)] {
		return
	}
	sent, had := x.adjOut[n.id][k]
	p, ok := x.best[k]
	if !ok {
		if had {
			f.send(x, n, k, nil)
		}
		return
	}
	toN := x.neighbors[n.id]
	if p.source.IsValid() {
		if p.source == n.id {
			return
		}
		if x.opts.Role != RoleReflector || !(x.neighbors[p.source].RRClient || toN.RRClient) {
			return // iBGP: only reflectors pass on learned records
		}
	}
	if !x.interest[n.id].wants(p.rts) {
		return // RT-constraint is checked before policy: nothing is sent, not even a withdraw
	}
	if x.opts.Role == RoleReflector && slices.Contains(p.rts, record.SwitchInfoRT) {
		if had {
			f.send(x, n, k, nil)
		}
		return // the export policy keeps switch records from every neighbor
	}
	if x.opts.Role == RoleReflector && toN.PeerReflector &&
		(p.source.IsValid() || !slices.Contains(p.rts, record.ConfigRT(x.opts.ASN))) {
		if had {
			f.send(x, n, k, nil) // rejected by export policy: the old one is withdrawn
		}
		return
	}
	if !had || !sent.same(p) {
		f.send(x, n, k, &p)
	}
}

// send delivers one update (p) or withdraw (nil) from x to n.
func (f *FakeFabric) send(x, n *FakeSpeaker, k string, p *fakePath) {
	if p == nil {
		delete(x.adjOut[n.id], k)
		if in, ok := n.adjIn[x.id][k]; ok {
			delete(n.adjIn[x.id], k)
			n.pushRecord(n.rxWatches, n.event(in, true))
		}
	} else {
		x.adjOut[n.id][k] = *p
		nh := p.nextHop
		if !p.source.IsValid() {
			nh = x.id // a local path leaves with the session address
		}
		rx := fakePath{key: p.key, value: p.value, rts: p.rts, source: x.id, nextHop: nh}
		n.adjIn[x.id][k] = rx
		n.pushRecord(n.rxWatches, n.event(rx, false))
	}
	f.update(n, k)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedAddrs[V any](m map[netip.Addr]V) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func sortedPairs(m map[[2]netip.Addr]bool) [][2]netip.Addr {
	out := make([][2]netip.Addr, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b [2]netip.Addr) int {
		if c := a[0].Compare(b[0]); c != 0 {
			return c
		}
		return a[1].Compare(b[1])
	})
	return out
}
