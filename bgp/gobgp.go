package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// SpeakerRole is what a speaker is in the fabric (not a device's
// inof.Role).
type SpeakerRole uint8

// Speaker roles.
const (
	RoleClient    SpeakerRole = iota + 1 // a switch agent: sessions to every reflector
	RoleReflector                        // a route reflector: switches are its clients
)

// GracefulRestart configures RFC 4724 on every session.
type GracefulRestart struct {
	Enabled bool
	// RestartTime is how long peers keep our routes after we vanish
	// (default 120 s; at most 4095 s).
	RestartTime time.Duration
	// Restarting announces that this process is a restart of one that just
	// died: peers keep its routes as stale until it sends End-of-RIB, and
	// it defers its own best-path selection until its peers' End-of-RIB.
	Restarting bool
	// Notification (RFC 8538) keeps graceful restart in force when a
	// session ends with a Cease: Stop then ends every session with one, as
	// a daemon that stops or restarts on purpose does, and peers keep its
	// routes stale until it returns with End-of-RIB or the restart time
	// runs out. Both ends must enable it.
	Notification bool
	// SettleTime holds back, in WatchRecords, withdraws of records learned
	// from a neighbor whose session came back within this time (default
	// 10 s). GoBGP ends a restarting speaker's selection deferral as soon as
	// the peers connected so far have sent End-of-RIB (it counts peers not
	// yet connected as done), so a reflector that restarts can send
	// End-of-RIB to one client before it has re-learned the others' records;
	// the records it re-learns within SettleTime cancel the withdraws.
	SettleTime time.Duration
}

// Options configure a speaker.
type Options struct {
	Role     SpeakerRole
	ASN      uint32
	RouterID netip.Addr
	// ListenAddresses and ListenPort: where to accept sessions. ListenPort
	// -1 disables listening (clients that only connect out); 0 means 179.
	ListenAddresses []netip.Addr
	ListenPort      int32
	// ClusterID of a reflector (RFC 4456); reflectors of one fabric share
	// it. Defaults to the router-id.
	ClusterID       netip.Addr
	GracefulRestart GracefulRestart
	// TTLSecurity turns GTSM (RFC 5082) on for the whole speaker: the
	// listener accepts only TTL 255 from the first SYN on, and every
	// neighbor must set Neighbor.TTLSecurity.
	TTLSecurity bool
	// BFD runs the BFD sessions of neighbors that ask for one (Neighbor.BFD).
	BFD *bfd.Manager
	// WatchQueue bounds each watch's queue of undelivered events (default
	// DefaultWatchQueue); a consumer that falls further behind is
	// resynchronised from the table (see watch.go).
	WatchQueue int
	Logger     *slog.Logger
}

var (
	familyOpaque = &api.Family{Afi: api.Family_AFI_OPAQUE, Safi: api.Family_SAFI_KEY_VALUE}
	familyRTC    = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_ROUTE_TARGET_CONSTRAINTS}
)

// GoBGP is the Speaker implementation on an embedded GoBGP v3 server.
type GoBGP struct {
	cfg      Options
	log      *slog.Logger
	srv      *server.BgpServer
	gobgpLog *slogAdapter // GoBGP's logger; its Fatal stops the speaker
	watches  watchGroup

	stopOnce sync.Once
	done     chan struct{}
	fatalErr atomic.Pointer[error]

	mu      sync.Mutex
	stopBFD func()
	bfdDown map[netip.Addr]bool // neighbors disabled because BFD went down
	clients clientLoss          // a reflector's switches' sessions (clientloss.go)
	loss    reflectorLoss       // a client's lost reflectors (reflectorloss.go)
	// reestablished is when each neighbor's session last came back up
	// after having been established before (graceful-restart settling).
	reestablished map[netip.Addr]time.Time
	firstUp       map[netip.Addr]time.Time // when each session was first established
	// away are the neighbors whose established session ended and has not
	// come back, with when it ended (graceful-restart holding).
	away      map[netip.Addr]awayRead
	uptime    map[netip.Addr]uptimeRead
	neighbors map[netip.Addr]Neighbor

	// restartSynced: this restart's deferral is over (restartPending).
	restartSynced atomic.Bool

	published, withdrawn, malformed atomic.Uint64
	malformedLog, resyncLog         ratelimit.Limit
}

var _ Speaker = (*GoBGP)(nil)

