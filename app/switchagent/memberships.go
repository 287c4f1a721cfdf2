package switchagent

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
)

// MembershipLinger is how long a switch keeps a route-target membership
// it no longer wants before it withdraws it (make before break). A zone
// edit that moves a remote device out of a zone makes its switch publish
// it under a new epoch with the new route targets and retire the old
// epoch (inactive with reason zone change, then withdrawn) under the old
// ones; the same edit may make this switch drop the old zone's
// membership. Withdrawn at once, the membership can reach the reflector
// before the device's new epoch does, and the reflector then withdraws the
// old epoch from this switch while it is still active here: the device
// seems to have lost its switch (reason 7, BFD down) until the new epoch
// arrives, milliseconds later. Kept this long, the old membership carries
// the retirement, which the engine waits on (RetireGrace), and the new
// epoch arrives under the new membership. The bound is the same as
// RetireGrace's: how far apart two switches put one edit in force.
const MembershipLinger = RetireGrace

// memberships are the route-target memberships a switch holds, one per
// zone name (or everyZone), and when each one it no longer wants is to be
// withdrawn. The loop owns it.
type memberships struct {
	held map[string]bool      // announced
	drop map[string]time.Time // held, no longer wanted: withdraw at that time
}

func newMemberships() *memberships {
	return &memberships{held: map[string]bool{}, drop: map[string]time.Time{}}
}

// want makes zs the zones wanted at now and returns those to announce
// (sorted; Announced marks each one done). A held zone missing from zs is
// withdrawn MembershipLinger later (Due), unless wanted again before.
func (m *memberships) want(zs []string, now time.Time) []string {
	var add []string
	for _, z := range zs {
		delete(m.drop, z)
		if !m.held[z] {
			add = append(add, z)
		}
	}
	for z := range m.held {
		if _, dropping := m.drop[z]; !dropping && !slices.Contains(zs, z) {
			m.drop[z] = now.Add(MembershipLinger)
		}
	}
	slices.Sort(add)
	return slices.Compact(add)
}

// announced records that the membership of z was announced.
func (m *memberships) announced(z string) { m.held[z] = true }

// due returns the held zones whose withdrawal time came by now, sorted.
func (m *memberships) due(now time.Time) []string {
	var out []string
	for z, at := range m.drop {
		if !now.Before(at) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// withdrawn records that the membership of z was withdrawn.
func (m *memberships) withdrawn(z string) {
	delete(m.held, z)
	delete(m.drop, z)
}

// kept returns the held zones still wanted (none due to go), sorted.
func (m *memberships) kept() []string {
	var out []string
	for z := range m.held {
		if _, dropping := m.drop[z]; !dropping {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// retry puts the withdrawal of z off until MembershipLinger after now (the
// last one failed).
func (m *memberships) retry(z string, now time.Time) { m.drop[z] = now.Add(MembershipLinger) }

// next returns when a withdrawal is due next.
func (m *memberships) next() (time.Time, bool) {
	var next time.Time
	for _, at := range m.drop {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// zoneMemberships are the switch's memberships in BGP: announced and
// withdrawn through the speaker, by the linger of memberships, and kept
// while a record in use arrives under one alone (carriers). The loop owns
// it.
type zoneMemberships struct {
	speaker bgp.Speaker
	asn     uint32
	log     *slog.Logger
	subs    *memberships    // zones subscribed to
	carried *carriers       // route targets of the remote device records held (carriers.go)
	kept    map[string]bool // memberships kept past their linger for carried records
}

func newZoneMemberships(sp bgp.Speaker, asn uint32, log *slog.Logger) *zoneMemberships {
	return &zoneMemberships{speaker: sp, asn: asn, log: log, subs: newMemberships(), carried: newCarriers(),
		kept: map[string]bool{}}
}

// subscribe makes ms the memberships wanted: new ones are announced at
// once; those no longer wanted go MembershipLinger later (unsubscribeDue).
func (m *zoneMemberships) subscribe(ctx context.Context, ms []string) {
	for _, z := range m.subs.want(ms, time.Now()) {
		if err := m.speaker.Subscribe(ctx, m.rt(z)); err != nil {
			m.log.Error("subscribing to zone", "zone", membershipName(z), "err", err)
			continue
		}
		m.subs.announced(z)
	}
}

// unsubscribeDue withdraws the memberships whose linger ended by now,
// except those a record a local host uses (inUse) still needs.
func (m *zoneMemberships) unsubscribeDue(ctx context.Context, now time.Time, inUse func(netip.Addr) bool) {
	due := m.subs.due(now)
	if len(due) == 0 {
		return
	}
	var kept []record.RouteTarget
	for _, z := range m.subs.kept() {
		kept = append(kept, m.rt(z))
	}
	for _, z := range due {
		if d, ok := m.carried.needs(m.rt(z), kept, inUse); ok {
			if !m.kept[z] {
				m.log.Info("keeping a zone membership: a record hosts here use still carries only its route target (its switch has not re-tagged it yet)",
					"zone", membershipName(z), "device", d)
			}
			m.kept[z] = true
			m.subs.retry(z, now)
			continue
		}
		if err := m.speaker.Unsubscribe(ctx, m.rt(z)); err != nil {
			m.log.Error("unsubscribing from zone", "zone", membershipName(z), "err", err)
			m.subs.retry(z, now)
			continue
		}
		delete(m.kept, z)
		m.subs.withdrawn(z)
	}
}

// rt is the route target of zone z's membership.
func (m *zoneMemberships) rt(z string) record.RouteTarget {
	if z == everyZone {
		return record.AnyRT
	}
	return record.ZoneRT(m.asn, z)
}
