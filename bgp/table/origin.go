package table

import (
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// Who may publish what (docs/security.md). Configuration records are
// originated by reflectors only; a device record is published only by the
// switch its key names. Both ends check it: a reflector refuses what a
// client sends that it does not own (and quarantines the client), and a
// switch applies only what its reflectors could vouch for.

// Refusal reasons, as the refused-records metrics label them.
const (
	// RefusedConfigFromClient: a client (switch) sent a configuration
	// record, whatever its route targets.
	RefusedConfigFromClient = "config-from-client"
	// RefusedConfigRT: a configuration record without the configuration
	// route target reached a switch (a reflector's always carry it, and a
	// client's that carry it never leave the reflector).
	RefusedConfigRT = "config-without-config-rt"
	// RefusedConfigOrigin: a configuration record whose key names another
	// reflector than the one it came from.
	RefusedConfigOrigin = "config-of-another-reflector"
	// RefusedOtherSwitch: a device record whose key names another switch
	// than the one that sent it.
	RefusedOtherSwitch = "device-of-another-switch"
	// RefusedSwitchAddress: a switch whose BGP identifier is not the
	// address it peers from (the binding the receivers check needs it).
	RefusedSwitchAddress = "switch-not-at-its-router-id"
)

// RefusalReasons lists every refusal reason, for metrics present from the
// start.
func RefusalReasons() []string {
	return []string{RefusedConfigFromClient, RefusedConfigRT, RefusedConfigOrigin, RefusedOtherSwitch, RefusedSwitchAddress}
}

// Origins holds what a receiver checks records against.
type Origins struct {
	Role bgp.SpeakerRole // the receiver's
	ASN  uint32          // the fabric's: its configuration route target
	// PeerReflector reports whether a neighbor address is a peer
	// reflector (reflector only; nil: none is).
	PeerReflector func(netip.Addr) bool
}

// Check returns "" if the record event may be taken, otherwise the refusal
// reason. Withdraws and this speaker's own records pass: a withdraw
// removes only the sender's own path, and what a daemon publishes itself
// it owns.
//
// On a switch (RoleClient), with ev from its Loc-RIB: a configuration
// record must carry the configuration route target (a client's never do
// past a reflector) and name in its key the reflector that sent it; a
// device record's next hop must be the address of the switch its key
// names (a reflector sets it to the sending switch's session address).
//
// On a reflector, with ev from its Adj-RIB-In: a client may send device
// records of its own only (the key's switch is its BGP identifier, which
// is the address it peers from) and no configuration record at all.
// Records of peer reflectors are the replicator's business.
func (o Origins) Check(ev bgp.RecordEvent) string {
	if ev.Withdrawn || ev.Local() || ev.Record == nil {
		return ""
	}
	switch r := ev.Record.(type) {
	case *record.Config:
		switch {
		case o.Role == bgp.RoleReflector:
			if o.PeerReflector == nil || !o.PeerReflector(ev.Source) {
				return RefusedConfigFromClient
			}
		case !slices.Contains(ev.RouteTargets, record.ConfigRT(o.ASN)):
			return RefusedConfigRT
		case r.Reflector != ev.SourceID:
			return RefusedConfigOrigin
		}
	case *record.Device:
		return o.checkSwitch(ev, r.Switch)
	case *record.DeviceSet:
		return o.checkSwitch(ev, r.Switch)
	case *record.Switch:
		return o.checkSwitch(ev, r.Switch)
	case *record.Discovery:
		return o.checkSwitch(ev, r.Switch)
	}
	return ""
}

// checkSwitch applies the rule of records a switch publishes about itself
// (device, device set, switch and discovery records): sw, the switch the
// key names, must be the one that sent it.
func (o Origins) checkSwitch(ev bgp.RecordEvent, sw inof.RouterID) string {
	switch {
	case o.Role == bgp.RoleReflector:
		if o.PeerReflector != nil && o.PeerReflector(ev.Source) {
			return ""
		}
		if ev.SourceID.Addr() != ev.Source {
			return RefusedSwitchAddress
		}
		if sw != ev.SourceID {
			return RefusedOtherSwitch
		}
	case sw.Addr() != ev.NextHop:
		return RefusedOtherSwitch
	}
	return ""
}

// Refusals counts refused records by reason and logs them at a rate limit.
// It is safe for concurrent use.
type Refusals struct {
	log *slog.Logger

	mu     sync.Mutex
	counts map[string]uint64
	limits map[string]*ratelimit.Limit // one per reason
}

// NewRefusals returns zeroed counters for every reason.
func NewRefusals(log *slog.Logger) *Refusals {
	r := &Refusals{log: log, counts: map[string]uint64{}, limits: map[string]*ratelimit.Limit{}}
	for _, reason := range RefusalReasons() {
		r.counts[reason] = 0
		r.limits[reason] = &ratelimit.Limit{Every: time.Second}
	}
	return r
}

// Refuse counts one refused record and logs it unless the rate limit
// holds it back.
func (r *Refusals) Refuse(reason string, ev bgp.RecordEvent) {
	r.mu.Lock()
	r.counts[reason]++
	lim := r.limits[reason]
	if lim == nil {
		lim = &ratelimit.Limit{Every: time.Second}
		r.limits[reason] = lim
	}
	n, logIt := r.counts[reason], lim.Allow()
	r.mu.Unlock()
	if !logIt {
		return
	}
	attrs := []any{"reason", reason, "from", ev.Source, "from_id", ev.SourceID, "next_hop", ev.NextHop,
		"refused_total", n}
	switch rec := ev.Record.(type) {
	case *record.Device:
		attrs = append(attrs, "key_switch", rec.Switch, "device", rec.Device.Addr)
	case *record.DeviceSet:
		attrs = append(attrs, "key_switch", rec.Switch, "set", rec.Set, "shard", rec.Shard, "devices", len(rec.Devices))
	case *record.Switch:
		attrs = append(attrs, "key_switch", rec.Switch)
	case *record.Discovery:
		attrs = append(attrs, "key_switch", rec.Switch)
	case *record.Config:
		attrs = append(attrs, "key_reflector", rec.Reflector, "object", rec.Object())
	}
	r.log.Warn("record refused: its sender does not own it", attrs...)
}

// Counts returns the refused records by reason (every reason present).
func (r *Refusals) Counts() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}
