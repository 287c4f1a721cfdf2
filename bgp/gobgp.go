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

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
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
	// membershipDeferral replaces the default membershipDeferral (tests
	// that must tell an answer from the timer's).
	membershipDeferral time.Duration
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
	// BFDConfirm: how a reflector confirms a switch's BFD down before it
	// declares the switch gone, and dampens flapping switches.
	BFDConfirm BFDConfirm
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

// GoBGP is the Speaker implementation on an embedded GoBGP v3 server. It
// runs the server, its neighbors, paths and watches itself, and delegates
// to collaborators that each own their state: restarts (graceful
// restart's settling and holding, gobgp_restart.go), bfdWatch (BFD
// changes and the confirmation of BFD downs, bfdwatch.go), reflectorLoss
// and reconnects (a client's lost reflectors and prompt reconnects),
// clientLoss (a reflector's silent switches), policies (a reflector's
// policies and neighbor sets) and peerConfig (a neighbor's GoBGP
// configuration). They see the configured neighbors (neighborTable), the
// speaker's watches, GoBGP's API through narrow interfaces and each
// other, never the speaker itself.
type GoBGP struct {
	cfg      Options
	log      *slog.Logger
	srv      *server.BgpServer
	gobgpLog *slogAdapter // GoBGP's logger; its Fatal stops the speaker
	watches  watchGroup

	stopOnce sync.Once
	done     chan struct{}
	fatalErr atomic.Pointer[error]

	// neighbors are the configured neighbors (gobgp_neighbors.go).
	neighbors neighborTable

	restarts *restarts      // the sessions across restarts (gobgp_restart.go)
	bfdWatch *bfdWatch      // BFD changes and the confirmation of downs (bfdwatch.go)
	clients  *clientLoss    // a reflector's switches' sessions (clientloss.go)
	loss     *reflectorLoss // a client's lost reflectors (reflectorloss.go)
	policies *policies      // a reflector's policies and neighbor sets (policy.go)
	conf     *peerConfig    // a neighbor's GoBGP configuration (peerconfig.go)

	published, withdrawn, malformed atomic.Uint64
	malformedLog, resyncLog         ratelimit.Limit
}

var _ Speaker = (*GoBGP)(nil)

// peerAPI is what the speaker's collaborators call of GoBGP's API (its
// *server.BgpServer): the neighbors' state and configuration.
type peerAPI interface {
	ListPeer(context.Context, *api.ListPeerRequest, func(*api.Peer)) error
	AddPeer(context.Context, *api.AddPeerRequest) error
	DeletePeer(context.Context, *api.DeletePeerRequest) error
	ResetPeer(context.Context, *api.ResetPeerRequest) error
	EnablePeer(context.Context, *api.EnablePeerRequest) error
	DisablePeer(context.Context, *api.DisablePeerRequest) error
}

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
	g := &GoBGP{cfg: cfg, log: log, neighbors: newNeighborTable(), done: make(chan struct{}),
		malformedLog: ratelimit.Limit{Every: time.Second}, resyncLog: ratelimit.Limit{Every: time.Second}}
	// The collaborators reach GoBGP's server, which Start creates, through
	// gobgp; none calls it before Start.
	gobgp := func() peerAPI { return g.srv }
	g.policies = &policies{gobgp: func() policyAPI { return g.srv }, asn: cfg.ASN}
	g.conf = &peerConfig{asn: cfg.ASN, clusterID: cfg.ClusterID, role: cfg.Role, gr: cfg.GracefulRestart, gobgp: gobgp, log: log}
	g.clients = &clientLoss{neighbors: &g.neighbors, bfds: cfg.BFD, watches: &g.watches, policies: g.policies, log: log}
	reconnects := &reconnects{gobgp: gobgp, watches: &g.watches, log: log}
	g.loss = &reflectorLoss{neighbors: &g.neighbors, bfds: cfg.BFD, conf: g.conf, gobgp: gobgp, watches: &g.watches,
		reconnects: reconnects, grEnabled: cfg.GracefulRestart.Enabled, log: log}
	g.restarts = newRestarts(&g.neighbors, cfg.BFD, gobgp, cfg.GracefulRestart, cfg.Role, g.loss, log)
	g.bfdWatch = &bfdWatch{confirm: newConfirmState(cfg.BFDConfirm), role: cfg.Role, bfds: cfg.BFD,
		neighbors: &g.neighbors, restarts: g.restarts, clients: g.clients, loss: g.loss, reconnects: reconnects,
		conf: g.conf, gobgp: gobgp, log: log, probeLog: ratelimit.NewLog(time.Minute, nil)}
	return g, nil
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
		if err := g.watchPeers(g.watches.lifetime(), g.restarts.trackRestarts); err != nil {
			g.Stop()
			return err
		}
		// Every neighbor that comes back restarted is answered
		// (answerRestarted) for the speaker's life.
		life := g.watches.lifetime()
		if err := g.watchPeers(life, func(ev NeighborEvent) { g.restarts.answerRestarted(life, ev) }); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.Role == RoleClient {
		if err := g.watchPeers(g.watches.lifetime(), g.loss.sessionChanged); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.BFD != nil {
		bctx, cancel := g.watches.context(context.Background())
		g.watches.goWatch(bctx, cancel, g.bfdWatch.watchBFD)
	}
	wctx, cancel := g.watches.context(context.Background())
	g.watches.goWatch(wctx, cancel, func(ctx context.Context) { watchWallClock(ctx, &g.neighbors, g.log) })
	if g.cfg.BFD != nil && g.cfg.Role == RoleReflector {
		if err := g.watchPeers(g.watches.lifetime(), g.clients.sessionChanged); err != nil {
			g.Stop()
			return err
		}
	}
	if g.cfg.Role == RoleReflector {
		if err := g.policies.definePolicies(ctx); err != nil {
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
	if g.cfg.BFD != nil {
		var keys []bfd.SessionKey
		for _, n := range g.neighbors.all() {
			if n.BFD != nil {
				keys = append(keys, bfdKey(n))
			}
		}
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
			for _, a := range g.neighbors.addrs() {
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
	for _, n := range g.neighbors.all() {
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

// Stats implements Speaker.
func (g *GoBGP) Stats() Stats {
	b := g.bfdWatch
	return Stats{Published: g.published.Load(), Withdrawn: g.withdrawn.Load(), Malformed: g.malformed.Load(),
		Resyncs: g.watches.resyncs.Load(), BFDConfirmed: b.bfdConfirmed.Load(), BFDUnconfirmed: b.bfdUnconfirmed.Load(),
		BFDDampened: b.bfdDampened.Load()}
}
