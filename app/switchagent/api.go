package switchagent

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/peering"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// errReadOnly answers the API's write methods on a switch: zones and the
// lossless profile are edited on a reflector.
var errReadOnly = errors.New("switch agent: read-only; edit zones and the lossless profile on a reflector")

// API returns the agent as the backend of the admin API: in a fabric
// read-only (serve it with api.ServeOptions.ReadOnly): the zone
// configuration it applies, the device records it holds, its BGP and BFD
// sessions and the lossless profile it received; in direct mode the
// zoning is read-write on the switch's own store, with its journal
// (api.JournalBackend). Safe for concurrent use.
func (a *Agent) API() api.Backend { return a.fab.backend(switchBackend{a}) }

type switchBackend struct{ a *Agent }

// Config implements api.Backend: a copy of the configuration in force.
func (b switchBackend) Config() *zones.Config {
	if c := b.a.config.Load(); c != nil {
		return c.Clone()
	}
	return zones.NewConfig(zones.DefaultSettings())
}

// Commit implements api.Backend: refused.
func (b switchBackend) Commit(context.Context, func(*zones.Tx) error) ([]zones.Record, error) {
	return nil, errReadOnly
}

// Devices implements api.Backend from the device records the switch holds
// (its subscriptions decide which zones those cover).
func (b switchBackend) Devices(context.Context) ([]api.Device, error) {
	return api.Shown(b.a.table.Reports()), nil
}

// Sessions implements api.Backend: the sessions to the reflectors.
func (b switchBackend) Sessions(ctx context.Context) ([]api.Session, error) {
	ns, err := b.a.fab.neighbors(ctx)
	if errors.Is(err, errSpeakerNotRunning) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("switch agent: %w", err)
	}
	out := make([]api.Session, len(ns))
	for i, n := range ns {
		out[i] = peering.Session(n, "reflector")
	}
	return out, nil
}

// BFDSessions implements api.Backend.
func (b switchBackend) BFDSessions(context.Context) ([]api.BFDSession, error) {
	mgr := b.a.fab.bfdManager()
	if mgr == nil {
		return nil, nil
	}
	o := b.a.opts.BFD
	var out []api.BFDSession
	for _, s := range mgr.Sessions() {
		out = append(out, api.BFDSession{Peer: s.Key.Peer.String(), Local: s.Key.Local.String(), State: s.State.String(),
			Diagnostic: s.Diag.String(), TxInterval: s.TxInterval, RxInterval: o.RequiredMinRx, DetectMult: o.DetectMult})
	}
	return out, nil
}

// LosslessProfile implements api.Backend: the profile the reflectors
// published. Until the fabric view has settled it may still be on its way,
// so the call is refused as unavailable (hosts retry) rather than answered
// with a default the host would apply and then replace; once settled with
// none published, the fabric's profile is the default, as on a reflector.
func (b switchBackend) LosslessProfile(context.Context) (lossless.Profile, error) {
	if p := b.a.profile.Load(); p != nil {
		return *p, nil
	}
	if !b.a.settled.Load() {
		return lossless.Profile{}, status.Error(codes.Unavailable,
			"switch agent: the fabric view has not settled yet; the lossless profile may still arrive, retry")
	}
	return lossless.Default(), nil
}

// SetLosslessProfile implements api.Backend: refused.
func (b switchBackend) SetLosslessProfile(context.Context, lossless.Profile) error {
	return errReadOnly
}
