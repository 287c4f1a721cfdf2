package reflector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// fabricView is what the reflector sees of the fabric for the admin API:
// the device records its clients publish (they reach its best table) and
// since when each BGP and BFD session is in its state. Each part has one
// writer, the speaker's or BFD's watch goroutine; the API reads snapshots.
type fabricView struct {
	devices *table.DeviceTable   // written by the WatchRecords goroutine only
	changes []table.DeviceChange // that goroutine's buffer for the table's changes

	// Set by New, read-only afterwards.
	peerReflectors map[netip.Addr]bool
	events         EventPublisher
	now            func() time.Time
	log            *slog.Logger
	lines          *ratelimit.Log // lines a device on a port can cause
	// sessionLog logs BGP changes (from the neighbor watch) and BFD
	// changes (from the BFD subscription).
	sessionLog *peering.SessionLog
	// pins returns the NQN pins in force (set by Run before the record
	// watch starts; nil before): the WatchRecords goroutine judges each
	// device record's claim to its NQN (pins.go).
	pins    func() map[string]*zones.Pin
	refused pinRefusals // written by the WatchRecords goroutine

	mu       sync.Mutex
	bgp      map[netip.Addr]sessionState  // written by the WatchNeighbors goroutine
	rids     map[netip.Addr]inof.RouterID // clients' router-ids, learned while established (Held)
	bfdSince map[bfd.SessionKey]time.Time // written by the BFD subscription
}

// sessionState is a BGP session's state and since when it holds.
type sessionState struct {
	state bgp.SessionState
	since time.Time
}

func newFabricView(maxDevices int, peerReflectors map[netip.Addr]bool, events EventPublisher, now func() time.Time, log *slog.Logger) *fabricView {
	f := &fabricView{devices: table.NewDeviceTable(table.DeviceTableOptions{MaxDevices: maxDevices, Logger: log}),
		peerReflectors: peerReflectors, events: events, now: now, log: log, lines: ratelimit.NewLog(0, nil),
		bgp: map[netip.Addr]sessionState{}, bfdSince: map[bfd.SessionKey]time.Time{}, rids: map[netip.Addr]inof.RouterID{}}
	f.sessionLog = &peering.SessionLog{Log: log, Kind: f.neighborKind}
	return f
}

// onRecord feeds the device table from the best table (records their
// senders own) and puts each change of a device on the event feed (join,
// status change, leave).
func (f *fabricView) onRecord(ev bgp.RecordEvent) {
	f.changes = f.devices.Apply(f.changes[:0], ev)
	for _, ch := range f.changes {
		f.events.Publish(deviceEvent(ch))
		f.judge(ch)
	}
	clear(f.changes)
}

// deviceEvent is the event feed's entry for one device change.
func deviceEvent(ch table.DeviceChange) api.Event {
	id := ch.ID
	sw := id.Switch.String()
	e := api.Event{Kind: "record", Subject: id.Addr.String(), Attributes: map[string]string{"switch": sw}}
	switch d := ch.Record; {
	case d == nil && ch.Vanished:
		e.Message = fmt.Sprintf("device vanished: switch %s withdrew it while active (switch gone)", sw)
		e.Attributes["state"] = inof.StateInactive.String()
	case d == nil:
		e.Message = fmt.Sprintf("device left switch %s", sw)
		e.Attributes["state"] = ch.Before.State.String()
		e.Attributes["reason"] = ch.Before.Reason.String()
	default:
		deviceAttributes(e.Attributes, d)
		switch {
		case !ch.Had:
			e.Message = fmt.Sprintf("device joined: %s on switch %s port %s, %s", d.Device, sw, d.AccessPort, d.State)
		case ch.Before.State != d.State || ch.Before.Reason != d.Reason:
			e.Message = fmt.Sprintf("device %s on switch %s", d.State, sw)
			if d.State != inof.StateActive {
				e.Message += ": " + d.Reason.String()
			}
		default:
			e.Message = fmt.Sprintf("device record updated on switch %s", sw)
		}
	}
	return e
}

func deviceAttributes(a map[string]string, d *record.Device) {
	a["role"] = d.Device.Role.String()
	a["protocol"] = d.Device.Protocol.String()
	a["state"] = d.State.String()
	a["reason"] = d.Reason.String()
	a["port"] = d.AccessPort
	if d.Device.NQN != "" {
		a["nqn"] = d.Device.NQN
	}
}

