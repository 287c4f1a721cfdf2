package api

import (
	"context"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// Backend is what the API serves: the reflector's zone store, device table,
// sessions and lossless profile. Every method may be called from several
// goroutines at once.
type Backend interface {
	// Config returns the committed zoning configuration, a copy the caller
	// may keep.
	Config() *zones.Config
	// Commit begins a transaction on the current configuration, calls edit
	// with it, and commits it if edit returns nil (replicating the records
	// written, which it returns). If edit returns an error, Commit aborts
	// and returns an error wrapping it (errors.Is must find it). Errors of
	// the commit itself (zones.ErrConflict, validation) are returned wrapped.
	Commit(ctx context.Context, edit func(*zones.Tx) error) ([]zones.Record, error)
	// Devices returns every device the fabric knows, one per address.
	Devices(ctx context.Context) ([]Device, error)
	// Sessions returns the BGP sessions.
	Sessions(ctx context.Context) ([]Session, error)
	// BFDSessions returns the BFD sessions.
	BFDSessions(ctx context.Context) ([]BFDSession, error)
	// LosslessProfile returns the fabric's lossless profile.
	LosslessProfile(ctx context.Context) (lossless.Profile, error)
	// SetLosslessProfile replaces (and replicates) the fabric's lossless
	// profile; the API has validated it.
	SetLosslessProfile(ctx context.Context, p lossless.Profile) error
}

// HoldBackend is a Backend that knows which switches' records only
// graceful restart still holds (their session is down): ListDevices marks
// their devices stale with the time the hold ends.
type HoldBackend interface {
	Held(ctx context.Context) (map[inof.RouterID]time.Time, error)
}

// Device is a registered device as the fabric sees it: the report of the
// switch that shows it (Shown picks one per address). Its Reason says why
// an inactive device left; Changed is when it last changed state.
type Device = inof.Report

// ReportsBackend is a Backend that hands every switch's report of every
// device (each with the switch port it came in on and its first
// registration): GetDevice shows every switch that reports an address.
type ReportsBackend interface {
	Reports(ctx context.Context) ([]Device, error)
}

// Session is one BGP session.
type Session struct {
	Peer       string
	Kind       string // "client" (switch agent) or "reflector"
	State      string // "established", "active", "idle", …
	Since      time.Time
	Received   uint64 // records received from the peer
	Advertised uint64 // records advertised to the peer
	// What a backend knows of the session's configuration and progress
	// (zero when it does not): the peer's router-id, the source address,
	// the configured hold time and keepalive, whether this side is
	// passive, whether the peer sent End-of-RIB, whether BFD guards it.
	RouterID     string
	LocalAddress string
	HoldTime     time.Duration
	Keepalive    time.Duration
	Passive      bool
	EndOfRIB     bool
	BFD          bool
}

// BFDSession is one BFD session.
type BFDSession struct {
	Peer, Local string
	State       string // "up", "down", "init", "admin-down"
	Diagnostic  string
	Since       time.Time
	TxInterval  time.Duration
	RxInterval  time.Duration
	DetectMult  uint8
}
