package table

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// ConfigSpeaker is what configuration replication needs from a speaker:
// publishing, withdrawing, the Adj-RIB-In, and the configured neighbors
// (to tell peer reflectors from clients). GoBGP and FakeSpeaker implement
// it.
type ConfigSpeaker interface {
	RecordPublisher
	WatchReceived(ctx context.Context, fn func(bgp.RecordEvent), types ...record.Type) error
	Neighbors(ctx context.Context) ([]bgp.NeighborStatus, error)
}

// ReplicatorOptions configure a ConfigReplicator.
type ReplicatorOptions struct {
	Speaker  ConfigSpeaker
	RouterID inof.RouterID      // this reflector; the Reflector field of its copies
	RT       record.RouteTarget // the fabric-wide configuration route target
	// OnAdopt is called (outside locks) with each object version learned
	// from another reflector that is newer than ours, after we re-originate
	// it; the daemon persists it there.
	OnAdopt func(record.Config)
	// Now is the wall clock for the generation checks (default time.Now).
	Now func() time.Time
	// RetryEvery is how often versions refused as too far in the future
	// are looked at again (default 10 s): a peer whose clock was stepped
	// ahead wrote them, and they are adopted once our clock is within
	// inof.MaxGenerationSkew of them, not only if they are offered again.
	RetryEvery time.Duration
	Logger     *slog.Logger
}

// ReplicatorStats count what a ConfigReplicator adopted, refused and pruned.
type ReplicatorStats struct {
	Adopted uint64 // newer versions taken from peer reflectors
	// Future counts peer versions refused because their generation is
	// more than inof.MaxGenerationSkew ahead of our clock.
	Future uint64
	// Expired counts tombstones refused because they are older than
	// inof.TombstoneLifetime.
	Expired uint64
	Pruned  uint64 // tombstones withdrawn by Prune
	// NotPeer counts configuration records refused because the neighbor
	// that sent them is not a peer reflector (a client, i.e. a switch).
	NotPeer uint64
	// Withdrawn counts stale parts withdrawn by Withdraw.
	Withdrawn uint64
}

// ConfigReplicator keeps a reflector's configuration in step with its peer
// reflectors (docs/design.md §3): every reflector originates its own copy of every
// object under its own key, so a copy never dies with the reflector that
// wrote it; a newer version seen from a peer (by generation, then writer) is
// adopted and re-originated; deletions travel as tombstones (Deleted), so a
// returning reflector with an old copy cannot resurrect a deleted object.
// Tombstones live inof.TombstoneLifetime from their generation: Prune
// withdraws them, and an expired tombstone offered again is refused, so
// every reflector drops it at the same time whatever the order.
//
// Configuration is adopted only from neighbors configured as peer
// reflectors (Neighbor.PeerReflector): a switch agent is a client and may
// not inject configuration, whatever its records claim.
type ConfigReplicator struct {
	cfg ReplicatorOptions
	log *slog.Logger

	mu      sync.Mutex
	objects partIndex // the parts this reflector originates
	// withdrawn are parts withdrawn as stale, with the version withdrawn:
	// a peer copy of that version or older is not adopted again.
	withdrawn map[record.ConfigObject]record.Config
	// deferred are the newest versions refused as too far in the future,
	// with the peer that sent them, looked at again every RetryEvery.
	deferred map[record.ConfigObject]deferredVersion
	// peers are the copies each peer reflector originates, as received.
	peers      map[inof.RouterID]*peerCopies
	stats      ReplicatorStats
	refuseLog  ratelimit.Limit
	notPeerLog ratelimit.Limit
}

// NewConfigReplicator returns a replicator; seed it with Put (from the
// persistent store) before Run.
func NewConfigReplicator(opts ReplicatorOptions) (*ConfigReplicator, error) {
	if opts.Speaker == nil || opts.RouterID == 0 {
		return nil, errors.New("bgp: replicator needs a speaker and a router-id")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = 10 * time.Second
	}
	return &ConfigReplicator{cfg: opts, log: log, objects: partIndex{byKind: map[uint8]map[string]map[uint16]record.Config{}},
		withdrawn: map[record.ConfigObject]record.Config{}, deferred: map[record.ConfigObject]deferredVersion{},
		peers:      map[inof.RouterID]*peerCopies{},
		refuseLog:  ratelimit.Limit{Every: time.Second},
		notPeerLog: ratelimit.Limit{Every: time.Second}}, nil
}