// NewGoBGP validates cfg and returns a speaker; call Start.
func NewGoBGP(cfg Options) (*GoBGP, error) {
	switch {
	case cfg.Role != RoleClient && cfg.Role != RoleReflector:
		return nil, errors.New("bgp: role must be client or reflector")
	case cfg.ASN == 0:
		return nil, errors.New("bgp: ASN is required")
	case !cfg.RouterID.Is4():
		return nil, errors.New("bgp: router-id must be an IPv4 address")
	case cfg.GracefulRestart.RestartTime > 4095*time.Second:
		return nil, errors.New("bgp: graceful-restart time above 4095 s")
	}
	if cfg.GracefulRestart.RestartTime == 0 {
		cfg.GracefulRestart.RestartTime = 120 * time.Second
	}
	if cfg.GracefulRestart.SettleTime == 0 {
		cfg.GracefulRestart.SettleTime = 10 * time.Second
	}
	if !cfg.ClusterID.IsValid() {
		cfg.ClusterID = cfg.RouterID
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WatchQueue <= 0 {
		cfg.WatchQueue = DefaultWatchQueue
	}
	log := cfg.Logger.With("router_id", cfg.RouterID.String())
	return &GoBGP{cfg: cfg, log: log, neighbors: map[netip.Addr]Neighbor{}, done: make(chan struct{}),
		reestablished: map[netip.Addr]time.Time{}, firstUp: map[netip.Addr]time.Time{}, uptime: map[netip.Addr]uptimeRead{},
		away:         map[netip.Addr]awayRead{},
		bfdDown:      map[netip.Addr]bool{},
		malformedLog: ratelimit.Limit{Every: time.Second}, resyncLog: ratelimit.Limit{Every: time.Second}}, nil
}

// Start implements Speaker. ctx bounds the start-up only; the speaker runs
// until Stop (or a fatal GoBGP error, see Done).
func (g *GoBGP) Start(ctx context.Context) error {
	g.gobgpLog = &slogAdapter{log: g.log, level: gobgplog.InfoLevel, fatal: g.fail}
	g.srv = server.NewBgpServer(server.LoggerOption(g.gobgpLog))
	go g.srv.Serve()
	global := &api.Global{Asn: g.cfg.ASN, RouterId: g.cfg.RouterID.String(), ListenPort: g.cfg.ListenPort}
	for _, a := range g.cfg.ListenAddresses {
		global.ListenAddresses = append(global.ListenAddresses, a.String())
	}
	if err := g.srv.StartBgp(ctx, &api.StartBgpRequest{Global: global}); err != nil {
		g.Stop()
		return fmt.Errorf("bgp: start: %w", err)
	}
	if g.cfg.TTLSecurity && g.cfg.ListenPort >= 0 {
		port := uint16(g.cfg.ListenPort)
		if port == 0 {
			port = 179
		}
		n, err := protectListeners(g.cfg.ListenAddresses, port)
		if err == nil && n == 0 {
			err = fmt.Errorf("bgp: GTSM: no listener found on port %d", port)
		}
		if err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.GracefulRestart.Enabled {
		if err := g.watchPeers(g.watches.lifetime(), g.trackRestarts); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.Role == RoleClient {
		if err := g.watchReflectorLoss(); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.BFD != nil {
		g.stopBFD = g.cfg.BFD.Subscribe(g.onBFD)
	}
	wctx, cancel := g.watches.context(context.Background())
	g.watches.goWatch(wctx, cancel, g.watchWallClock)
	if g.cfg.BFD != nil && g.cfg.Role == RoleReflector {
		if err := g.watchClientLoss(); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.Role == RoleReflector {
		if err := g.definePolicies(ctx); err != nil {
			g.Stop()
			return err
		}
		// The default route-target membership: clients send us every record.
		if err := g.addPath(ctx, rtcPath(0, nil)); err != nil {
			g.Stop()
			return fmt.Errorf("bgp: default route target: %w", err)
		}
		// The peering membership: peer reflectors send us their
		// configuration records whatever the clients subscribe to
		// (PeeringRT).
		peering := record.PeeringRT(g.cfg.ASN)
		if err := g.addPath(ctx, rtcPath(g.cfg.ASN, &peering)); err != nil {
			g.Stop()
			return fmt.Errorf("bgp: peering route target: %w", err)
		}
	}
	return nil
}

// Stop implements Speaker. It ends every watch (after their callbacks
// return; a callback must not call Stop) and removes its neighbors' BFD
// sessions from the (caller's) BFD manager. Stop is idempotent.
func (g *GoBGP) Stop() { g.stopOnce.Do(g.stop) }

// Done is closed when the speaker has stopped: after Stop, or after GoBGP
// reported a fatal error (then Err is set).
func (g *GoBGP) Done() <-chan struct{} { return g.done }

// Err returns the fatal GoBGP error that stopped the speaker, or nil.
func (g *GoBGP) Err() error {
	if e := g.fatalErr.Load(); e != nil {
		return *e
	}
	return nil
}

// fail records a fatal error reported by GoBGP (whose code goes on as if
// the process had exited) and stops the speaker; it runs on a GoBGP
// goroutine, so the stop runs on its own.
func (g *GoBGP) fail(err error) {
	if g.fatalErr.CompareAndSwap(nil, &err) {
		g.log.Error("GoBGP failed; stopping the speaker", "err", err)
		go g.Stop()
	}
}

func (g *GoBGP) stop() {
	defer close(g.done)
	g.watches.stop()
	if g.stopBFD != nil {
		g.stopBFD()
		g.mu.Lock()
		var keys []bfd.SessionKey
		for _, n := range g.neighbors {
			if n.BFD != nil {
				keys = append(keys, bfdKey(n))
			}
		}
		g.mu.Unlock()
		for _, k := range keys {
			g.cfg.BFD.Remove(k) // already gone if the manager was closed
		}
	}
	if g.srv != nil {
		if gr := g.cfg.GracefulRestart; gr.Enabled && gr.Notification && g.Err() == nil {
			// End each session with a Cease that RFC 8538 peers treat as a
			// graceful restart (Administrative Reset is not mapped to Hard
			// Reset); StopBgp's own Cease (Peer De-configured) would be.
			// StopBgp writes its NOTIFICATION directly, ahead of the queued
			// one, so wait (boundedly) until the sessions have ended.
			if g.cfg.Role == RoleReflector {
				g.shutdownAll()
				g.waitSessionsDown(gracefulStopWait)
			}
			for _, a := range g.neighborAddrs() {
				if err := g.srv.ResetPeer(context.Background(), &api.ResetPeerRequest{Address: a.String(), Communication: "graceful restart"}); err != nil {
					g.log.Warn("graceful stop: reset neighbor", "neighbor", a, "err", err)
				}
			}
			g.waitSessionsDown(gracefulStopWait)
		}
		g.srv.StopBgp(context.Background(), &api.StopBgpRequest{})
		g.srv.Stop()
	}
}

// shutdownAll shuts every session's socket at once (a reflector's graceful
// stop). GoBGP handles a Cease it sent as the end of the session, not as a
// graceful restart: it drops the client's records and withdraws them from
// the clients still connected. Reset one by one, the sessions therefore
// carried withdraws of the clients reset first to those reset later, and a
// switch that had lost the other reflector already told its hosts those
// targets were gone (reason 7; found by the soak, both reflectors stopped
// with SIGTERM). Sockets that end without a notification are a graceful
// restart at both ends: every record stays, stale, and nothing can be sent
// on them any more. The Ceases that follow find the sessions down.
func (g *GoBGP) shutdownAll() {
	g.mu.Lock()
	ns := make([]Neighbor, 0, len(g.neighbors))
	for _, n := range g.neighbors {
		ns = append(ns, n)
	}
	g.mu.Unlock()
	for _, n := range ns {
		if _, err := shutdownSessions(n.LocalAddress, n.Address); err != nil {
			g.log.Warn("graceful stop: could not shut the session's socket", "neighbor", n.Address, "err", err)
		}
	}
}

// gracefulStopWait bounds how long Stop waits for its graceful-restart
// Ceases to leave.
const gracefulStopWait = 2 * time.Second

// waitSessionsDown polls GoBGP until no session is established, or d has
// passed.
func (g *GoBGP) waitSessionsDown(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		up := false
		err := g.srv.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) {
			up = up || p.GetState().GetSessionState() == api.PeerState_ESTABLISHED
		})
		if err != nil || !up {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.log.Warn("graceful stop: sessions still up; stopping anyway")
}

// neighborAddrs lists the configured neighbors.
func (g *GoBGP) neighborAddrs() []netip.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]netip.Addr, 0, len(g.neighbors))
	for a := range g.neighbors {
		out = append(out, a)
	}
	return out
}

// AddNeighbor implements Speaker. A neighbor that is refused leaves no
// trace (policy sets, BFD session).
func (g *GoBGP) AddNeighbor(ctx context.Context, n Neighbor) error {
	switch {
	case !n.Address.IsValid():
		return errors.New("bgp: neighbor without address")
	case n.RRClient && g.cfg.Role != RoleReflector:
		return fmt.Errorf("bgp: neighbor %s: only a reflector has route-reflector clients", n.Address)
	case n.PeerReflector && (g.cfg.Role != RoleReflector || n.RRClient):
		return fmt.Errorf("bgp: neighbor %s: a peer reflector is a plain iBGP neighbor of a reflector", n.Address)
	case n.NoDefaultRT && !n.RRClient:
		return fmt.Errorf("bgp: neighbor %s: NoDefaultRT applies to route-reflector clients", n.Address)
	case g.cfg.TTLSecurity && !n.TTLSecurity:
		return fmt.Errorf("bgp: neighbor %s: the speaker requires GTSM, set TTLSecurity", n.Address)
	case n.BFD != nil && (g.cfg.BFD == nil || !n.LocalAddress.IsValid()):
		return fmt.Errorf("bgp: neighbor %s: BFD needs a BFD manager and the neighbor's local address", n.Address)
	}
	g.mu.Lock()
	_, dup := g.neighbors[n.Address]
	g.mu.Unlock()
	if dup {
		return fmt.Errorf("bgp: neighbor %s is already configured", n.Address)
	}
	if err := g.setNeighborSets(ctx, n, true); err != nil {
		return errors.Join(err, g.setNeighborSets(context.Background(), n, false))
	}
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: g.apiPeer(ctx, n)}); err != nil {
		return errors.Join(fmt.Errorf("bgp: add neighbor %s: %w", n.Address, err),
			g.setNeighborSets(context.Background(), n, false))
	}
	if n.BFD != nil {
		_, err := g.cfg.BFD.Add(bfd.Config{Key: bfdKey(n), DesiredMinTx: n.BFD.DesiredMinTx,
			RequiredMinRx: n.BFD.RequiredMinRx, DetectMult: n.BFD.DetectMult})
		if err != nil {
			undo := g.srv.DeletePeer(context.Background(), &api.DeletePeerRequest{Address: n.Address.String()})
			return errors.Join(fmt.Errorf("bgp: neighbor %s: %w", n.Address, err), undo,
				g.setNeighborSets(context.Background(), n, false))
		}
	}
	g.mu.Lock()
	g.neighbors[n.Address] = n
	g.mu.Unlock()
	return nil
}

