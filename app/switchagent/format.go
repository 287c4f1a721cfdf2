package switchagent

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
)

// Record formats (docs/records.md, "Rolling upgrade"). A switch reads both
// formats always, announces so in its switch record, and publishes in the
// fabric's format: per-device until the reflectors carry the setting
// "sets", which they accept only once every switch announced it reads
// sets. A switch-over republishes every device in the new format under
// its epoch and then takes the old records away, so no receiver sees a
// device leave.

// devicePublishing is what the agent asks of a publisher.
type devicePublishing interface {
	Publish(ctx context.Context, rec record.Device, rts ...record.RouteTarget) error
	Withdraw(ctx context.Context, id record.DeviceID) error
	// Batch runs fn, whose changes go out together.
	Batch(fn func())
}

// publishers are the two publishers of the switch's device records, one
// per format, and the format in force (owned by the loop).
type publishers struct {
	log    *slog.Logger
	self   inof.RouterID
	asn    uint32
	pub    *table.DevicePublisher // per-device records
	sets   *table.SetPublisher    // device set records
	format record.Format
	shown  atomic.Uint32 // format, for the metrics
}

// newPublishers builds the publishers on a started speaker.
func newPublishers(sp bgp.Speaker, self inof.RouterID, o Options, log *slog.Logger) (*publishers, error) {
	clock := inof.NewClock(nil) // one for both: a switch-over keeps epochs, later moves go above them
	pub, err := table.NewDevicePublisher(table.DevicePublisherOptions{Speaker: sp, Clock: clock})
	if err != nil {
		return nil, err
	}
	sets, err := table.NewSetPublisher(table.SetPublisherOptions{Speaker: sp, Switch: self, Clock: clock, Logger: log,
		MinInterval: o.SetInterval})
	if err != nil {
		return nil, err
	}
	return &publishers{log: log, self: self, asn: o.ASN, pub: pub, sets: sets}, nil
}

// setFormat makes f the format in force (loop).
func (p *publishers) setFormat(f record.Format) {
	p.format = f
	p.shown.Store(uint32(f))
}

// shownFormat is the format in force, safe from any goroutine.
func (p *publishers) shownFormat() record.Format { return record.Format(p.shown.Load()) }

// publisher is the publisher of the format in force.
func (p *publishers) publisher() devicePublishing {
	if p.format == record.FormatSets {
		return p.sets
	}
	return p.pub
}

// published returns the records of both publishers (for the state file).
func (p *publishers) published() []table.PublishedDevice {
	return append(p.pub.Published(), p.sets.Published()...)
}

// publish hands out's records to the publisher of the format in force, in
// one batch.
func (p *publishers) publish(ctx context.Context, out Output) {
	pub := p.publisher()
	pub.Batch(func() {
		for _, x := range out.Publish {
			rec := record.Device{Report: x.Record}
			rts := make([]record.RouteTarget, 0, len(x.Zones))
			for _, z := range x.Zones {
				rts = append(rts, record.ZoneRT(p.asn, z))
			}
			if err := pub.Publish(ctx, rec, rts...); err != nil {
				p.log.Error("publishing device record", "device", x.Record.Device.String(), "err", err)
			}
		}
		for _, r := range out.Withdraw {
			if err := pub.Withdraw(ctx, record.DeviceID{Switch: p.self, Addr: r.Device.Addr}); err != nil {
				p.log.Error("withdrawing device record", "device", r.Device.String(), "err", err)
			}
		}
	})
}

// close sends the device set records still due (bounded by ctx) and
// stops the set publisher.
func (p *publishers) close(ctx context.Context) {
	if err := p.sets.Flush(ctx); err != nil {
		p.log.Warn("device set records not all sent before the stop", "err", err)
	}
	p.sets.Close()
}

// switchOverWait bounds a switch-over's wait for the new records to go
// out before the old ones are taken away.
const switchOverWait = 10 * time.Second

// republish publishes the records saved before a restart, each in the
// format it was saved in, then moves those of the other format over.
func (p *publishers) republish(ctx context.Context, saved []table.PublishedDevice) {
	var devices, sets []table.PublishedDevice
	for _, d := range saved {
		if d.Set != 0 {
			sets = append(sets, d)
		} else {
			devices = append(devices, d)
		}
	}
	if err := p.pub.Republish(ctx, devices); err != nil {
		p.log.Warn("republishing saved records", "err", err)
	}
	wctx, cancel := context.WithTimeout(ctx, switchOverWait)
	defer cancel()
	if err := p.sets.Republish(wctx, sets); err != nil {
		p.log.Warn("republishing saved device sets", "err", err)
	}
	p.switchOver(ctx, p.format)
}

// onRecordFormat takes the fabric's record format (loop); it reports
// whether the format changed (refused: counted on bad).
func (p *publishers) onRecordFormat(ctx context.Context, c record.Config, bad prometheus.Counter) bool {
	f, err := configsync.DecodeRecordFormat(c.Payload)
	if err != nil || c.Name != "" || c.Part != 0 {
		bad.Inc()
		p.log.Warn("record format refused", "err", err, "name", c.Name, "part", c.Part)
		return false
	}
	if c.Deleted {
		f = record.FormatDevices
	}
	if f == p.format {
		return false
	}
	p.log.Info("record format changed: republishing every device", "from", p.format.String(), "to", f.String(), "generation", c.Gen)
	p.setFormat(f)
	p.switchOver(ctx, f)
	return true
}

// switchOver moves every device the other publisher holds to the one of
// format f: published there under the same epoch first, then withdrawn
// from the other (a receiver holds both copies for a moment and sees no
// change).
func (p *publishers) switchOver(ctx context.Context, f record.Format) {
	wctx, cancel := context.WithTimeout(ctx, switchOverWait)
	defer cancel()
	if f == record.FormatSets {
		moving := p.pub.Published()
		if len(moving) == 0 {
			return
		}
		if err := p.sets.Republish(wctx, moving); err != nil {
			p.log.Warn("switching to device sets", "err", err)
		}
		for _, d := range moving {
			if err := p.pub.Withdraw(ctx, d.Record.ID()); err != nil {
				p.log.Error("withdrawing a per-device record after the switch to sets", "device", d.Record.Device.Addr, "err", err)
			}
		}
		p.log.Info("devices now published in sets", "devices", len(moving))
		return
	}
	moving := p.sets.Published()
	if len(moving) == 0 {
		return
	}
	for i := range moving {
		moving[i].Set, moving[i].Shard = 0, 0
	}
	if err := p.pub.Republish(ctx, moving); err != nil {
		p.log.Warn("switching to per-device records", "err", err)
	}
	if err := p.sets.WithdrawAll(ctx); err != nil {
		p.log.Warn("withdrawing device sets after the switch to per-device records", "err", err)
	}
	if err := p.sets.Flush(wctx); err != nil {
		p.log.Warn("withdrawing device sets after the switch to per-device records", "err", err)
	}
	p.log.Info("devices now published per device", "devices", len(moving))
}
