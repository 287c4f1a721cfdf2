package table

import (
	"slices"

	"github.com/openinof/inof/bgp/record"
)

// after runs op (under mu) once s has sent its current version.
func (p *SetPublisher) after(s *shard, op func()) {
	s.after = append(s.after, pendingOp{version: s.version, run: op})
}

// kick marks s changed and starts its flush unless one runs or a Batch
// holds it back (under mu).
func (p *SetPublisher) kick(s *shard) {
	s.version++
	p.stats.Changes++
	switch {
	case s.flushing:
	case p.holding > 0:
		p.held[s] = struct{}{}
	default:
		p.startFlush(s)
	}
}

// startFlush starts s's flush (under mu).
func (p *SetPublisher) startFlush(s *shard) {
	s.flushing = true
	if p.busy == 0 {
		p.idle = make(chan struct{})
	}
	p.busy++
	p.wg.Add(1)
	go p.flush(s)
}

// flush sends s until it has sent its newest version: one record with
// every change made while the previous send was in flight or the shard
// waited for its interval.
func (p *SetPublisher) flush(s *shard) {
	defer p.wg.Done()
	p.mu.Lock()
	for s.sent < s.version && p.spaced(s) {
		if p.holding > 0 {
			// A Batch began while the shard waited: its changes go
			// with the batch's, when it ends (it starts this flush again).
			p.held[s] = struct{}{}
			s.flushing = false
			p.idled()
			p.mu.Unlock()
			return
		}
		v := s.version
		rec := p.record(s)
		withdraw, was := len(rec.Devices) == 0, s.published
		if !withdraw || was {
			s.lastSend = p.now() // a record that was never sent is not withdrawn
		}
		p.mu.Unlock()
		var err error
		switch {
		case !withdraw:
			err = p.speaker.Publish(p.ctx, rec, s.set.rts...)
		case was:
			err = p.speaker.Withdraw(p.ctx, rec.Key())
		}
		p.mu.Lock()
		switch {
		case err != nil:
			p.stats.Errors++
			if p.errLog.Allow() && p.ctx.Err() == nil {
				p.log.Error("sending a device set record", "set", s.set.id, "shard", s.n, "devices", len(rec.Devices),
					"errors_total", p.stats.Errors, "err", err)
			}
		case !withdraw:
			p.stats.Updates++
		case was:
			p.stats.Withdraws++
		}
		s.published = !withdraw
		s.sent = v
		p.removed(s, v)
		var due []pendingOp
		s.after = slices.DeleteFunc(s.after, func(op pendingOp) bool {
			if op.version <= v {
				due = append(due, op)
				return true
			}
			return false
		})
		for _, op := range due {
			op.run()
		}
	}
	s.flushing = false
	if len(s.entries) == 0 && !s.published && len(s.after) == 0 && len(s.removing) == 0 && s.set.shards[s.n] == s {
		delete(s.set.shards, s.n)
		if len(s.set.shards) == 0 && p.sets[s.set.key] == s.set {
			delete(p.sets, s.set.key)
		}
	}
	p.idled()
	p.mu.Unlock()
}

// idled notes that a flush ended (under mu).
func (p *SetPublisher) idled() {
	if p.busy--; p.busy == 0 {
		close(p.idle)
		p.idle = nil
	}
}

// spaced waits until s may be sent: MinInterval after its last send began
// (called under mu, which it releases while it waits). It reports false
// when the publisher was closed meanwhile.
func (p *SetPublisher) spaced(s *shard) bool {
	if p.spacing <= 0 || s.lastSend.IsZero() {
		return true
	}
	wait := p.spacing - p.now().Sub(s.lastSend)
	if wait <= 0 {
		return true
	}
	p.mu.Unlock()
	defer p.mu.Lock()
	select {
	case <-p.timer(wait):
		return true
	case <-p.ctx.Done():
		return false
	}
}

// record is s's record now (under mu).
func (p *SetPublisher) record(s *shard) *record.DeviceSet {
	// Sorted as pointers: a device record is large, and sorting the
	// records themselves copied two of them per comparison.
	p.sorting = p.sorting[:0]
	for _, e := range s.entries {
		p.sorting = append(p.sorting, e)
	}
	slices.SortFunc(p.sorting, func(a, b *setEntry) int { return record.CompareEntries(&a.rec, &b.rec) })
	r := &record.DeviceSet{Switch: p.self, Set: s.set.id, Shard: s.n, Devices: make([]record.Device, len(p.sorting))}
	for i, e := range p.sorting {
		r.Devices[i] = e.rec
	}
	clear(p.sorting)
	return r
}