func bfdKey(n Neighbor) bfd.SessionKey { return bfd.SessionKey{Local: n.LocalAddress, Peer: n.Address} }

// onBFD applies the asymmetry of docs/design.md §3. On a reflector, a client whose
// BFD session goes from Up to Down is gone: its BGP session is shut down at
// once (its records are withdrawn everywhere) and kept down until BFD is Up
// again. On a client, BFD Down towards a reflector drops that reflector's
// routes when another reflector serves (reflectorloss.go); otherwise they
// stay, as graceful restart keeps them if the TCP session dies.
func (g *GoBGP) onBFD(ch bfd.StateChange) {
	g.clients.bfdChanged(ch.Key.Peer)
	g.mu.Lock()
	n, ok := g.neighbors[ch.Key.Peer]
	ok = ok && n.BFD != nil && bfdKey(n) == ch.Key
	disabled := g.bfdDown[ch.Key.Peer]
	act := ok && g.cfg.Role == RoleReflector && n.RRClient
	switch {
	case act && ch.Old == bfd.Up && ch.New != bfd.Up && ch.PeerAdminDown:
		// The switch stopped its BFD on purpose (its daemon is stopping or
		// restarting): not a failure (RFC 5882 §3.2). Its BGP session
		// decides, with graceful restart.
		g.mu.Unlock()
		g.log.Info("BFD: neighbor signalled AdminDown; leaving its session to BGP", "neighbor", ch.Key.Peer)
		return
	case act && ch.Old == bfd.Up && ch.New != bfd.Up:
		g.bfdDown[ch.Key.Peer] = true
	case act && ch.New == bfd.Up && disabled:
		delete(g.bfdDown, ch.Key.Peer)
	default:
		g.mu.Unlock()
		if ok && ch.Old == bfd.Up && ch.New != bfd.Up {
			g.log.Warn("BFD down towards neighbor", "neighbor", ch.Key.Peer, "diag", ch.Diag.String())
			if g.cfg.Role == RoleClient && !ch.PeerAdminDown && g.loss.bfdDown(ch.Key.Peer) {
				g.goDropLost(ch.Key.Peer, whyBFD)
			}
		}
		return
	}
	g.mu.Unlock()
	ctx := context.Background()
	if ch.New == bfd.Up {
		g.log.Info("BFD up again; enabling neighbor", "neighbor", ch.Key.Peer)
		if err := g.srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: ch.Key.Peer.String()}); err != nil {
			g.log.Error("enabling neighbor after BFD up", "neighbor", ch.Key.Peer, "err", err)
		}
		return
	}
	g.log.Warn("BFD down: switch gone, shutting its session", "neighbor", ch.Key.Peer, "diag", ch.Diag.String())
	// End the connection before GoBGP can say goodbye with a Hard Reset,
	// which a switch that was only cut off would obey when its link came
	// back (sessionclose.go).
	if _, err := shutdownSessions(n.LocalAddress, ch.Key.Peer); err != nil {
		g.log.Warn("BFD down: could not shut the session's socket; the switch may get a Hard Reset", "neighbor", ch.Key.Peer, "err", err)
	}
	// The switch's TCP session may have died first (a killed process): the
	// session is then in graceful restart and GoBGP keeps its records stale
	// for the restart time, which shutting the idle session does not end.
	// Deleting the neighbor does: its records, stale or not, are withdrawn
	// at once. It is added again born disabled (AdminDown in its
	// configuration, not a DisablePeer request: GoBGP would still show it
	// enabled until the queued request lands, and drop an enable sent
	// meanwhile) until BFD is back.
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: ch.Key.Peer.String()}); err != nil {
		g.log.Error("removing neighbor after BFD down", "neighbor", ch.Key.Peer, "err", err)
		return
	}
	p := g.apiPeer(ctx, n)
	p.Conf.AdminDown = true
	if err := g.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
		g.log.Error("adding neighbor back after BFD down", "neighbor", ch.Key.Peer, "err", err)
		return
	}
}

