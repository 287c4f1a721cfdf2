package api

import (
	"sync"
	"time"
)

// Event is one entry of the event feed: a registration, a record, a host
// notification, a session change or a zoning commit.
type Event struct {
	Seq        uint64 // set by Publish: 1, 2, 3, …
	Time       time.Time
	Kind       string // "registration", "record", "notification", "session", "zoning"
	Subject    string // what it is about: an address, a peer, a revision
	Message    string
	Attributes map[string]string
}

// Feed is a bounded ring of the latest events, numbered in order. Publish
// never blocks: a subscriber that reads too slowly finds the events it
// missed gone and is told so (a gap) instead of holding the publisher back.
// A Feed's epoch tells one process's numbering from the next one's.
type Feed struct {
	epoch uint64
	now   func() time.Time

	mu   sync.Mutex
	ring []Event // ring[(seq-1) % len(ring)] holds event seq
	last uint64  // seq of the latest event; 0 before the first
	wake chan struct{}
}

// FeedOptions configure NewFeed.
type FeedOptions struct {
	// Size is how many events the feed keeps (default 4096).
	Size int
	// Epoch names this feed's numbering (default: the creation time in
	// nanoseconds, which differs between restarts).
	Epoch uint64
	// Now is the clock stamping events (time.Now if nil).
	Now func() time.Time
}

// NewFeed returns an empty feed.
func NewFeed(o FeedOptions) *Feed {
	if o.Size <= 0 {
		o.Size = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Epoch == 0 {
		o.Epoch = uint64(o.Now().UnixNano())
	}
	return &Feed{epoch: o.Epoch, now: o.Now, ring: make([]Event, o.Size), wake: make(chan struct{})}
}

// Epoch returns the feed's epoch.
func (f *Feed) Epoch() uint64 { return f.epoch }

// Publish numbers e, stamps it (unless it has a time) and appends it,
// dropping the oldest event when the ring is full. It never blocks. Every
// event carries an identity attribute: who caused it, or "fabric" for what
// the fabric reports by itself (registrations, records, sessions). The feed
// keeps e.Attributes: do not change the map afterwards.
func (f *Feed) Publish(e Event) {
	if e.Time.IsZero() {
		e.Time = f.now()
	}
	if e.Attributes["identity"] == "" {
		attrs := make(map[string]string, len(e.Attributes)+1)
		for k, v := range e.Attributes {
			attrs[k] = v
		}
		attrs["identity"] = "fabric"
		e.Attributes = attrs
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last++
	e.Seq = f.last
	f.ring[(e.Seq-1)%uint64(len(f.ring))] = e
	close(f.wake)
	f.wake = make(chan struct{})
}

// Last returns the sequence number of the latest event (0 if none).
func (f *Feed) Last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// read returns up to limit events after seq after, the seq of the oldest
// event still kept (after the last one when the feed is empty), and a
// channel closed by the next Publish.
func (f *Feed) read(after uint64, limit int) (evs []Event, oldest uint64, wake <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	oldest = 1
	if n := uint64(len(f.ring)); f.last > n {
		oldest = f.last - n + 1
	}
	for seq := max(after+1, oldest); seq <= f.last && len(evs) < limit; seq++ {
		evs = append(evs, f.ring[(seq-1)%uint64(len(f.ring))])
	}
	return evs, oldest, f.wake
}