// Put originates a version written locally (a commit, or the store's content
// at start-up). An older version than the one held or withdrawn, or a
// tombstone past its lifetime, is ignored; Put reports whether it was taken.
func (r *ConfigReplicator) Put(ctx context.Context, rec record.Config) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Deleted && inof.TombstoneExpired(rec.Gen, r.cfg.Now()) {
		return false, nil
	}
	return r.putLocked(ctx, rec)
}

func (r *ConfigReplicator) putLocked(ctx context.Context, rec record.Config) (bool, error) {
	rec.Reflector = r.cfg.RouterID
	obj := rec.Object()
	if cur, ok := r.objects.get(obj); ok && !rec.Newer(&cur) {
		return false, nil
	}
	if gone, ok := r.withdrawn[obj]; ok && !rec.Newer(&gone) {
		return false, nil
	}
	if err := r.cfg.Speaker.Publish(ctx, &rec, r.cfg.RT, record.PeeringRT(r.cfg.RT.Global)); err != nil {
		return false, fmt.Errorf("bgp: originate %v: %w", obj, err)
	}
	r.objects.put(rec)
	delete(r.withdrawn, obj)
	return true, nil
}

// Withdraw withdraws this reflector's copy of held's part, one it no
// longer needs (a record shrank, or a version with more parts lost to one
// with fewer), and remembers the version withdrawn, so that a peer's copy
// of that version or an older one is not adopted again; a newer version
// is. held is the version the caller found (Parts, OfKind): a newer copy of the
// part, adopted from a peer meanwhile, stays; a part not held does
// nothing. The memory of a withdrawn part lasts until a newer version of
// it is originated or until its generation is past
// inof.TombstoneLifetime (Prune).
func (r *ConfigReplicator) Withdraw(ctx context.Context, held record.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj := held.Object()
	cur, ok := r.objects.get(obj)
	if !ok || cur.Newer(&held) {
		return nil
	}
	if err := r.cfg.Speaker.Withdraw(ctx, cur.Key()); err != nil {
		return fmt.Errorf("bgp: withdraw %v: %w", obj, err)
	}
	r.objects.delete(obj)
	r.withdrawn[obj] = cur
	r.stats.Withdrawn++
	return nil
}

// Prune withdraws the tombstones past inof.TombstoneLifetime (measured from
// their generation, so every reflector agrees) and forgets them, and forgets
// withdrawn parts as old; it returns how many tombstones it withdrew. Call
// it periodically (the store prunes alike).
func (r *ConfigReplicator) Prune(ctx context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	n := 0
	for c := range r.objects.all() {
		if !c.Deleted || !inof.TombstoneExpired(c.Gen, now) {
			continue
		}
		if err := r.cfg.Speaker.Withdraw(ctx, c.Key()); err != nil {
			return n, fmt.Errorf("bgp: prune %v: %w", c.Object(), err)
		}
		r.objects.delete(c.Object())
		r.stats.Pruned++
		n++
	}
	for obj, c := range r.withdrawn {
		if inof.TombstoneExpired(c.Gen, now) {
			delete(r.withdrawn, obj)
		}
	}
	return n, nil
}

// Run watches records received from peers until ctx ends (or the speaker
// stops). A version is refused, counted and logged at a rate limit if the
// neighbor that sent it is not a peer reflector (NotPeer), if its generation
// is too far in the future or if it is an expired tombstone.
func (r *ConfigReplicator) Run(ctx context.Context) error {
	peers := peerSet{speaker: r.cfg.Speaker}
	go r.retryDeferred(ctx)
	return r.cfg.Speaker.WatchReceived(ctx, func(ev bgp.RecordEvent) {
		if ev.Withdrawn {
			if c, err := record.ParseConfigKey(ev.Key); err == nil && c.Reflector != r.cfg.RouterID && peers.has(ctx, ev.Source) {
				r.notePeer(c, ev.Source, true)
			}
			return // a withdrawn peer copy means the peer went away or pruned: ours stays
		}
		c, ok := ev.Record.(*record.Config)
		if !ok || c.Reflector == r.cfg.RouterID {
			return
		}
		if !peers.has(ctx, ev.Source) {
			r.refuseNotPeer(*c, ev.Source)
			return
		}
		r.notePeer(*c, ev.Source, false)
		r.offer(ctx, *c, ev.Source)
	}, record.TypeConfig) // a reflector receives every client's device records too: skip them
}