// apiPeer is GoBGP's configuration of neighbor n; ctx bounds the look-up
// of restartPending.
func (g *GoBGP) apiPeer(ctx context.Context, n Neighbor) *api.Peer {
	asn := n.ASN
	if asn == 0 {
		asn = g.cfg.ASN
	}
	hold, keep := n.HoldTime, n.Keepalive
	if hold == 0 {
		hold = 9 * time.Second
	}
	if keep == 0 {
		keep = hold / 3
	}
	p := &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: n.Address.String(), PeerAsn: asn, AuthPassword: n.Password},
		Transport: &api.Transport{PassiveMode: n.Passive, RemotePort: uint32(n.Port)},
		Timers: &api.Timers{Config: &api.TimersConfig{HoldTime: uint64(hold / time.Second),
			KeepaliveInterval: uint64(keep / time.Second), ConnectRetry: 1}},
	}
	if n.LocalAddress.IsValid() {
		p.Transport.LocalAddress = n.LocalAddress.String()
	}
	if n.RRClient {
		p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: g.cfg.ClusterID.String()}
	}
	if n.TTLSecurity {
		p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 255}
	}
	gr := g.cfg.GracefulRestart
	if gr.Enabled {
		p.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(gr.RestartTime / time.Second),
			LocalRestarting: gr.Restarting && g.restartPending(ctx), NotificationEnabled: gr.Notification}
	}
	for _, f := range []*api.Family{familyOpaque, familyRTC} {
		as := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f, Enabled: true}}
		if gr.Enabled {
			as.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
			if f == familyRTC && g.cfg.Role == RoleClient {
				as.RouteTargetMembership = &api.RouteTargetMembership{
					Config: &api.RouteTargetMembershipConfig{DeferralTime: uint32(membershipDeferral / time.Second)}}
			}
		}
		p.AfiSafis = append(p.AfiSafis, as)
	}
	return p
}

