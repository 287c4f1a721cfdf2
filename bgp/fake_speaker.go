package bgp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// FakeSpeaker is one speaker of a FakeFabric; it implements Speaker.
type FakeSpeaker struct {
	f       *FakeFabric
	opts    Options
	id      netip.Addr
	log     *slog.Logger
	watches watchGroup
	done    chan struct{}

	// Everything below is guarded by f.mu.
	running, stopped bool
	neighbors        map[netip.Addr]Neighbor
	subs             map[record.RouteTarget]bool
	local            map[string]fakePath
	adjIn            map[netip.Addr]map[string]fakePath
	adjOut           map[netip.Addr]map[string]fakePath
	interest         map[netip.Addr]fakeInterest // what each neighbor advertised (RTC)
	best             map[string]fakePath
	quarantined      map[netip.Addr]bool
	recWatches       []*recordWatch
	rxWatches        []*recordWatch
	nbWatches        []*neighborWatch
	stats            Stats
}

type fakePath struct {
	key, value []byte
	rts        []record.RouteTarget
	source     netip.Addr // invalid when local
	nextHop    netip.Addr // invalid on a local path: the session address is used
}

func (p fakePath) same(o fakePath) bool {
	return bytes.Equal(p.value, o.value) && slices.Equal(p.rts, o.rts) && p.source == o.source && p.nextHop == o.nextHop
}

type fakeInterest struct {
	def bool
	rts map[record.RouteTarget]bool
}

func (in fakeInterest) wants(rts []record.RouteTarget) bool {
	for _, rt := range rts {
		if in.def || in.rts[rt] {
			return true
		}
	}
	return false
}

func (in fakeInterest) equal(o fakeInterest) bool {
	if in.def != o.def || len(in.rts) != len(o.rts) {
		return false
	}
	for rt := range in.rts {
		if !o.rts[rt] {
			return false
		}
	}
	return true
}

var _ Speaker = (*FakeSpeaker)(nil)

// Start implements Speaker.
func (s *FakeSpeaker) Start(context.Context) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.stopped || s.running {
		return errors.New("bgp: fake speaker already started")
	}
	s.running = true
	s.f.reconcile()
	return nil
}

// Stop implements Speaker: its sessions drop (peers withdraw what it sent)
// and its watches end.
func (s *FakeSpeaker) Stop() {
	s.f.mu.Lock()
	if s.stopped {
		s.f.mu.Unlock()
		<-s.done
		return
	}
	s.running, s.stopped = false, true
	s.f.reconcile()
	s.f.mu.Unlock()
	s.watches.stop()
	close(s.done)
}

// Done implements Speaker.
func (s *FakeSpeaker) Done() <-chan struct{} { return s.done }

// Err implements Speaker; a fake never fails.
func (s *FakeSpeaker) Err() error { return nil }

// AddNeighbor implements Speaker.
func (s *FakeSpeaker) AddNeighbor(_ context.Context, n Neighbor) error {
	switch {
	case !n.Address.IsValid():
		return errors.New("bgp: neighbor without address")
	case n.RRClient && s.opts.Role != RoleReflector:
		return fmt.Errorf("bgp: neighbor %s: only a reflector has route-reflector clients", n.Address)
	case n.PeerReflector && (s.opts.Role != RoleReflector || n.RRClient):
		return fmt.Errorf("bgp: neighbor %s: a peer reflector is a plain iBGP neighbor of a reflector", n.Address)
	case n.NoDefaultRT && !n.RRClient:
		return fmt.Errorf("bgp: neighbor %s: NoDefaultRT applies to route-reflector clients", n.Address)
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if _, dup := s.neighbors[n.Address]; dup {
		return fmt.Errorf("bgp: neighbor %s is already configured", n.Address)
	}
	s.neighbors[n.Address] = n
	s.f.reconcile()
	return nil
}

// RemoveNeighbor implements Speaker.
func (s *FakeSpeaker) RemoveNeighbor(_ context.Context, addr netip.Addr) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if _, ok := s.neighbors[addr]; !ok {
		return fmt.Errorf("bgp: remove neighbor %s: not configured", addr)
	}
	delete(s.neighbors, addr)
	s.f.reconcile()
	return nil
}

// Publish implements Speaker.
func (s *FakeSpeaker) Publish(_ context.Context, r record.Record, rts ...record.RouteTarget) error {
	key, value, err := record.Encode(r, len(rts))
	if err != nil {
		return err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if !s.running {
		return errors.New("bgp: publish: speaker not running")
	}
	s.local[string(key)] = fakePath{key: key, value: value, rts: slices.Clone(rts)}
	s.stats.Published++
	s.f.update(s, string(key))
	return nil
}

// Withdraw implements Speaker.
func (s *FakeSpeaker) Withdraw(_ context.Context, key []byte) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if !s.running {
		return errors.New("bgp: withdraw: speaker not running")
	}
	delete(s.local, string(key))
	s.stats.Withdrawn++
	s.f.update(s, string(key))
	return nil
}

// Subscribe implements Speaker.
func (s *FakeSpeaker) Subscribe(_ context.Context, rt record.RouteTarget) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.subs[rt] = true
	s.f.refreshInterests()
	return nil
}

// Unsubscribe implements Speaker.
func (s *FakeSpeaker) Unsubscribe(_ context.Context, rt record.RouteTarget) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	delete(s.subs, rt)
	s.f.refreshInterests()
	return nil
}

