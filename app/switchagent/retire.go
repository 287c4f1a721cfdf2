package switchagent

import (
	"net/netip"
	"slices"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// RetireGrace is how long a remote device whose record was retired for a
// zone change (inactive with reason 4, then withdrawn: its switch moved it
// to a new epoch with other route targets) stays as it was, waiting for the
// new epoch. The retirement travels under the old route targets, which this
// switch may already hold, the new epoch under the new ones, which it may
// be subscribing to at that very moment; without the wait a host that sees
// the device before and after would be told "inactive, zone change" and
// then "active" (nvme-snsd deletes its controllers on reason 4).
const RetireGrace = 3 * time.Second

type retiringDevice struct {
	dev    inof.Device
	until  time.Time
	reason inof.Reason
}

// retirements holds the Engine's remote devices whose record was retired
// for a zone change while they were active (see hold): they stay as they
// were until their new epoch arrives or RetireGrace ends.
type retirements map[netip.Addr]retiringDevice

// hold reports whether addr's record was just retired for a zone change
// (inactive with reason 4, or withdrawn after that) while the device was
// active in ix, and keeps it as it was (in the index, unchanged for the
// hosts) until RetireGrace after clock's now ends: its switch moved it to
// a new epoch, which is on its way. A record of the device becoming active
// ends the wait (Engine.refreshFrom), and so does Engine.Tick at the
// deadline. Local devices never retire here: their epochs are the
// publisher's business.
func (rs retirements) hold(ix *zones.Index, addr netip.Addr, cur inof.Report, present bool, goneWhy inof.Reason,
	clock func() time.Time) bool {
	if present && cur.State == inof.StateActive {
		return false
	}
	reason := goneWhy
	if present {
		reason = cur.Reason
	}
	if reason != inof.ReasonZoneChange {
		return false
	}
	if r, ok := rs[addr]; ok {
		r.reason = reason
		rs[addr] = r
		return true
	}
	dev, was := ix.Device(addr)
	if !was {
		return false // it was not usable here: nothing to keep
	}
	rs[addr] = retiringDevice{dev: dev, until: clock().Add(RetireGrace), reason: reason}
	return true
}

// due returns, sorted, the devices whose wait ended at now.
func (rs retirements) due(now time.Time) []netip.Addr {
	var due []netip.Addr
	for a, r := range rs {
		if !now.Before(r.until) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, netip.Addr.Compare)
	return due
}

// next returns when the first wait ends, false if none is held.
func (rs retirements) next() (time.Time, bool) {
	var next time.Time
	ok := false
	for _, r := range rs {
		if !ok || r.until.Before(next) {
			next, ok = r.until, true
		}
	}
	return next, ok
}