// membershipDeferral bounds how long a client waits, on a new session to a
// reflector, for the reflector's route-target memberships (their End-of-RIB,
// RFC 4684 §6) before it sends its records. Without the wait GoBGP sends
// its table at once, filtered by memberships it does not hold yet: nothing,
// then End-of-RIB. A reflector that keeps the client's records stale
// (graceful restart) drops them all at that End-of-RIB and takes them back
// when they follow: a withdraw at every other switch. A restarting client's
// first sessions are deferred anyway (GoBGP's restart sync); this covers a
// session that comes up after that sync (TestRestartedClientLateReflectorKeepsRecords).
// A reflector sends its End-of-RIB right after its memberships, so the wait
// is a round trip; the deferral timer does nothing once that End-of-RIB
// came (GoBGP's softResetOut), and sends the table if it never does.
const membershipDeferral = 5 * time.Second

// restartPending reports whether this speaker, started as a graceful
// restart (GracefulRestart.Restarting), is still deferring its updates.
// GoBGP marks each neighbor configured as restarting (LocalRestarting) and,
// once the neighbors connected so far have sent End-of-RIB, clears the mark
// on all of them at once ("sync finished"; a neighbor's deferral timer, 360
// s, clears its own). A neighbor added after that — added back after a loss
// (reflectorloss.go, clientloss.go, onBFD) or configured later — must not
// be marked: GoBGP would send it nothing, not even this speaker's
// route-target memberships, until every neighbor had sent End-of-RIB again,
// which one that is down never does. A reflector that restarted once and
// later added a switch back after BFD lost it so sent that switch nothing
// for the deferral time; the switch, without the reflector's memberships,
// sent it nothing either, and its new records reached the other switches
// through the other reflector only and were lost with it (found by the
// soak, seed 8496823541670719219 step 5). Once seen over, the sync stays
// over.
func (g *GoBGP) restartPending(ctx context.Context) bool {
	if !g.cfg.GracefulRestart.Restarting || g.restartSynced.Load() {
		return false
	}
	synced := false
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		synced = synced || !p.GetGracefulRestart().GetLocalRestarting()
	})
	if err != nil {
		g.log.Warn("graceful restart: cannot tell whether the sync is over; adding the neighbor as restarting", "err", err)
		return true
	}
	if synced {
		g.restartSynced.Store(true)
	}
	return !synced
}

// RemoveNeighbor implements Speaker.
func (g *GoBGP) RemoveNeighbor(ctx context.Context, addr netip.Addr) error {
	if err := g.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()}); err != nil {
		return fmt.Errorf("bgp: remove neighbor %s: %w", addr, err)
	}
	g.mu.Lock()
	n := g.neighbors[addr]
	delete(g.neighbors, addr)
	delete(g.bfdDown, addr)
	delete(g.away, addr)
	g.mu.Unlock()
	if g.clients.setDemoted(addr, false) {
		if err := g.neighborSet(ctx, setSilent, addr, false); err != nil {
			return fmt.Errorf("bgp: remove neighbor %s: %w", addr, err)
		}
	}
	if n.BFD != nil {
		if err := g.cfg.BFD.Remove(bfdKey(n)); err != nil {
			return fmt.Errorf("bgp: neighbor %s: %w", addr, err)
		}
	}
	return g.setNeighborSets(ctx, n, false)
}

// Publish implements Speaker.
func (g *GoBGP) Publish(ctx context.Context, r record.Record, rts ...record.RouteTarget) error {
	key, value, err := record.Encode(r, len(rts))
	if err != nil {
		return err
	}
	path, err := opaquePath(key, value, rts)
	if err != nil {
		return err
	}
	if err := g.addPath(ctx, path); err != nil {
		return fmt.Errorf("bgp: publish: %w", err)
	}
	g.published.Add(1)
	return nil
}

