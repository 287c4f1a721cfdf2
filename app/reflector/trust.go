package reflector

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
)

// Who may publish what (docs/security.md). The reflector reads every record
// its neighbors send (its Adj-RIB-In) and refuses what a client does not
// own: any configuration record, and a device record whose key names
// another switch than the client's BGP identifier (or a client whose BGP
// identifier is not the address it peers from). A refused record is
// counted and logged at a rate limit, and its sender is quarantined: every
// record it sent is refused by the import policy, so the others see none
// of them, until the quarantine ends (option trust.quarantine) and it is heard
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

// quarantine is who sent what: the ownership checks, the refusal
// counters, and the quarantine loop fed by the Adj-RIB-In watch, which
// alone owns the clients in quarantine.
type quarantine struct {
	origins     table.Origins
	refusals    *table.Refusals
	offences    chan offence
	quarantined atomic.Int64 // clients in quarantine (metrics)
	period      time.Duration
	events      EventPublisher
	now         func() time.Time
	log         *slog.Logger
}

func newQuarantine(origins table.Origins, period time.Duration, events EventPublisher, now func() time.Time, log *slog.Logger) *quarantine {
	return &quarantine{origins: origins, refusals: table.NewRefusals(log), offences: make(chan offence, offenceQueue),
		period: period, events: events, now: now, log: log}
}

// owned reports whether ev's sender owns the record.
func (q *quarantine) owned(ev bgp.RecordEvent) bool { return q.origins.Check(ev) == "" }

// check is the Adj-RIB-In watch's check of who sent each record: it
// reports whether the sender owns it, and counts and reports the offence
// to the quarantine loop when not.
func (q *quarantine) check(ev bgp.RecordEvent) bool {
	reason := q.origins.Check(ev)
	if reason == "" {
		return true
	}
	q.refusals.Refuse(reason, ev)
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
	case q.offences <- offence{client: ev.Source, reason: reason, what: what}:
	default:
	}
	return false
}

// loop owns the quarantine state: it quarantines offenders on sp and
// releases them when their time is up, until ctx ends.
func (q *quarantine) loop(ctx context.Context, sp bgp.Speaker) {
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
			timer.Reset(max(next.Sub(q.now()), 0))
		}
		select {
		case <-ctx.Done():
			return
		case o := <-q.offences:
			if _, in := until[o.client]; in || q.period <= 0 {
				continue
			}
			if err := sp.Quarantine(ctx, o.client, true); err != nil {
				q.log.Error("quarantining a client", "client", o.client, "err", err)
				continue
			}
			until[o.client] = q.now().Add(q.period)
			q.quarantined.Store(int64(len(until)))
			q.log.Error("client quarantined: it published what it does not own; all its records are refused",
				"client", o.client, "reason", o.reason, "record", o.what, "for", q.period)
			q.events.Publish(api.Event{Kind: "trust", Subject: o.client.String(),
				Message:    fmt.Sprintf("switch %s quarantined for %s: it sent %s (%s)", o.client, q.period, o.what, o.reason),
				Attributes: map[string]string{"reason": o.reason, "state": "quarantined"}})
		case <-timer.C:
			now := q.now()
			for c, t := range until {
				if t.After(now) {
					continue
				}
				if err := sp.Quarantine(ctx, c, false); err != nil {
					q.log.Error("releasing a quarantined client", "client", c, "err", err)
					until[c] = now.Add(time.Minute) // try again
					continue
				}
				delete(until, c)
				q.log.Warn("client released from quarantine", "client", c)
				q.events.Publish(api.Event{Kind: "trust", Subject: c.String(),
					Message:    fmt.Sprintf("switch %s released from quarantine", c),
					Attributes: map[string]string{"state": "released"}})
			}
			q.quarantined.Store(int64(len(until)))
		}
	}
}
