package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// Moving a device between zones. GoBGP checks a peer's route-target
// constraint before its export policy and, when a record's new route
// targets no longer interest a peer, sends that peer nothing: the peer keeps
// the old value, active, for ever. So a device record never loses a route
// target under one key. DevicePublisher publishes the device under a new
// epoch with the new route targets, then the old epoch as inactive (reason
// zone change) with the old route targets, then withdraws the old epoch.
// DeviceTable, on the receiving side, shows per (switch, address) the
// record with the highest epoch present. A switch interested in the old
// and the new zones sees the device stay; one interested only in the old
// zones sees it inactive with reason zone change, then gone; one interested
// only in the new zones gets it.

// RecordPublisher publishes and withdraws records (every Speaker does).
type RecordPublisher interface {
	Publish(ctx context.Context, r record.Record, rts ...record.RouteTarget) error
	Withdraw(ctx context.Context, key []byte) error
}

// DevicePublisherOptions configure a DevicePublisher.
type DevicePublisherOptions struct {
	Speaker RecordPublisher
	// Clock issues epochs; they stay above the ones used before a restart
	// as long as the wall clock moved on. Nil means a clock on time.Now.
	Clock *inof.Clock
}

// DevicePublisher publishes a switch's device records and remembers each
// one's epoch and route targets, so that a change of route targets takes
// the device out of the zones it left (see the comment above). It is safe
// for concurrent use.
type DevicePublisher struct {
	speaker RecordPublisher
	clock   *inof.Clock

	mu        sync.Mutex
	published map[record.DeviceID]publishedDevice
}

type publishedDevice struct {
	rec record.Device
	rts []record.RouteTarget
}

// NewDevicePublisher returns a publisher.
func NewDevicePublisher(opts DevicePublisherOptions) (*DevicePublisher, error) {
	if opts.Speaker == nil {
		return nil, errors.New("bgp: device publisher needs a speaker")
	}
	if opts.Clock == nil {
		opts.Clock = inof.NewClock(nil)
	}
	return &DevicePublisher{speaker: opts.Speaker, clock: opts.Clock, published: map[record.DeviceID]publishedDevice{}}, nil
}

// Publish publishes rec with the route targets of the device's zones; the
// publisher sets rec.Epoch. A first publication takes a new epoch; one that
// keeps or adds route targets replaces the record under the same epoch; one
// that drops a route target moves the device to a new epoch and retires the
// old one (inactive with reason zone change, then withdrawn).
func (p *DevicePublisher) Publish(ctx context.Context, rec record.Device, rts ...record.RouteTarget) error {
	if err := rec.Validate(); err != nil {
		return fmt.Errorf("bgp: publish device %s: %w", rec.Device.Addr, err)
	}
	rts = slices.Clone(rts)
	p.mu.Lock()
	defer p.mu.Unlock()
	id := rec.ID()
	old, known := p.published[id]
	retire := known && dropsAny(old.rts, rts)
	switch {
	case !known:
		rec.Epoch = p.clock.Next()
	case retire:
		rec.Epoch = max(p.clock.Next(), old.rec.Epoch+1)
	default:
		rec.Epoch = old.rec.Epoch
	}
	if err := p.speaker.Publish(ctx, &rec, rts...); err != nil {
		return fmt.Errorf("bgp: publish device %s: %w", rec.Device.Addr, err)
	}
	p.published[id] = publishedDevice{rec: rec, rts: rts}
	if !retire {
		return nil
	}
	gone := old.rec
	gone.State, gone.Reason, gone.Changed = inof.StateInactive, inof.ReasonZoneChange, p.clock.Now()
	errInactive := p.speaker.Publish(ctx, &gone, old.rts...)
	if err := errors.Join(errInactive, p.speaker.Withdraw(ctx, gone.Key())); err != nil {
		return fmt.Errorf("bgp: retire epoch %d of device %s: %w", gone.Epoch, rec.Device.Addr, err)
	}
	return nil
}

// Batch runs fn. A DevicePublisher sends each record within its Publish
// or Withdraw call, so there is nothing to hold back; it is here so that a
// switch's two publishers share one interface with SetPublisher.
func (p *DevicePublisher) Batch(fn func()) { fn() }

// Withdraw withdraws the device's record (publish it as inactive with its
// reason first: a record that vanishes while active means its switch is
// gone).
func (p *DevicePublisher) Withdraw(ctx context.Context, id record.DeviceID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.published[id]
	if !ok {
		return nil
	}
	if err := p.speaker.Withdraw(ctx, old.rec.Key()); err != nil {
		return fmt.Errorf("bgp: withdraw device %s: %w", id.Addr, err)
	}
	delete(p.published, id)
	return nil
}

// PublishedDevice is one record a DevicePublisher holds published, with its
// route targets: what a switch agent saves to republish after a restart.
type PublishedDevice struct {
	Record       record.Device
	RouteTargets []record.RouteTarget
	// Set and Shard say which device set record holds it (SetPublisher);
	// Set is 0 for a record of its own (DevicePublisher).
	Set   uint64 `json:",omitempty"`
	Shard uint16 `json:",omitempty"`
}

// Published returns every record held published, sorted by address.
func (p *DevicePublisher) Published() []PublishedDevice {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PublishedDevice, 0, len(p.published))
	for _, d := range p.published {
		out = append(out, PublishedDevice{Record: d.rec, RouteTargets: slices.Clone(d.rts)})
	}
	slices.SortFunc(out, func(a, b PublishedDevice) int { return a.Record.Device.Addr.Compare(b.Record.Device.Addr) })
	return out
}

// Republish publishes records saved before a restart under their saved
// epochs and route targets, so that peers holding them as stale (graceful
// restart) see the same keys come back, and a later zone move retires the
// right epoch. It also moves the clock past the saved epochs.
func (p *DevicePublisher) Republish(ctx context.Context, saved []PublishedDevice) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, d := range saved {
		rec := d.Record
		if err := rec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("device %s: %w", rec.Device.Addr, err))
			continue
		}
		p.clock.Advance(rec.Epoch)
		if err := p.speaker.Publish(ctx, &rec, d.RouteTargets...); err != nil {
			errs = append(errs, fmt.Errorf("device %s: %w", rec.Device.Addr, err))
			continue
		}
		p.published[rec.ID()] = publishedDevice{rec: rec, rts: slices.Clone(d.RouteTargets)}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bgp: republish: %w", err)
	}
	return nil
}

// dropsAny reports whether some route target of old is not in cur.
func dropsAny(old, cur []record.RouteTarget) bool {
	for _, rt := range old {
		if !slices.Contains(cur, rt) {
			return true
		}
	}
	return false
}