// Withdraw implements Speaker.
func (g *GoBGP) Withdraw(ctx context.Context, key []byte) error {
	nlri, err := anypb.New(&api.OpaqueNLRI{Key: key})
	if err != nil {
		return err
	}
	err = g.srv.DeletePath(ctx, &api.DeletePathRequest{Family: familyOpaque,
		Path: &api.Path{Family: familyOpaque, Nlri: nlri, IsWithdraw: true}})
	if err != nil {
		return fmt.Errorf("bgp: withdraw: %w", err)
	}
	g.withdrawn.Add(1)
	return nil
}

// Subscribe implements Speaker; AnyRT subscribes to every record.
func (g *GoBGP) Subscribe(ctx context.Context, rt record.RouteTarget) error {
	if err := g.addPath(ctx, g.membership(rt)); err != nil {
		return fmt.Errorf("bgp: subscribe %s: %w", rt, err)
	}
	return nil
}

// membership is the RT-constraint path of a subscription.
func (g *GoBGP) membership(rt record.RouteTarget) *api.Path {
	if rt == record.AnyRT {
		return rtcPath(0, nil)
	}
	return rtcPath(g.cfg.ASN, &rt)
}

// Unsubscribe implements Speaker.
func (g *GoBGP) Unsubscribe(ctx context.Context, rt record.RouteTarget) error {
	p := g.membership(rt)
	if err := g.srv.DeletePath(ctx, &api.DeletePathRequest{Family: familyRTC, Path: p}); err != nil {
		return fmt.Errorf("bgp: unsubscribe %s: %w", rt, err)
	}
	return nil
}

func (g *GoBGP) addPath(ctx context.Context, p *api.Path) error {
	_, err := g.srv.AddPath(ctx, &api.AddPathRequest{Path: p})
	return err
}

// WatchRecords implements Speaker with the best-path table. With graceful
// restart, withdraws from a neighbor that just came back are held for the
// settle time (see GracefulRestart.SettleTime), and on a client those of
// records kept stale while their neighbor is away, until its restart time
// ends (holdUntil). The watch ends with ctx or Stop; fn runs on the
// watch's own goroutine.
func (g *GoBGP) WatchRecords(ctx context.Context, fn func(RecordEvent)) error {
	var s *settler
	if g.cfg.GracefulRestart.Enabled {
		s = newSettler(g.holdUntil)
	}
	snap := func(ctx context.Context) ([]RecordEvent, error) {
		return g.listPaths(ctx, api.TableType_GLOBAL, "", nil)
	}
	return g.watchTable(ctx, api.WatchEventRequest_Table_Filter_BEST, newRecordWatch(g.cfg.WatchQueue, fn, snap, false, s, g.log))
}

// uptimeRead is a session's establishment time as GoBGP reported it, and
// when it was read.
type uptimeRead struct {
	up, read time.Time
}

// uptimeCacheFor is how long a read of GoBGP's session uptime is reused:
// withdraws come in bursts.
const uptimeCacheFor = 50 * time.Millisecond

// settlingSince is the time from which withdraws of records last learned
// from src are held for the settle time: when src's session last came back
// up, or, while src is dropped as a lost reflector (reflectorloss.go), when
// the latest of the other neighbors did. Dropping a lost reflector
// withdraws the records the serving one lacks; one that came back moments
// ago may still be re-learning them (found by the soak, seed
// 4501343603921199704 step 16: a leaf dropped a partitioned reflector 0.5 s
// after the other came back from a restart, and its hosts were told
// reason 7 for targets that were there).
func (g *GoBGP) settlingSince(src netip.Addr) time.Time {
	at := g.reestablishedAt(src)
	if !g.loss.lost(src) {
		return at
	}
	g.mu.Lock()
	others := make([]netip.Addr, 0, len(g.firstUp))
	for a := range g.firstUp {
		if a != src {
			others = append(others, a)
		}
	}
	g.mu.Unlock()
	for _, a := range others {
		if t := g.reestablishedAt(a); t.After(at) {
			at = t
		}
	}
	return at
}

// reestablishedAt is when the session to a last came back up after having
// been established before (zero if never). Neighbor events reach us on
// another GoBGP watcher than record events, so a withdraw can arrive
// before the event of the re-establishment that caused it: when the
// tracked time is not recent, GoBGP's own session uptime is asked (whole
// seconds, so rounded up).
func (g *GoBGP) reestablishedAt(a netip.Addr) time.Time {
	now := time.Now()
	g.mu.Lock()
	at, first, seen := g.reestablished[a], g.firstUp[a], !g.firstUp[a].IsZero()
	cached, fresh := g.uptime[a], now.Sub(g.uptime[a].read) < uptimeCacheFor
	g.mu.Unlock()
	if !seen || now.Sub(at) < g.cfg.GracefulRestart.SettleTime {
		return at
	}
	up := cached.up
	if !fresh {
		up = time.Time{}
		err := g.srv.ListPeer(context.Background(), &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
			if p.GetState().GetSessionState() == api.PeerState_ESTABLISHED && p.GetTimers().GetState().GetUptime() != nil {
				up = p.GetTimers().GetState().GetUptime().AsTime().Add(time.Second)
			}
		})
		if err != nil {
			return at
		}
		g.mu.Lock()
		g.uptime[a] = uptimeRead{up: up, read: now}
		g.mu.Unlock()
	}
	if up.After(first.Add(time.Second)) && up.After(at) {
		return up
	}
	return at
}

