package switchagent

import (
	"context"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof/configsync"
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

// setPublisher returns the set publisher once the speaker started (for
// the metrics).
func (a *Agent) setPublisher() *table.SetPublisher {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sets
}

// setFormat makes f the format in force (loop).
func (a *Agent) setFormat(f record.Format) {
	a.format = f
	a.formatShown.Store(uint32(f))
}

// publisher is the publisher of the format in force.
func (a *Agent) publisher() devicePublishing {
	if a.format == record.FormatSets {
		return a.sets
	}
	return a.pub
}

// switchOverWait bounds a switch-over's wait for the new records to go
// out before the old ones are taken away.
const switchOverWait = 10 * time.Second

// republish publishes the records saved before a restart, each in the
// format it was saved in, then moves those of the other format over.
func (a *Agent) republish(ctx context.Context, saved []table.PublishedDevice) {
	var devices, sets []table.PublishedDevice
	for _, d := range saved {
		if d.Set != 0 {
			sets = append(sets, d)
		} else {
			devices = append(devices, d)
		}
	}
	if err := a.pub.Republish(ctx, devices); err != nil {
		a.log.Warn("republishing saved records", "err", err)
	}
	wctx, cancel := context.WithTimeout(ctx, switchOverWait)
	defer cancel()
	if err := a.sets.Republish(wctx, sets); err != nil {
		a.log.Warn("republishing saved device sets", "err", err)
	}
	a.switchOver(ctx, a.format)
}

// onRecordFormat takes the fabric's record format.
func (a *Agent) onRecordFormat(ctx context.Context, c record.Config) {
	f, err := configsync.DecodeRecordFormat(c.Payload)
	if err != nil || c.Name != "" || c.Part != 0 {
		a.met.badConfig.Inc()
		a.log.Warn("record format refused", "err", err, "name", c.Name, "part", c.Part)
		return
	}
	if c.Deleted {
		f = record.FormatDevices
	}
	if f == a.format {
		return
	}
	a.log.Info("record format changed: republishing every device", "from", a.format.String(), "to", f.String(), "generation", c.Gen)
	a.setFormat(f)
	a.switchOver(ctx, f)
	a.dirty = true
}

// switchOver moves every device the other publisher holds to the one of
// format f: published there under the same epoch first, then withdrawn
// from the other (a receiver holds both copies for a moment and sees no
// change).
func (a *Agent) switchOver(ctx context.Context, f record.Format) {
	wctx, cancel := context.WithTimeout(ctx, switchOverWait)
	defer cancel()
	if f == record.FormatSets {
		moving := a.pub.Published()
		if len(moving) == 0 {
			return
		}
		if err := a.sets.Republish(wctx, moving); err != nil {
			a.log.Warn("switching to device sets", "err", err)
		}
		for _, d := range moving {
			if err := a.pub.Withdraw(ctx, d.Record.ID()); err != nil {
				a.log.Error("withdrawing a per-device record after the switch to sets", "device", d.Record.Device.Addr, "err", err)
			}
		}
		a.log.Info("devices now published in sets", "devices", len(moving))
		return
	}
	moving := a.sets.Published()
	if len(moving) == 0 {
		return
	}
	for i := range moving {
		moving[i].Set, moving[i].Shard = 0, 0
	}
	if err := a.pub.Republish(ctx, moving); err != nil {
		a.log.Warn("switching to per-device records", "err", err)
	}
	if err := a.sets.WithdrawAll(ctx); err != nil {
		a.log.Warn("withdrawing device sets after the switch to per-device records", "err", err)
	}
	if err := a.sets.Flush(wctx); err != nil {
		a.log.Warn("withdrawing device sets after the switch to per-device records", "err", err)
	}
	a.log.Info("devices now published per device", "devices", len(moving))
}
