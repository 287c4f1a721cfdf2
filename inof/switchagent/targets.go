package switchagent

import (
	"net/netip"
	"time"

	"github.com/openinof/inof/inof"
)

// Record is one switch's view of one device: what a device record says.
type Record struct {
	Switch  uint32 // router-id of the switch that published it
	Device  inof.Device
	State   inof.State
	Reason  inof.Reason
	Changed time.Time // last state change, as published
}

// Target is the merged state of every record that carries one address. An
// address seen by two switches (a device moved, or a NIC on a shared
// segment) is active while any of its records is active.
type Target struct {
	Device inof.Device
	State  inof.State
	Reason inof.Reason // of the newest inactive record when inactive
}

// Targets holds the device records this switch knows, merged per address.
// It is owned by one goroutine; it is not safe for concurrent use.
type Targets struct {
	byAddr map[netip.Addr]map[uint32]Record
}

// NewTargets returns an empty table.
func NewTargets() *Targets { return &Targets{byAddr: map[netip.Addr]map[uint32]Record{}} }

// Put stores r, replacing the record of the same switch and address.
func (t *Targets) Put(r Record) {
	m := t.byAddr[r.Device.Addr]
	if m == nil {
		m = map[uint32]Record{}
		t.byAddr[r.Device.Addr] = m
	}
	m[r.Switch] = r
}

// Remove drops the record of sw for addr. It returns the reason to give the
// hosts that were told the address is active, if the address is no longer
// active: the record's own reason when it had already gone inactive (its
// switch saw the device leave), or ReasonBFDDown when it vanished while
// still active, which in this fabric means its switch vanished (DESIGN §3,
// "leaving is a status"). ok is false when another active record keeps the
// address active, or nothing was stored.
func (t *Targets) Remove(sw uint32, addr netip.Addr) (reason inof.Reason, ok bool) {
	m := t.byAddr[addr]
	r, found := m[sw]
	if !found {
		return 0, false
	}
	delete(m, sw)
	if len(m) == 0 {
		delete(t.byAddr, addr)
	}
	if cur, present := t.Get(addr); present && cur.State == inof.StateActive {
		return 0, false
	}
	if r.State == inof.StateActive {
		return inof.ReasonBFDDown, true
	}
	return r.Reason, true
}

// Get returns the merged state of addr. Among active records the newest
// change wins (then the lower switch router-id), so the choice does not
// depend on map order; an inactive record never hides an active one.
func (t *Targets) Get(addr netip.Addr) (Target, bool) {
	m := t.byAddr[addr]
	if len(m) == 0 {
		return Target{}, false
	}
	var best Record
	found := false
	for _, r := range m {
		if !found || better(r, best) {
			best, found = r, true
		}
	}
	out := Target{Device: best.Device, State: best.State}
	if best.State != inof.StateActive {
		out.Reason = best.Reason
	}
	return out, true
}

// better orders the records of one address: active first, then the newest
// change, then the lower switch router-id.
func better(a, b Record) bool {
	if (a.State == inof.StateActive) != (b.State == inof.StateActive) {
		return a.State == inof.StateActive
	}
	if !a.Changed.Equal(b.Changed) {
		return a.Changed.After(b.Changed)
	}
	return a.Switch < b.Switch
}

// Len is the number of addresses held.
func (t *Targets) Len() int { return len(t.byAddr) }

// Why explains why a host can no longer use addr, for a target that is not
// among the host's visible active targets: the record's reason when the
// address is inactive, a zone change when it is active but not visible to
// the host, and def when nothing is known of it any more.
func (t *Targets) Why(addr netip.Addr, def inof.Reason) inof.Reason {
	cur, ok := t.Get(addr)
	switch {
	case !ok:
		return def
	case cur.State == inof.StateActive:
		return inof.ReasonZoneChange
	default:
		return cur.Reason
	}
}
