package reflector

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
)

// Who may publish what (docs/security.md). The reflector reads every record
// its neighbors send (its Adj-RIB-In) and refuses what a client does not
// own: any configuration record, and a device record whose key names
// another switch than the client's BGP identifier (or a client whose BGP
// identifier is not the address it peers from). A refused record is
// counted and logged at a rate limit, and its sender is quarantined: every
// record it sent is refused by the import policy, so the others see none
// of them, until the quarantine ends (trust.quarantine) and it is heard
// again. Switches check the same rules on what they receive.

// TrustOptions say what a reflector does with a client that publishes what
// it does not own.
type TrustOptions struct {
	// Quarantine is how long such a client's records are all refused; 0
	// refuses only the offending records (every switch refuses them too).
	Quarantine time.Duration `yaml:"quarantine"`
}

// DefaultQuarantine is the default trust.quarantine.
const DefaultQuarantine = 10 * time.Minute

// offence is a client caught publishing what it does not own.
type offence struct {
	client netip.Addr
	reason string
	what   string
}

// offenceQueue bounds the offences waiting for the quarantine loop; one
// lost to a full queue comes back with the client's next record.
const offenceQueue = 64

// onReceived is the Adj-RIB-In watch's callback: it checks who sent each
// record and reports offences to the quarantine loop.
func (r *Reflector) onReceived(ev bgp.RecordEvent) {
	reason := r.origins.Check(ev)
	if reason == "" {
		r.noteSwitch(ev)
		return
	}
	r.refusals.Refuse(reason, ev)
	what := "a configuration record"
	switch d := ev.Record.(type) {
	case *record.Device:
		what = fmt.Sprintf("a device record of switch %s (device %s)", d.Switch, d.Device.Addr)
	case *record.DeviceSet:
		what = fmt.Sprintf("a device set record of switch %s (%d devices)", d.Switch, len(d.Devices))
	case *record.Switch:
		what = fmt.Sprintf("a switch record of switch %s", d.Switch)
	case *record.Discovery:
		what = fmt.Sprintf("a discovery record of switch %s", d.Switch)
	}
	select {
	case r.offences <- offence{client: ev.Source, reason: reason, what: what}:
	default:
	}
}

// quarantineLoop owns the quarantine state: it quarantines offenders and
// releases them when their time is up, until ctx ends.
func (r *Reflector) quarantineLoop(ctx context.Context) {
	defer close(r.quarantineDone)
	until := map[netip.Addr]time.Time{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := time.Time{}
		for _, t := range until {
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
		if !next.IsZero() {
			timer.Reset(max(next.Sub(r.now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case o := <-r.offences:
			if _, in := until[o.client]; in || r.opts.Trust.Quarantine <= 0 {
				continue
			}
			if err := r.speaker.Quarantine(ctx, o.client, true); err != nil {
				r.log.Error("quarantining a client", "client", o.client, "err", err)
				continue
			}
			until[o.client] = r.now().Add(r.opts.Trust.Quarantine)
			r.quarantined.Store(int64(len(until)))
			r.log.Error("client quarantined: it published what it does not own; all its records are refused",
				"client", o.client, "reason", o.reason, "record", o.what, "for", r.opts.Trust.Quarantine)
			r.events.Publish(api.Event{Kind: "trust", Subject: o.client.String(),
				Message:    fmt.Sprintf("switch %s quarantined for %s: it sent %s (%s)", o.client, r.opts.Trust.Quarantine, o.what, o.reason),
				Attributes: map[string]string{"reason": o.reason, "state": "quarantined"}})
		case <-timer.C:
			now := r.now()
			for c, t := range until {
				if t.After(now) {
					continue
				}
				if err := r.speaker.Quarantine(ctx, c, false); err != nil {
					r.log.Error("releasing a quarantined client", "client", c, "err", err)
					until[c] = now.Add(time.Minute) // try again
					continue
				}
				delete(until, c)
				r.log.Warn("client released from quarantine", "client", c)
				r.events.Publish(api.Event{Kind: "trust", Subject: c.String(),
					Message:    fmt.Sprintf("switch %s released from quarantine", c),
					Attributes: map[string]string{"state": "released"}})
			}
			r.quarantined.Store(int64(len(until)))
		}
	}
}