// offer adopts a peer's version if it is newer and acceptable, and hands
// it to OnAdopt.
func (r *ConfigReplicator) offer(ctx context.Context, c record.Config, from netip.Addr) {
	took, err := r.adopt(ctx, c, from)
	if err != nil {
		r.log.Warn("re-originating configuration failed", "object", c.Object(), "err", err)
		return
	}
	if took && r.cfg.OnAdopt != nil {
		c.Reflector = r.cfg.RouterID
		r.cfg.OnAdopt(c)
	}
}

// deferredVersion is a peer's version refused as too far in the future.
type deferredVersion struct {
	rec  record.Config
	from netip.Addr
}

// retryDeferred offers the deferred versions again every RetryEvery until
// ctx ends; those still ahead stay deferred (adopt keeps them).
func (r *ConfigReplicator) retryDeferred(ctx context.Context) {
	tick := time.NewTicker(r.cfg.RetryEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.mu.Lock()
		due := make([]deferredVersion, 0, len(r.deferred))
		now := r.cfg.Now()
		for obj, d := range r.deferred {
			if inof.CheckGeneration(d.rec.Gen, now) == nil {
				due = append(due, d)
				delete(r.deferred, obj)
			}
		}
		r.mu.Unlock()
		for _, d := range due {
			r.offer(ctx, d.rec, d.from)
		}
	}
}

// peerSet tells peer reflectors from other neighbors by the speaker's
// neighbor configuration. It is used by one watch goroutine only: the set
// is re-read when a source is not in it (a reflector configured since), so
// only refused records cost a lookup.
type peerSet struct {
	speaker ConfigSpeaker
	known   map[netip.Addr]bool
}

func (p *peerSet) has(ctx context.Context, a netip.Addr) bool {
	if p.known[a] {
		return true
	}
	ns, err := p.speaker.Neighbors(ctx)
	if err != nil {
		return false // the speaker is stopping
	}
	p.known = make(map[netip.Addr]bool, len(ns))
	for _, n := range ns {
		if n.PeerReflector {
			p.known[n.Address] = true
		}
	}
	return p.known[a]
}

// refuseNotPeer counts and logs (at a rate limit) a configuration record
// sent by a neighbor that is not a peer reflector.
func (r *ConfigReplicator) refuseNotPeer(c record.Config, from netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.NotPeer++
	if r.notPeerLog.Allow() {
		r.log.Warn("configuration record from a neighbor that is not a peer reflector refused", "object", c.Object(),
			"from", from, "claimed_reflector", c.Reflector, "not_peer_total", r.stats.NotPeer)
	}
}

func (r *ConfigReplicator) adopt(ctx context.Context, c record.Config, from netip.Addr) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	var why string
	if err := inof.CheckGeneration(c.Gen, now); err != nil {
		r.stats.Future++
		if p := r.peers[c.Reflector]; p != nil {
			p.future++
		}
		why = err.Error()
		if d, ok := r.deferred[c.Object()]; !ok || c.Newer(&d.rec) {
			r.deferred[c.Object()] = deferredVersion{rec: c, from: from}
		}
	} else if c.Deleted && inof.TombstoneExpired(c.Gen, now) {
		r.stats.Expired++
		why = "tombstone past its lifetime"
	}
	if why != "" {
		if r.refuseLog.Allow() {
			r.log.Warn("configuration from a peer reflector refused", "object", c.Object(), "from", from,
				"reason", why, "future_total", r.stats.Future, "expired_total", r.stats.Expired)
		}
		return false, nil
	}
	took, err := r.putLocked(ctx, c)
	if took {
		r.stats.Adopted++
	}
	return took, err
}

// peerCopies is what a replicator holds of one peer reflector's copies.
type peerCopies struct {
	from     netip.Addr
	versions map[record.ConfigObject]record.Config // without payloads
	future   uint64
}

// notePeer records a copy a peer reflector originates (or withdrew).
func (r *ConfigReplicator) notePeer(c record.Config, from netip.Addr, withdrawn bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.peers[c.Reflector]
	if p == nil {
		p = &peerCopies{versions: map[record.ConfigObject]record.Config{}}
		r.peers[c.Reflector] = p
	}
	p.from = from
	if withdrawn {
		delete(p.versions, c.Object())
		return
	}
	c.Payload = nil
	p.versions[c.Object()] = c
}

