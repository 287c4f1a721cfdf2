package table

import (
	"cmp"
	"slices"
	"strings"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// setFor returns the set of rts (sorted), made if new (under mu).
func (p *SetPublisher) setFor(rts []record.RouteTarget) *deviceSet {
	k := rtsKey(rts)
	if s := p.sets[k]; s != nil {
		return s
	}
	s := &deviceSet{id: p.clock.Next(), key: k, rts: rts, shards: map[uint16]*shard{}}
	p.sets[k] = s
	return s
}

// capacity is how many entry bytes one shard of set holds.
func (p *SetPublisher) capacity(set *deviceSet) int {
	return record.DeviceSetCapacity(len(set.rts)) - (record.MaxSize - p.max)
}

// place adds rec to the first shard of set with room, or to a new one
// (under mu), and returns the shard.
func (p *SetPublisher) place(set *deviceSet, rec record.Device) *shard {
	need, capacity := record.DeviceSetEntrySize(&rec), p.capacity(set)
	var best *shard
	for _, s := range set.shards {
		if s.size+need <= capacity && (best == nil || s.n < best.n) {
			best = s
		}
	}
	if best == nil {
		if len(set.shards) > 0 {
			p.stats.Splits++
		}
		n := uint16(0)
		for set.shards[n] != nil {
			n++
		}
		best = &shard{set: set, n: n, entries: map[record.DeviceKey]*setEntry{}}
		set.shards[n] = best
	}
	p.add(best, rec)
	return best
}

// add puts rec in s as the device's current entry (under mu).
func (p *SetPublisher) add(s *shard, rec record.Device) {
	e := &setEntry{rec: rec, shard: s}
	s.entries[record.DeviceKey{DeviceID: rec.ID(), Epoch: rec.Epoch}] = e
	s.size += record.DeviceSetEntrySize(&rec)
	p.where[rec.ID()] = e
	p.kick(s)
}

// remove takes an entry that is no longer current out of its shard
// (under mu), once every older entry of its device is out, and merges the
// shard into another of its set if it became sparse.
func (p *SetPublisher) remove(e *setEntry) {
	id := e.rec.ID()
	for _, o := range p.old[id] {
		if o.rec.Epoch < e.rec.Epoch {
			p.waiting[id] = append(p.waiting[id], func() { p.remove(e) })
			return
		}
	}
	s := e.shard
	k := record.DeviceKey{DeviceID: id, Epoch: e.rec.Epoch}
	if s.entries[k] != e {
		return
	}
	delete(s.entries, k)
	s.size -= record.DeviceSetEntrySize(&e.rec)
	p.kick(s)
	e.goneAt = s.version
	s.removing = append(s.removing, e)
	p.mergeSparse(s)
}

// removed notes that the removals s sent up to version v are out (under
// mu) and runs the removals that waited for them.
func (p *SetPublisher) removed(s *shard, v uint64) {
	var ids []record.DeviceID
	s.removing = slices.DeleteFunc(s.removing, func(e *setEntry) bool {
		if e.goneAt > v {
			return false
		}
		id := e.rec.ID()
		if p.old[id] = slices.DeleteFunc(p.old[id], func(o *setEntry) bool { return o == e }); len(p.old[id]) == 0 {
			delete(p.old, id)
		}
		ids = append(ids, id)
		return true
	})
	for _, id := range ids {
		w := p.waiting[id]
		delete(p.waiting, id)
		for _, run := range w {
			run()
		}
	}
}

// retireAfter retires old, no longer the device's current entry, once
// shard to has sent the device's new entry: published inactive (reason
// zone change) first if inactiveFirst, then removed (under mu).
func (p *SetPublisher) retireAfter(old *setEntry, to *shard, inactiveFirst bool) {
	p.old[old.rec.ID()] = append(p.old[old.rec.ID()], old)
	p.after(to, func() {
		if !inactiveFirst {
			p.remove(old)
			return
		}
		s := old.shard
		old.rec.State, old.rec.Reason, old.rec.Changed = inof.StateInactive, inof.ReasonZoneChange, p.clock.Now()
		p.kick(s)
		p.after(s, func() { p.remove(old) })
	})
}

// mergeSparse moves the current entries of s, if it holds less than a
// quarter of its capacity, into a shard of its set with a lower number that
// has room for them all (under mu): entries only ever move down, so merges
// end. Each moves under a new epoch and its old entry goes
// once the other shard has sent it, so no receiver misses the device.
func (p *SetPublisher) mergeSparse(s *shard) {
	capacity := p.capacity(s.set)
	if len(s.entries) == 0 || s.size >= capacity/4 {
		return
	}
	var into *shard
	for _, t := range s.set.shards {
		if t.n < s.n && t.size+s.size <= capacity && (into == nil || t.n < into.n) {
			into = t
		}
	}
	if into == nil {
		return
	}
	var moved []*setEntry
	for _, e := range s.entries {
		if p.where[e.rec.ID()] == e {
			moved = append(moved, e)
		}
	}
	if len(moved) == 0 {
		return
	}
	p.stats.Merges++
	for _, e := range moved {
		rec := e.rec
		rec.Epoch = max(p.clock.Next(), rec.Epoch+1)
		p.old[rec.ID()] = append(p.old[rec.ID()], e)
		p.add(into, rec)
	}
	p.after(into, func() {
		for _, e := range moved {
			p.remove(e)
		}
	})
}

// sortedRTs returns rts sorted, without repeats, in a slice of its own.
func sortedRTs(rts []record.RouteTarget) []record.RouteTarget {
	out := slices.Clone(rts)
	slices.SortFunc(out, func(a, b record.RouteTarget) int { return cmp.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// rtsKey names a sorted route-target set.
func rtsKey(rts []record.RouteTarget) string {
	var b strings.Builder
	for _, rt := range rts {
		b.WriteString(rt.String())
		b.WriteByte(',')
	}
	return b.String()
}
