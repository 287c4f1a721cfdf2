package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// Publishing devices in sets (docs/records.md, "Device sets"). A
// SetPublisher keeps one set per route-target set of the switch's devices,
// each split into shards that fit a record. Every change goes to the shard
// at once and the shard is sent by its own flush: when nothing is in
// flight for the shard and its last send began at least MinInterval ago,
// the change goes out at once; otherwise it waits for the UPDATE in flight
// and for the rest of the interval, and goes out with everything else that
// arrived meanwhile (group commit, spaced like BGP's MinRouteAdvertisement-
// Interval, but per shard and with the first change of a quiet shard sent
// at once). An idle fabric therefore adds no delay, and a busy one sends
// one UPDATE for many events.
//
// Moves follow the per-device rules, entry by entry. A device whose route
// targets change gets a new entry (a new epoch) in the set of its new
// route targets; once that shard was sent, its old entry is published
// inactive (reason zone change) if the move dropped a route target, and
// once that was sent it is removed. A move that keeps every route target
// (to a superset, or between the shards of one set when a sparse shard is
// merged into another) removes the old entry once the new one was sent:
// every receiver of the old entry receives the new one.

// SetPublisherOptions configure a SetPublisher.
type SetPublisherOptions struct {
	Speaker RecordPublisher
	// Switch is the router-id of the switch whose devices are published.
	Switch inof.RouterID
	// Clock issues set ids and epochs (nil: a clock on time.Now).
	Clock  *inof.Clock
	Logger *slog.Logger
	// MaxRecord bounds one shard's record, key and value and 8 bytes per
	// route target (0: record.MaxSize). Tests set less to split shards
	// sooner.
	MaxRecord int
	// MinInterval is the least time between the starts of two sends of one
	// shard (0: none, every send starts once the previous one returned).
	// A change to a shard whose last send began less than MinInterval ago
	// waits for the rest of it, batched with the changes made meanwhile.
	MinInterval time.Duration
	// Now and After are the clock the interval is kept on (nil: time.Now
	// and time.After); tests pass a fake.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// SetPublisher publishes a switch's devices in device set records. Publish
// and Withdraw only change the sets; flushes of their own send them
// (Flush waits for that). It is safe for concurrent use.
type SetPublisher struct {
	speaker RecordPublisher
	self    inof.RouterID
	clock   *inof.Clock
	log     *slog.Logger
	max     int
	spacing time.Duration
	now     func() time.Time
	timer   func(time.Duration) <-chan time.Time
	ctx     context.Context // the flushes' (Close ends it)
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	sets   map[string]*deviceSet // by route-target set (rtsKey)
	where  map[record.DeviceID]*setEntry
	// old holds per device its entries that are no longer current and
	// whose removal was not sent yet; waiting, the removals that wait for
	// them (a copy is never taken out while an older one is still out
	// there: receivers would fall back to the older one).
	old     map[record.DeviceID][]*setEntry
	waiting map[record.DeviceID][]func()
	busy    int                 // shards flushing
	idle    chan struct{}       // closed when busy drops to 0 (nil while 0)
	holding int                 // Batch calls running
	held    map[*shard]struct{} // shards changed while holding, their flushes not started
	stats   SetPublisherStats
	errLog  ratelimit.Limit
	// sorting is record's scratch space.
	sorting []*setEntry
}

// SetPublisherStats count a SetPublisher's work.
type SetPublisherStats struct {
	// Changes counts the entry changes made (a device published or
	// withdrawn, an old entry retired, a shard merged), Updates the set
	// records sent and Withdraws the shard keys withdrawn: Changes /
	// Updates is how many changes one UPDATE carried.
	Changes, Updates, Withdraws uint64
	Errors                      uint64 // failed sends (logged at a rate limit)
	Splits, Merges              uint64 // shards opened beside another of their set; sparse shards merged
	Sets, Shards                int    // held now
}

type deviceSet struct {
	id     uint64
	key    string
	rts    []record.RouteTarget // sorted
	shards map[uint16]*shard
}

type shard struct {
	set     *deviceSet
	n       uint16
	entries map[record.DeviceKey]*setEntry
	size    int // the entries' encoded bytes
	// version counts the shard's changes; sent is the version of the last
	// send that completed; after runs once sent reaches each op's version.
	version, sent uint64
	after         []pendingOp
	removing      []*setEntry // entries taken out, until their removal is sent
	flushing      bool
	published     bool      // the key is in BGP (an empty shard must be withdrawn)
	lastSend      time.Time // when the last send began (zero: never)
}

type setEntry struct {
	rec   record.Device
	shard *shard
	// goneAt is the shard version whose send takes the entry out (0 while
	// it is in).
	goneAt uint64
}

type pendingOp struct {
	version uint64
	run     func()
}

// NewSetPublisher returns a publisher; Close ends it.
func NewSetPublisher(opts SetPublisherOptions) (*SetPublisher, error) {
	if opts.Speaker == nil {
		return nil, errors.New("bgp: set publisher needs a speaker")
	}
	if opts.Clock == nil {
		opts.Clock = inof.NewClock(nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxRecord <= 0 || opts.MaxRecord > record.MaxSize {
		opts.MaxRecord = record.MaxSize
	}
	if opts.MinInterval < 0 {
		return nil, fmt.Errorf("bgp: set publisher: negative interval %v", opts.MinInterval)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &SetPublisher{speaker: opts.Speaker, self: opts.Switch, clock: opts.Clock, log: opts.Logger,
		max: opts.MaxRecord, spacing: opts.MinInterval, now: opts.Now, timer: opts.After, ctx: ctx, cancel: cancel, sets: map[string]*deviceSet{},
		where: map[record.DeviceID]*setEntry{}, old: map[record.DeviceID][]*setEntry{}, waiting: map[record.DeviceID][]func(){},
		held: map[*shard]struct{}{}, errLog: ratelimit.Limit{Every: time.Second}}, nil
}

// ErrPublisherClosed is returned by a SetPublisher after Close.
var ErrPublisherClosed = errors.New("bgp: set publisher closed")

// Publish puts rec in the set of its route targets (the publisher sets
// rec.Epoch): a first publication takes a new epoch, one with the same
// route targets replaces the device's entry, one with other route targets
// moves the device to that set (see the rules above). The send follows;
// an error returned is the record's own (invalid, too large).
func (p *SetPublisher) Publish(_ context.Context, rec record.Device, rts ...record.RouteTarget) error {
	if rec.Switch != p.self {
		return fmt.Errorf("bgp: publish device %s: %w: record of switch %s on switch %s", rec.Device.Addr, record.ErrMalformed, rec.Switch, p.self)
	}
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("bgp: publish device %s: %w", rec.Device.Addr, err)
	}
	rts = sortedRTs(rts)
	if n := record.MaxSize - record.DeviceSetCapacity(len(rts)) + record.DeviceSetEntrySize(&rec); n > p.max {
		return fmt.Errorf("bgp: publish device %s: %w: %d bytes with %d route targets (limit %d)", rec.Device.Addr, record.ErrTooLarge, n, len(rts), p.max)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrPublisherClosed
	}
	id := rec.ID()
	cur := p.where[id]
	set := p.setFor(rts)
	switch {
	case cur == nil:
		rec.Epoch = p.clock.Next()
		p.place(set, rec)
	case cur.shard.set == set && cur.shard.size-record.DeviceSetEntrySize(&cur.rec)+record.DeviceSetEntrySize(&rec) <= p.capacity(set):
		rec.Epoch = cur.rec.Epoch
		s := cur.shard
		s.size += record.DeviceSetEntrySize(&rec) - record.DeviceSetEntrySize(&cur.rec)
		cur.rec = rec
		p.kick(s)
	default:
		// Another set (or no room left in its shard): a new entry, and
		// the old one retired once the new one is out.
		rec.Epoch = max(p.clock.Next(), cur.rec.Epoch+1)
		to := p.place(set, rec)
		p.retireAfter(cur, to, dropsAny(cur.shard.set.rts, rts))
	}
	return nil
}

// Withdraw removes the device's entry (publish it inactive with its reason
// first: an entry that vanishes while active means its switch is gone).
func (p *SetPublisher) Withdraw(_ context.Context, id record.DeviceID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrPublisherClosed
	}
	cur := p.where[id]
	if cur == nil {
		return nil
	}
	delete(p.where, id)
	p.old[id] = append(p.old[id], cur)
	if s := cur.shard; s.sent < s.version {
		// The entry's last state (inactive, normally) goes out before it
		// does, as a withdraw follows its inactive record.
		p.after(s, func() { p.remove(cur) })
	} else {
		p.remove(cur)
	}
	return nil
}

// WithdrawAll removes every device (a switch-over to per-device records,
// after those were published).
func (p *SetPublisher) WithdrawAll(ctx context.Context) error {
	p.mu.Lock()
	ids := make([]record.DeviceID, 0, len(p.where))
	for id := range p.where {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		if err := p.Withdraw(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Batch runs fn and holds back the sends of the shards that its Publish
// and Withdraw calls change until it returns, so that changes made
// together (the devices of a port that went down) go out in one UPDATE
// per shard, none of them behind another's interval. Batches may nest;
// Flush does not wait for what a running Batch holds back.
func (p *SetPublisher) Batch(fn func()) {
	p.mu.Lock()
	p.holding++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.holding--; p.holding > 0 {
			return
		}
		for s := range p.held {
			if !s.flushing && !p.closed {
				p.startFlush(s)
			}
		}
		clear(p.held)
	}()
	fn()
}

// Flush waits until every change made so far was sent (ctx bounds the
// wait).
func (p *SetPublisher) Flush(ctx context.Context) error {
	for {
		p.mu.Lock()
		idle := p.idle
		p.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("bgp: flushing device sets: %w", ctx.Err())
		}
	}
}

// Close ends the flushes (a send in flight is cancelled) and waits for
// them; later calls return ErrPublisherClosed.
func (p *SetPublisher) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// Stats returns the publisher's counters.
func (p *SetPublisher) Stats() SetPublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Sets = len(p.sets)
	for _, s := range p.sets {
		st.Shards += len(s.shards)
	}
	return st
}

// Published returns every device's current entry, with its route targets
// and where it is (Set, Shard), sorted by address: what a switch agent
// saves to republish after a restart.
func (p *SetPublisher) Published() []PublishedDevice {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PublishedDevice, 0, len(p.where))
	for _, e := range p.where {
		out = append(out, PublishedDevice{Record: e.rec, RouteTargets: slices.Clone(e.shard.set.rts),
			Set: e.shard.set.id, Shard: e.shard.n})
	}
	slices.SortFunc(out, func(a, b PublishedDevice) int { return a.Record.Device.Addr.Compare(b.Record.Device.Addr) })
	return out
}

// Republish puts saved devices back under their saved epochs, and those
// saved in sets (Set set) back in their set and shard, so that peers
// holding them as stale (graceful restart) see the same keys come back; a
// device saved as a record of its own (Set 0: a switch-over from
// per-device records) goes to the set of its route targets under its
// epoch. It moves the clock past the saved epochs and set ids and waits
// until everything was sent (ctx bounds that wait).
func (p *SetPublisher) Republish(ctx context.Context, saved []PublishedDevice) error {
	var errs []error
	p.mu.Lock()
	for _, d := range saved {
		rec := d.Record
		rts := sortedRTs(d.RouteTargets)
		if err := rec.Validate(); err != nil || rec.Switch != p.self || p.where[rec.ID()] != nil {
			errs = append(errs, fmt.Errorf("device %s: not republished: %v", rec.Device.Addr, cmp.Or(err, errors.New("another switch's, or a repeat"))))
			continue
		}
		p.clock.Advance(rec.Epoch)
		set := p.sets[rtsKey(rts)]
		if set == nil && d.Set != 0 {
			p.clock.Advance(d.Set)
			set = &deviceSet{id: d.Set, key: rtsKey(rts), rts: rts, shards: map[uint16]*shard{}}
			p.sets[set.key] = set
		} else if set == nil {
			set = p.setFor(rts)
		}
		if s := set.shards[d.Shard]; d.Set == set.id && (s == nil || s.size+record.DeviceSetEntrySize(&rec) <= p.capacity(set)) {
			if s == nil {
				s = &shard{set: set, n: d.Shard, entries: map[record.DeviceKey]*setEntry{}}
				set.shards[d.Shard] = s
			}
			p.add(s, rec)
			continue
		}
		p.place(set, rec)
	}
	p.mu.Unlock()
	errs = append(errs, p.Flush(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bgp: republish device sets: %w", err)
	}
	return nil
}