// onNeighbor notes since when a BGP session is in its state and puts a
// session coming up or going down on the event feed (the steps between,
// and a neighbor that is not up retrying, are not events).
func (f *fabricView) onNeighbor(ev bgp.NeighborEvent) {
	f.mu.Lock()
	prev, known := f.bgp[ev.Address]
	if known && prev.state == ev.State {
		f.mu.Unlock()
		return // a resync repeating the state
	}
	f.bgp[ev.Address] = sessionState{state: ev.State, since: f.now()}
	f.mu.Unlock()
	f.sessionLog.BGP(ev)
	up := ev.State == bgp.StateEstablished
	if !up && prev.state != bgp.StateEstablished {
		return
	}
	kind := f.neighborKind(ev.Address)
	msg := fmt.Sprintf("BGP session with %s %s established", kind, ev.Address)
	if !up {
		msg = fmt.Sprintf("BGP session with %s %s lost (now %s)", kind, ev.Address, ev.State)
	}
	f.events.Publish(api.Event{Kind: "session", Subject: ev.Address.String(), Message: msg,
		Attributes: map[string]string{"protocol": "bgp", "kind": kind, "state": ev.State.String()}})
}

// neighborKind names a neighbor: "reflector" (a peer reflector) or
// "client".
func (f *fabricView) neighborKind(a netip.Addr) string {
	if f.peerReflectors[a] {
		return "reflector"
	}
	return "client"
}

// onBFD notes since when a BFD session is in its state and puts the change
// on the event feed.
func (f *fabricView) onBFD(ch bfd.StateChange) {
	at := ch.At
	if at.IsZero() {
		at = f.now()
	}
	f.mu.Lock()
	f.bfdSince[ch.Key] = at
	f.mu.Unlock()
	f.sessionLog.BFD(ch)
	f.events.Publish(api.Event{Kind: "session", Subject: ch.Key.Peer.String(), Time: at,
		Message: fmt.Sprintf("BFD session with %s: %s -> %s (%s)", ch.Key.Peer, ch.Old.String(), ch.New.String(), ch.Diag),
		Attributes: map[string]string{"protocol": "bfd", "state": ch.New.String(), "diagnostic": ch.Diag.String(),
			"peer_admin_down": boolString(ch.PeerAdminDown)}})
}

// established is how many BGP sessions are established, as the neighbor
// watch last heard.
func (f *fabricView) established() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, st := range f.bgp {
		if st.state == bgp.StateEstablished {
			n++
		}
	}
	return n
}

// EventPublisher receives the reflector's fabric events; an *api.Feed is
// one. Publish must not block.
type EventPublisher interface {
	Publish(api.Event)
}

type discardEvents struct{}

func (discardEvents) Publish(api.Event) {}

// API returns the reflector as the gRPC API's backend.
func (r *Reflector) API() api.Backend { return backend{r} }

// backend adapts a Reflector to api.Backend.
type backend struct{ r *Reflector }

// Config implements api.Backend; a reflector that is not running has an
// empty configuration.
func (b backend) Config() *zones.Config {
	cfg, err := b.r.Config()
	if err != nil {
		return zones.NewConfig(zones.DefaultSettings())
	}
	return cfg
}

// Commit implements api.Backend: an error from edit aborts the
// transaction and is returned wrapped, as are the commit's own errors.
func (b backend) Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	recs, err := b.r.Commit(ctx, edit)
	if err != nil {
		return recs, fmt.Errorf("reflector: %w", err)
	}
	return recs, nil
}

// Devices implements api.Backend: one entry per address (api.Shown).
func (b backend) Devices(context.Context) ([]api.Device, error) {
	if err := b.r.Healthy(); err != nil {
		return nil, fmt.Errorf("reflector: %w", err)
	}
	return api.Shown(b.r.fabric.devices.Reports()), nil
}

// Sessions implements api.Backend with the speaker's neighbors.
func (b backend) Sessions(ctx context.Context) ([]api.Session, error) {
	ns, err := b.r.NeighborsAdvertised(ctx)
	if err != nil {
		return nil, err
	}
	b.r.fabric.mu.Lock()
	defer b.r.fabric.mu.Unlock()
	out := make([]api.Session, len(ns))
	for i, n := range ns {
		out[i] = peering.Session(n, neighborKind(n.Neighbor))
		if st, ok := b.r.fabric.bgp[n.Address]; ok && st.state == n.State {
			out[i].Since = st.since
		}
	}
	return out, nil
}