func (g *GoBGP) trackRestarts(ev NeighborEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case ev.State == StateEstablished:
		delete(g.away, ev.Address)
		if g.firstUp[ev.Address].IsZero() {
			g.firstUp[ev.Address] = time.Now()
		} else {
			g.reestablished[ev.Address] = time.Now()
		}
	case !g.firstUp[ev.Address].IsZero():
		if _, ok := g.away[ev.Address]; !ok {
			g.away[ev.Address] = awayRead{since: time.Now()}
		}
	}
}

// awayRead is when a neighbor's session ended and the restart time it had
// announced (zero until read).
type awayRead struct {
	since   time.Time
	restart time.Duration
}

// holdUntil is the settler's rule (see WatchRecords): until when a
// withdraw of a record last delivered from o is held. Withdraws of records
// from a neighbor that came back are held for the settle time
// (settlingSince). On a client, withdraws of records graceful restart kept
// stale are held too, until the neighbor's restart time is over, while it
// is away and not dropped as a lost reflector: GoBGP drops a restarting
// neighbor's stale routes as soon as one attempt to reconnect fails after
// the TCP connection is up (OpenSent to Idle), not when the restart time
// ends — and a reflector accepts and closes the connection of a switch it
// holds down after BFD loss, or one it has not configured yet while it
// starts (TestRefusedReconnectKeepsStaleRecords).
func (g *GoBGP) holdUntil(o origin, now time.Time) time.Time {
	until := g.settlingSince(o.src).Add(g.cfg.GracefulRestart.SettleTime)
	if !o.stale || g.cfg.Role != RoleClient || g.loss.lost(o.src) {
		return until
	}
	// Asked again at least every settle time: the neighbor's return may
	// reach us after its End-of-RIB's withdraws (another GoBGP watcher),
	// and from then on only the settle time holds.
	end := g.restartEnds(o.src)
	if next := now.Add(g.cfg.GracefulRestart.SettleTime); end.After(next) {
		end = next
	}
	if end.After(until) {
		until = end
	}
	return until
}

// restartEnds is when the restart time of an away neighbor ends (zero if
// it is not away): the restart time it announced, read from GoBGP once per
// absence, or ours.
func (g *GoBGP) restartEnds(a netip.Addr) time.Time {
	g.mu.Lock()
	away, ok := g.away[a]
	_, configured := g.neighbors[a]
	g.mu.Unlock()
	if !ok || !configured {
		return time.Time{}
	}
	if away.restart == 0 {
		away.restart = g.cfg.GracefulRestart.RestartTime
		err := g.srv.ListPeer(context.Background(), &api.ListPeerRequest{Address: a.String()}, func(p *api.Peer) {
			if t := p.GetGracefulRestart().GetPeerRestartTime(); t > 0 {
				away.restart = time.Duration(t) * time.Second
			}
		})
		if err == nil {
			g.mu.Lock()
			if cur, still := g.away[a]; still && cur.since.Equal(away.since) {
				g.away[a] = away
			}
			g.mu.Unlock()
		}
	}
	return away.since.Add(away.restart)
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
		g.mu.Lock()
		peers := make([]netip.Addr, 0, len(g.neighbors))
		for a := range g.neighbors {
			peers = append(peers, a)
		}
		g.mu.Unlock()
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

// WatchNeighbors implements Speaker. The watch ends with ctx or Stop; fn
// runs on the watch's own goroutine. After an overflow of its queue it
// gets the current state of every neighbor instead of the lost events.
func (g *GoBGP) WatchNeighbors(ctx context.Context, fn func(NeighborEvent)) error {
	wctx, cancel := g.watches.context(ctx)
	w := &neighborWatch{q: newWatchQueue[NeighborEvent](g.cfg.WatchQueue, false), fn: fn,
		snapshot: func(ctx context.Context) ([]NeighborEvent, error) {
			ns, err := g.Neighbors(ctx)
			out := make([]NeighborEvent, 0, len(ns))
			for _, n := range ns {
				out = append(out, NeighborEvent{Address: n.Address, State: n.State})
			}
			return out, err
		}}
	err := g.watchPeers(wctx, func(ev NeighborEvent) {
		if w.q.push(ev) {
			g.watches.resyncs.Add(1)
		}
	})
	if err != nil {
		cancel()
		return err
	}
	g.watches.goWatch(wctx, cancel, w.run)
	return nil
}

// watchPeers calls fn on GoBGP's watcher goroutine for every session state
// change until ctx ends; fn must not block. The graceful-restart tracker
// uses it directly, so a neighbor's return is recorded before the record
// watch (one hop further) delivers the withdraws that follow it.
func (g *GoBGP) watchPeers(ctx context.Context, fn func(NeighborEvent)) error {
	err := g.srv.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, func(r *api.WatchEventResponse) {
		pe := r.GetPeer()
		if pe == nil || pe.Type != api.WatchEventResponse_PeerEvent_STATE {
			return
		}
		addr, err := netip.ParseAddr(pe.Peer.GetState().GetNeighborAddress())
		if err != nil {
			return
		}
		fn(NeighborEvent{Address: addr, State: sessionState(pe.Peer.GetState().GetSessionState())})
	})
	if err != nil {
		return fmt.Errorf("bgp: watch neighbors: %w", err)
	}
	return nil
}