// WatchRecords implements Speaker.
func (s *FakeSpeaker) WatchRecords(ctx context.Context, fn func(RecordEvent)) error {
	w := newRecordWatch(s.opts.WatchQueue, fn, func(context.Context) ([]RecordEvent, error) {
		s.f.mu.Lock()
		defer s.f.mu.Unlock()
		var out []RecordEvent
		for _, k := range sortedKeys(s.best) {
			out = append(out, s.event(s.best[k], false))
		}
		return out, nil
	}, false, nil, s.log)
	return s.watch(ctx, w, &s.recWatches)
}

// WatchReceived implements Speaker: every record received from a
// neighbor, before import policy; explicit withdraws are reported, session
// loss is not.
func (s *FakeSpeaker) WatchReceived(ctx context.Context, fn func(RecordEvent), types ...record.Type) error {
	w := newRecordWatch(s.opts.WatchQueue, fn, func(context.Context) ([]RecordEvent, error) {
		s.f.mu.Lock()
		defer s.f.mu.Unlock()
		var out []RecordEvent
		for _, n := range sortedAddrs(s.adjIn) {
			for _, k := range sortedKeys(s.adjIn[n]) {
				out = append(out, s.event(s.adjIn[n][k], false))
			}
		}
		return out, nil
	}, true, nil, s.log)
	w.keep = typeFilter(types)
	return s.watch(ctx, w, &s.rxWatches)
}

func (s *FakeSpeaker) watch(ctx context.Context, w *recordWatch, list *[]*recordWatch) error {
	wctx, cancel := s.watches.context(ctx)
	s.f.mu.Lock()
	*list = append(*list, w)
	s.f.mu.Unlock()
	s.watches.goWatch(wctx, func() {
		cancel()
		s.f.mu.Lock()
		*list = slices.DeleteFunc(*list, func(x *recordWatch) bool { return x == w })
		s.f.mu.Unlock()
	}, w.run)
	return nil
}

// WatchNeighbors implements Speaker.
func (s *FakeSpeaker) WatchNeighbors(ctx context.Context, fn func(NeighborEvent)) error {
	w := &neighborWatch{q: newWatchQueue[NeighborEvent](s.opts.WatchQueue, false), fn: fn,
		snapshot: func(ctx context.Context) ([]NeighborEvent, error) {
			ns, err := s.Neighbors(ctx)
			out := make([]NeighborEvent, 0, len(ns))
			for _, n := range ns {
				out = append(out, NeighborEvent{Address: n.Address, State: n.State})
			}
			return out, err
		}}
	wctx, cancel := s.watches.context(ctx)
	s.f.mu.Lock()
	s.nbWatches = append(s.nbWatches, w)
	s.f.mu.Unlock()
	s.watches.goWatch(wctx, func() {
		cancel()
		s.f.mu.Lock()
		s.nbWatches = slices.DeleteFunc(s.nbWatches, func(x *neighborWatch) bool { return x == w })
		s.f.mu.Unlock()
	}, w.run)
	return nil
}

// Neighbors implements Speaker.
func (s *FakeSpeaker) Neighbors(context.Context) ([]NeighborStatus, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	var out []NeighborStatus
	for _, a := range sortedAddrs(s.neighbors) {
		st := NeighborStatus{Neighbor: s.neighbors[a], State: StateActive, Received: uint64(len(s.adjIn[a]))}
		if s.f.sessions[pair(s.id, a)] {
			st.State, st.RouterID, st.EndOfRIB = StateEstablished, a, s.f.eor[[2]netip.Addr{a, s.id}]
		}
		out = append(out, st)
	}
	return out, nil
}

// NeighborsAdvertised implements Speaker; the fake counts no advertised
// records (Advertised stays zero).
func (s *FakeSpeaker) NeighborsAdvertised(ctx context.Context) ([]NeighborStatus, error) {
	return s.Neighbors(ctx)
}

// Quarantine implements Speaker.
func (s *FakeSpeaker) Quarantine(_ context.Context, addr netip.Addr, on bool) error {
	if s.opts.Role != RoleReflector {
		return errors.New("bgp: quarantine is a reflector's")
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if on {
		s.quarantined[addr] = true
	} else {
		delete(s.quarantined, addr)
	}
	for _, k := range sortedKeys(s.adjIn[addr]) {
		s.f.update(s, k)
	}
	return nil
}

// Stats implements Speaker.
func (s *FakeSpeaker) Stats() Stats {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	st := s.stats
	st.Resyncs = s.watches.resyncs.Load()
	return st
}

// event converts a path (under f.mu; it counts malformed values).
func (s *FakeSpeaker) event(p fakePath, withdrawn bool) RecordEvent {
	ev := RecordEvent{Key: p.key, Source: p.source, Withdrawn: withdrawn}
	if p.source.IsValid() {
		ev.SourceID, _ = inof.RouterIDFrom(p.source) // a fake speaker's address is its router-id
	}
	if withdrawn {
		return ev
	}
	ev.RouteTargets = slices.Clone(p.rts)
	ev.NextHop = p.nextHop
	rec, err := record.Decode(p.key, p.value)
	if err != nil {
		s.stats.Malformed++
		ev.Withdrawn, ev.Err = true, err
		return ev
	}
	ev.Record = rec
	return ev
}

func (s *FakeSpeaker) pushRecord(list []*recordWatch, ev RecordEvent) {
	for _, w := range list {
		if w.wants(ev.Key) && w.q.push(ev) {
			s.watches.resyncs.Add(1)
		}
	}
}