// BFDSessions implements api.Backend with the BFD manager's sessions
// (none when BFD is off). The receive interval and multiplier are the
// configured ones.
func (b backend) BFDSessions(context.Context) ([]api.BFDSession, error) {
	rn, release, err := b.r.started()
	if err != nil {
		return nil, err
	}
	defer release()
	if rn.bfd == nil {
		return nil, nil
	}
	ss := rn.bfd.Sessions()
	b.r.fabric.mu.Lock()
	defer b.r.fabric.mu.Unlock()
	out := make([]api.BFDSession, len(ss))
	for i, s := range ss {
		out[i] = api.BFDSession{Peer: s.Key.Peer.String(), Local: s.Key.Local.String(), State: s.State.String(),
			Diagnostic: s.Diag.String(), Since: b.r.fabric.bfdSince[s.Key], TxInterval: s.TxInterval,
			RxInterval: s.RequiredMinRx, DetectMult: s.DetectMult}
	}
	return out, nil
}

// LosslessProfile implements api.Backend.
func (b backend) LosslessProfile(context.Context) (lossless.Profile, error) {
	return b.r.LosslessProfile()
}

// SetLosslessProfile implements api.Backend.
func (b backend) SetLosslessProfile(ctx context.Context, p lossless.Profile) error {
	return b.r.SetLosslessProfile(ctx, p)
}

// Journal implements api.JournalBackend.
func (b backend) Journal(context.Context) ([]zones.Entry, error) { return b.r.Journal() }

// ConfigAt implements api.JournalBackend.
func (b backend) ConfigAt(_ context.Context, v zones.Version) (*zones.Config, bool, error) {
	return b.r.ConfigAt(v)
}

// Conflicts implements api.JournalBackend.
func (b backend) Conflicts(context.Context) ([]zones.Conflict, error) { return b.r.Conflicts() }

// Backup implements api.JournalBackend.
func (b backend) Backup(_ context.Context, w io.Writer) (int64, error) { return b.r.Backup(w) }

// HistorySize implements api.JournalBackend.
func (b backend) HistorySize() int { return b.r.opts.HistorySize }

// Held implements api.HoldBackend: the clients whose session is down while
// graceful restart keeps their records (the restart time after the session
// went down, the fabric's graceful_restart.restart_time), with when that
// hold ends. A client's router-id is learned while its session is up.
func (b backend) Held(ctx context.Context) (map[inof.RouterID]time.Time, error) {
	gr := b.r.opts.GracefulRestart
	if !gr.Enabled {
		return nil, nil
	}
	ns, err := b.r.Neighbors(ctx)
	if err != nil {
		return nil, err
	}
	now := b.r.now()
	b.r.fabric.mu.Lock()
	defer b.r.fabric.mu.Unlock()
	out := map[inof.RouterID]time.Time{}
	for _, n := range ns {
		if n.PeerReflector {
			continue
		}
		if n.State == bgp.StateEstablished {
			if rid, err := inof.ParseRouterID(n.RouterID.String()); err == nil && n.RouterID.IsValid() {
				b.r.fabric.rids[n.Address] = rid
			}
			continue
		}
		st, down := b.r.fabric.bgp[n.Address]
		rid, known := b.r.fabric.rids[n.Address]
		if !down || !known {
			continue
		}
		if until := st.since.Add(gr.RestartTime); until.After(now) {
			out[rid] = until
		}
	}
	return out, nil
}

// Reflectors implements api.ReflectorsBackend: this reflector (its zoning
// revision and its store's generation clock) and each peer reflector as
// its replicator hears it.
func (b backend) Reflectors(ctx context.Context) (api.ReflectorsStatus, error) {
	return b.r.Reflectors(ctx)
}

// Reflectors returns this reflector and the peer reflectors it hears, with
// its wall clock (api.ReflectorsBackend).
func (r *Reflector) Reflectors(ctx context.Context) (api.ReflectorsStatus, error) {
	rn, release, err := r.started()
	if err != nil {
		return api.ReflectorsStatus{}, err
	}
	defer release()
	peers, err := rn.repl.Peers(ctx)
	if err != nil {
		return api.ReflectorsStatus{}, err
	}
	st := api.ReflectorsStatus{Now: r.now()}
	st.Reflectors = append(st.Reflectors, api.ReflectorStatus{RouterID: rn.routerID, Self: true,
		Revision: api.Revision(rn.store.Config()), Generation: rn.store.Generation(), Parts: rn.repl.Len()})
	for _, p := range peers {
		st.Reflectors = append(st.Reflectors, api.ReflectorStatus{RouterID: p.RouterID, Address: p.Address.String(), Session: p.Session,
			Generation: p.Newest, Writer: p.NewestWriter, Parts: p.Parts, Behind: p.Behind,
			RefusedFuture: p.Future, Deferred: p.Deferred})
	}
	return st, nil
}
