package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
)

// Targets holds the device records this switch knows, merged per address.
// It is owned by one goroutine; it is not safe for concurrent use.
type Targets struct {
	// byAddr holds per address one record per switch, in no order: nearly
	// always one, so a slice (one small allocation) rather than a map.
	byAddr map[netip.Addr][]inof.Report
}

// NewTargets returns an empty table.
func NewTargets() *Targets { return &Targets{byAddr: map[netip.Addr][]inof.Report{}} }

// Put stores r, replacing the record of the same switch and address.
func (t *Targets) Put(r inof.Report) {
	rs := t.byAddr[r.Device.Addr]
	if i := slices.IndexFunc(rs, func(o inof.Report) bool { return o.Switch == r.Switch }); i >= 0 {
		rs[i] = r
		return
	}
	t.byAddr[r.Device.Addr] = append(rs, r)
}

// Remove drops the record of sw for addr. It returns the reason to give the
// hosts that were told the address is active, if the address is no longer
// active: the record's own reason when it had already gone inactive (its
// switch saw the device leave), or ReasonBFDDown when it vanished while
// still active, which in this fabric means its switch vanished (docs/design.md §3,
// "leaving is a status"). ok is false when another active record keeps the
// address active, or nothing was stored.
func (t *Targets) Remove(sw inof.RouterID, addr netip.Addr) (reason inof.Reason, ok bool) {
	rs := t.byAddr[addr]
	i := slices.IndexFunc(rs, func(o inof.Report) bool { return o.Switch == sw })
	if i < 0 {
		return 0, false
	}
	r := rs[i]
	if rs = slices.Delete(rs, i, i+1); len(rs) == 0 {
		delete(t.byAddr, addr)
	} else {
		t.byAddr[addr] = rs
	}
	if cur := t.best(addr); cur != nil && cur.State == inof.StateActive {
		return 0, false
	}
	if r.State == inof.StateActive {
		return inof.ReasonBFDDown, true
	}
	return r.Reason, true
}

// Get returns the merged state of addr: the preferred record
// (inof.Report.Preferred), as it came, so an inactive record never hides
// an active one and the choice does not depend on the order records came
// in. An address seen by two switches (a device moved, or a NIC on a
// shared segment) is active while any of its records is active.
func (t *Targets) Get(addr netip.Addr) (inof.Report, bool) {
	if best := t.best(addr); best != nil {
		return *best, true
	}
	return inof.Report{}, false
}

// best is Get without the copy: the table's own record, nil if none, valid
// until the next Put or Remove.
func (t *Targets) best(addr netip.Addr) *inof.Report {
	rs := t.byAddr[addr]
	if len(rs) == 0 {
		return nil
	}
	best := &rs[0]
	for i := 1; i < len(rs); i++ {
		if rs[i].Preferred(*best) {
			best = &rs[i]
		}
	}
	return best
}

// sameView reports whether merged states a and b (of Get) look the same
// to a host: the device, its state and, when inactive, the reason.
func sameView(a, b inof.Report) bool {
	if a.Device != b.Device || a.State != b.State {
		return false
	}
	return a.State == inof.StateActive || a.Reason == b.Reason
}

// Reports returns the records held for addr, one per switch, in no order.
// The slice is the table's: the caller must not keep or change it.
func (t *Targets) Reports(addr netip.Addr) []inof.Report { return t.byAddr[addr] }

// Len is the number of addresses held.
func (t *Targets) Len() int { return len(t.byAddr) }

// Why explains why a host can no longer use addr, for a target that is not
// among the host's visible active targets: the record's reason when the
// address is inactive, a zone change when it is active but not visible to
// the host, and def when nothing is known of it any more.
func (t *Targets) Why(addr netip.Addr, def inof.Reason) inof.Reason {
	cur := t.best(addr)
	switch {
	case cur == nil:
		return def
	case cur.State == inof.StateActive:
		return inof.ReasonZoneChange
	default:
		return cur.Reason
	}
}