// PeerCopies is what a replicator hears of one peer reflector (RouterID
// is 0 for a configured one not heard from yet): how many
// configuration parts it originates, the newest version among them (its
// generation clock is at least there), how many of this reflector's parts
// it does not carry at this reflector's version (it has not taken them:
// it refuses them, or they are on their way), and how many of its
// versions this reflector refused as too far in the future.
type PeerCopies struct {
	RouterID inof.RouterID
	Address  netip.Addr // the neighbor its copies came from last
	Parts    int        // the parts it originates now
	// Newest is the highest generation among them (0 when it originates
	// none), written by NewestWriter.
	Newest       uint64
	NewestWriter inof.RouterID
	// Behind counts the parts this reflector originates that the peer
	// lacks or carries at an older version.
	Behind int
	// Future counts its versions refused as more than
	// inof.MaxGenerationSkew ahead of this reflector's clock; Deferred
	// those still held back (adopted once this clock is within the skew).
	Future   uint64
	Deferred int
	// Session is the state of the BGP session with it ("" when it is no
	// longer a configured neighbor).
	Session string
}

// Peers returns what the replicator hears of each peer reflector: those
// that sent it a configuration part and those configured (the speaker's
// neighbors marked PeerReflector) that have not, sorted by router-id. A
// configured peer's session state is in Session.
func (r *ConfigReplicator) Peers(ctx context.Context) ([]PeerCopies, error) {
	ns, err := r.cfg.Speaker.Neighbors(ctx)
	if err != nil {
		return nil, fmt.Errorf("bgp: neighbors: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]PeerCopies, 0, len(r.peers))
	for rid, p := range r.peers {
		pc := PeerCopies{RouterID: rid, Address: p.from, Parts: len(p.versions), Future: p.future}
		for _, c := range p.versions {
			if c.Gen > pc.Newest {
				pc.Newest, pc.NewestWriter = c.Gen, c.Writer
			}
		}
		for ours := range r.objects.all() {
			if theirs, ok := p.versions[ours.Object()]; !ok || ours.Newer(&theirs) {
				pc.Behind++
			}
		}
		for _, d := range r.deferred {
			if d.rec.Reflector == rid {
				pc.Deferred++
			}
		}
		out = append(out, pc)
	}
	for _, n := range ns {
		if !n.PeerReflector {
			continue
		}
		var rid inof.RouterID
		if n.RouterID.IsValid() {
			rid, _ = inof.ParseRouterID(n.RouterID.String())
		}
		i := slices.IndexFunc(out, func(pc PeerCopies) bool { return pc.Address == n.Address || (rid != 0 && pc.RouterID == rid) })
		if i < 0 {
			out = append(out, PeerCopies{RouterID: rid, Address: n.Address, Behind: r.objects.n})
			i = len(out) - 1
		}
		out[i].Session = n.State.String()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].RouterID != out[j].RouterID {
			return out[i].RouterID < out[j].RouterID
		}
		return out[i].Address.Less(out[j].Address)
	})
	return out, nil
}

// Stats returns the replicator's counters.
func (r *ConfigReplicator) Stats() ReplicatorStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Len returns how many parts this reflector originates.
func (r *ConfigReplicator) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.objects.n
}

// Parts returns the parts of one object this reflector originates (copies,
// by part; the payloads are shared, not to be changed): a look-up, for
// reconciling the objects a commit touched.
func (r *ConfigReplicator) Parts(kind uint8, name string) []record.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.objects.byKind[kind][name]
	out := make([]record.Config, 0, len(ps))
	for _, c := range ps {
		out = append(out, c)
	}
	sortConfig(out)
	return out
}

// OfKind returns the parts of every object of one kind this reflector
// originates (copies, sorted, payloads shared as in Parts), without visiting
// the other kinds.
func (r *ConfigReplicator) OfKind(kind uint8) []record.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record.Config
	for _, ps := range r.objects.byKind[kind] {
		for _, c := range ps {
			out = append(out, c)
		}
	}
	sortConfig(out)
	return out
}

