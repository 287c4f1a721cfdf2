package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// WatchRecords implements Speaker with the best-path table. With graceful
// restart, withdraws from a neighbor that just came back are held for the
// settle time (see GracefulRestart.SettleTime), and on a client those of
// records kept stale while their neighbor is away, until its restart time
// ends (holdUntil). The watch ends with ctx or Stop; fn runs on the
// watch's own goroutine.
func (g *GoBGP) WatchRecords(ctx context.Context, fn func(RecordEvent)) error {
	var s *settler
	if g.cfg.GracefulRestart.Enabled {
		s = newSettler(g.restarts.holdUntil)
	}
	snap := func(ctx context.Context) ([]RecordEvent, error) {
		return g.listPaths(ctx, api.TableType_GLOBAL, "", nil)
	}
	return g.watchTable(ctx, api.WatchEventRequest_Table_Filter_BEST, newRecordWatch(g.cfg.WatchQueue, fn, snap, false, s, g.log))
}

// WatchReceived calls fn for every opaque record received from any neighbor
// as it arrives, before import policy (Adj-RIB-In) and whether or not it
// becomes best: explicit withdraws are reported, session loss is not.
// Reflectors use it to learn their peers' configuration. Given types, it
// reports only records of those types and decodes no other. The watch ends
// with ctx or Stop.
func (g *GoBGP) WatchReceived(ctx context.Context, fn func(RecordEvent), types ...record.Type) error {
	keep := typeFilter(types)
	snap := func(ctx context.Context) ([]RecordEvent, error) {
		peers := g.neighbors.addrs()
		var out []RecordEvent
		for _, a := range peers {
			evs, err := g.listPaths(ctx, api.TableType_ADJ_IN, a.String(), keep)
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		return out, nil
	}
	w := newRecordWatch(g.cfg.WatchQueue, fn, snap, true, nil, g.log)
	w.keep = keep
	return g.watchTable(ctx, api.WatchEventRequest_Table_Filter_ADJIN, w)
}

// listPaths reads a table: the best path per key (GLOBAL) or every path a
// neighbor sent (ADJ_IN).
func (g *GoBGP) listPaths(ctx context.Context, typ api.TableType, name string, keep func([]byte) bool) ([]RecordEvent, error) {
	var out []RecordEvent
	err := g.srv.ListPath(ctx, &api.ListPathRequest{TableType: typ, Name: name, Family: familyOpaque}, func(d *api.Destination) {
		for _, p := range d.Paths {
			if typ == api.TableType_GLOBAL && !p.Best {
				continue
			}
			if ev, ok := g.recordEvent(p, keep); ok {
				out = append(out, ev)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("bgp: list %s table: %w", typ, err)
	}
	return out, nil
}

func (g *GoBGP) watchTable(ctx context.Context, typ api.WatchEventRequest_Table_Filter_Type, w *recordWatch) error {
	wctx, cancel := g.watches.context(ctx)
	req := &api.WatchEventRequest{Table: &api.WatchEventRequest_Table{
		Filters: []*api.WatchEventRequest_Table_Filter{{Type: typ}}}}
	err := g.srv.WatchEvent(wctx, req, func(r *api.WatchEventResponse) {
		for _, p := range r.GetTable().GetPaths() {
			if isOpaque(p.Family) {
				if ev, ok := g.recordEvent(p, w.keep); ok && w.q.push(ev) {
					n := g.watches.resyncs.Add(1)
					if g.resyncLog.Allow() {
						g.log.Warn("watch consumer too slow; resynchronising from the table",
							"queue", g.cfg.WatchQueue, "resyncs_total", n)
					}
				}
			}
		}
	})
	if err != nil {
		cancel()
		return fmt.Errorf("bgp: watch: %w", err)
	}
	g.watches.goWatch(wctx, cancel, w.run)
	return nil
}

// recordEvent converts a GoBGP path; a malformed record becomes a withdraw
// carrying the error, and is counted and logged at a rate limit. A record
// whose key keep (if set) refuses is skipped before it is decoded.
func (g *GoBGP) recordEvent(p *api.Path, keep func([]byte) bool) (RecordEvent, bool) {
	key, value, ok := opaqueNLRI(p.Nlri)
	if !ok || keep != nil && !keep(key) {
		return RecordEvent{}, false
	}
	ev := RecordEvent{Key: key, Withdrawn: p.IsWithdraw, Stale: p.Stale}
	if a, err := netip.ParseAddr(p.NeighborIp); err == nil && !a.IsUnspecified() {
		ev.Source = a.Unmap()
		if id, err := netip.ParseAddr(p.SourceId); err == nil {
			ev.SourceID, _ = inof.RouterIDFrom(id)
		}
	}
	if ev.Withdrawn {
		return ev, true
	}
	ev.RouteTargets = pathRouteTargets(p)
	ev.NextHop = pathNextHop(p)
	rec, err := record.Decode(key, value)
	if err != nil {
		g.malformed.Add(1)
		if g.malformedLog.Allow() {
			g.log.Warn("malformed record treated as withdrawn", "from", ev.Source, "err", err,
				"malformed_total", g.malformed.Load())
		}
		ev.Withdrawn, ev.Err = true, err
		return ev, true
	}
	ev.Record = rec
	return ev, true
}