// Neighbors implements Speaker.
func (g *GoBGP) Neighbors(ctx context.Context) ([]NeighborStatus, error) {
	return g.listNeighbors(ctx, false)
}

// NeighborsAdvertised implements Speaker.
func (g *GoBGP) NeighborsAdvertised(ctx context.Context) ([]NeighborStatus, error) {
	return g.listNeighbors(ctx, true)
}

// listNeighbors lists the neighbors, with the advertised counts when
// advertised is set.
func (g *GoBGP) listNeighbors(ctx context.Context, advertised bool) ([]NeighborStatus, error) {
	var out []NeighborStatus
	err := g.srv.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: advertised}, func(p *api.Peer) {
		addr, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		if err != nil {
			return
		}
		g.mu.Lock()
		st := NeighborStatus{Neighbor: g.neighbors[addr], State: sessionState(p.GetState().GetSessionState())}
		g.mu.Unlock()
		st.RouterID, _ = netip.ParseAddr(p.GetState().GetRouterId())
		for _, as := range p.GetAfiSafis() {
			if isOpaque(as.GetConfig().GetFamily()) {
				st.Received = as.GetState().GetAccepted()
				st.Advertised = as.GetState().GetAdvertised()
				st.EndOfRIB = as.GetMpGracefulRestart().GetState().GetEndOfRibReceived()
			}
		}
		out = append(out, st)
	})
	if err != nil {
		return nil, fmt.Errorf("bgp: list neighbors: %w", err)
	}
	return out, nil
}

// Stats implements Speaker.
func (g *GoBGP) Stats() Stats {
	return Stats{Published: g.published.Load(), Withdrawn: g.withdrawn.Load(), Malformed: g.malformed.Load(),
		Resyncs: g.watches.resyncs.Load()}
}

// isOpaque compares families by field (proto.Equal reflects, and this runs
// for every path).
func isOpaque(f *api.Family) bool {
	return f.GetAfi() == familyOpaque.Afi && f.GetSafi() == familyOpaque.Safi
}

func sessionState(s api.PeerState_SessionState) SessionState {
	switch s {
	case api.PeerState_IDLE:
		return StateIdle
	case api.PeerState_CONNECT:
		return StateConnect
	case api.PeerState_ACTIVE:
		return StateActive
	case api.PeerState_OPENSENT:
		return StateOpenSent
	case api.PeerState_OPENCONFIRM:
		return StateOpenConfirm
	case api.PeerState_ESTABLISHED:
		return StateEstablished
	}
	return StateUnknown
}

// opaquePath builds the GoBGP path of one record: ORIGIN, MP_REACH (next
// hop 0.0.0.0) and the route targets.
func opaquePath(key, value []byte, rts []record.RouteTarget) (*api.Path, error) {
	nlri, err := anypb.New(&api.OpaqueNLRI{Key: key, Value: value})
	if err != nil {
		return nil, err
	}
	attrs, err := baseAttrs(familyOpaque, nlri)
	if err != nil {
		return nil, err
	}
	if len(rts) > 0 {
		ec := &api.ExtendedCommunitiesAttribute{}
		for _, rt := range rts {
			a, err := rtAny(rt)
			if err != nil {
				return nil, err
			}
			ec.Communities = append(ec.Communities, a)
		}
		a, err := anypb.New(ec)
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, a)
	}
	return &api.Path{Family: familyOpaque, Nlri: nlri, Pattrs: attrs}, nil
}

func baseAttrs(f *api.Family, nlri *anypb.Any) ([]*anypb.Any, error) {
	origin, err := anypb.New(&api.OriginAttribute{Origin: 0})
	if err != nil {
		return nil, err
	}
	mp, err := anypb.New(&api.MpReachNLRIAttribute{Family: f, NextHops: []string{"0.0.0.0"}, Nlris: []*anypb.Any{nlri}})
	if err != nil {
		return nil, err
	}
	return []*anypb.Any{origin, mp}, nil
}

// rtcPath builds an RT-constraint membership path; rt nil is the default
// route target (every route target).
func rtcPath(asn uint32, rt *record.RouteTarget) *api.Path {
	m := &api.RouteTargetMembershipNLRI{Asn: asn}
	if rt != nil {
		a, err := rtAny(*rt)
		if err != nil {
			panic(err) // both message types are always registered
		}
		m.Rt = a
	}
	nlri, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	attrs, err := baseAttrs(familyRTC, nlri)
	if err != nil {
		panic(err)
	}
	return &api.Path{Family: familyRTC, Nlri: nlri, Pattrs: attrs}
}

func rtAny(rt record.RouteTarget) (*anypb.Any, error) {
	if rt.Global <= 0xFFFF {
		return anypb.New(&api.TwoOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt.Global, LocalAdmin: rt.Local})
	}
	return anypb.New(&api.FourOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt.Global, LocalAdmin: rt.Local & 0xFFFF})
}
