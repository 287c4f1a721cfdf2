package bgp

// What bgp's external tests (package bgp_test, which share bgptest's
// speakers with bgp/table's tests) reach inside the speaker. Compiled into
// this package's tests only.

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/internal/echoprobe"
)

// The path codec and the policies' names.
var (
	OpaquePath       = opaquePath
	RTCPath          = rtcPath
	FamilyOpaque     = familyOpaque
	FamilyRTC        = familyRTC
	StalledSession   = stalledSession
	SentinelNeighbor = sentinelNeighbor
)

// NewGoBGPLogger is the logger a speaker gives its GoBGP server, at info
// level, for servers a benchmark runs without our speaker.
func NewGoBGPLogger(log *slog.Logger) gobgplog.Logger {
	return &slogAdapter{log: log, level: gobgplog.InfoLevel}
}

// WithProbe returns c with its echo probe replaced by probe.
func (c BFDConfirm) WithProbe(probe func(context.Context, echoprobe.Options) (echoprobe.Result, error)) BFDConfirm {
	c.probe = probe
	return c
}

// Server is the speaker's GoBGP server.
func (g *GoBGP) Server() *server.BgpServer { return g.srv }

// GoBGPLogger is the logger the speaker gave its GoBGP server.
func (g *GoBGP) GoBGPLogger() gobgplog.Logger { return g.gobgpLog }

// OnBFD hands the speaker a BFD state change as its BFD manager would.
func (g *GoBGP) OnBFD(ch bfd.StateChange) { g.bfdWatch.onBFD(ch) }

// AddPath adds a path to GoBGP as the speaker does, unchecked.
func (g *GoBGP) AddPath(ctx context.Context, p *api.Path) error { return g.addPath(ctx, p) }

// DemoteClient demotes (or restores) a client's records at a reflector.
func (g *GoBGP) DemoteClient(ctx context.Context, a netip.Addr, on bool) error {
	return g.policies.demoteClient(ctx, a, on)
}

// RestartPending reports whether a restarting speaker still waits for its
// sync.
func (g *GoBGP) RestartPending(ctx context.Context) bool { return g.conf.restartPending(ctx) }

// ReflectorLost reports whether a client has given up reflector a.
func (g *GoBGP) ReflectorLost(a netip.Addr) bool { return g.loss.lost(a) }

// FirstUp is when the session to a was first established (zero: never).
func (g *GoBGP) FirstUp(a netip.Addr) time.Time {
	r := g.restarts
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstUp[a]
}

// ReconnectBurst is how many prompt reconnects a neighbor gets within the
// window before it waits GoBGP's idle hold.
const ReconnectBurst = reconnectBurst

// BaselineProbe is how long the echo probe at a BFD up waits for an answer.
const BaselineProbe = baselineProbe

// EchoAnswered reports whether switch a's kernel answered the echo probe
// made when its BFD last came up (its baseline, applied).
func (g *GoBGP) EchoAnswered(a netip.Addr) bool {
	c := g.bfdWatch.confirm
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answers[a]
}

// WithMembershipDeferral returns gr with its route-target membership
// deferral set to d.
func (gr GracefulRestart) WithMembershipDeferral(d time.Duration) GracefulRestart {
	gr.membershipDeferral = d
	return gr
}