// partIndex holds configuration parts by kind, name and part, so that one
// object's parts, or one kind's, are found without visiting them all. It is
// the replicator's state: used with the replicator's lock held, and never
// handed out.
type partIndex struct {
	byKind map[uint8]map[string]map[uint16]record.Config
	n      int // parts held
}

func (x *partIndex) get(o record.ConfigObject) (record.Config, bool) {
	c, ok := x.byKind[o.Kind][o.Name][o.Part]
	return c, ok
}

func (x *partIndex) put(c record.Config) {
	names := x.byKind[c.Kind]
	if names == nil {
		names = map[string]map[uint16]record.Config{}
		x.byKind[c.Kind] = names
	}
	ps := names[c.Name]
	if ps == nil {
		ps = map[uint16]record.Config{}
		names[c.Name] = ps
	}
	if _, ok := ps[c.Part]; !ok {
		x.n++
	}
	ps[c.Part] = c
}

func (x *partIndex) delete(o record.ConfigObject) {
	names := x.byKind[o.Kind]
	ps := names[o.Name]
	if _, ok := ps[o.Part]; !ok {
		return
	}
	delete(ps, o.Part)
	x.n--
	if len(ps) == 0 {
		delete(names, o.Name)
	}
	if len(names) == 0 {
		delete(x.byKind, o.Kind)
	}
}

// all visits every part; the visit may delete the part it is given.
func (x *partIndex) all() iter.Seq[record.Config] {
	return func(yield func(record.Config) bool) {
		for _, names := range x.byKind {
			for _, ps := range names {
				for _, c := range ps {
					if !yield(c) {
						return
					}
				}
			}
		}
	}
}

func sortConfig(cs []record.Config) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Kind != cs[j].Kind {
			return cs[i].Kind < cs[j].Kind
		}
		if cs[i].Name != cs[j].Name {
			return cs[i].Name < cs[j].Name
		}
		return cs[i].Part < cs[j].Part
	})
}

// ConfigView is a reader's view of the configuration (switch agents, and
// tests): it holds every reflector's copy and answers per object with the
// newest version. A copy vanishing with its reflector changes nothing while
// another reflector still carries the same version.
type ConfigView struct {
	mu     sync.Mutex
	copies map[record.ConfigObject]map[inof.RouterID]record.Config
}

// NewConfigView returns an empty view.
func NewConfigView() *ConfigView {
	return &ConfigView{copies: map[record.ConfigObject]map[inof.RouterID]record.Config{}}
}

// Apply feeds a record event; it returns the object's newest version after
// the event and whether that changed (ok is false when no copy is left).
func (v *ConfigView) Apply(ev bgp.RecordEvent) (newest record.Config, ok, changed bool) {
	var obj record.ConfigObject
	var refl inof.RouterID
	if c, isCfg := ev.Record.(*record.Config); isCfg {
		obj, refl = c.Object(), c.Reflector
	} else if ev.Withdrawn && len(ev.Key) > 0 && record.Type(ev.Key[0]) == record.TypeConfig {
		if c, err := record.ParseConfigKey(ev.Key); err == nil {
			obj, refl = c.Object(), c.Reflector
		} else {
			return record.Config{}, false, false
		}
	} else {
		return record.Config{}, false, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	before, hadBefore := v.newestLocked(obj)
	if v.copies[obj] == nil {
		v.copies[obj] = map[inof.RouterID]record.Config{}
	}
	if ev.Withdrawn {
		delete(v.copies[obj], refl)
	} else {
		v.copies[obj][refl] = *ev.Record.(*record.Config)
	}
	after, has := v.newestLocked(obj)
	if !has {
		delete(v.copies, obj)
	}
	changed = has != hadBefore || (has && (after.Gen != before.Gen || after.Writer != before.Writer))
	return after, has, changed
}

func (v *ConfigView) newestLocked(obj record.ConfigObject) (record.Config, bool) {
	var best record.Config
	found := false
	for _, c := range v.copies[obj] {
		if !found || c.Newer(&best) {
			best, found = c, true
		}
	}
	return best, found
}

// Objects returns the newest version of every object, tombstones included,
// sorted by kind and name.
func (v *ConfigView) Objects() []record.Config {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []record.Config
	for obj := range v.copies {
		if c, ok := v.newestLocked(obj); ok {
			out = append(out, c)
		}
	}
	sortConfig(out)
	return out
}
