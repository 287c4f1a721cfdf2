package switchagent

import (
	"slices"
	"time"
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
