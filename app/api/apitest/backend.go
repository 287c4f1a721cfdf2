// Package apitest runs the admin API in-process for tests: a Backend on a
// real zone store (bbolt in a temporary directory) with devices, sessions
// and a lossless profile the test sets, served on a unix socket.
package apitest

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// Backend is an api.Backend on a real zones.Store; devices, sessions and
// the profile are whatever the test sets.
type Backend struct {
	Store *zones.Store
	now   func() time.Time

	mu       sync.Mutex
	devices  []api.Device
	reports  []api.Device
	sessions []api.Session
	bfd      []api.BFDSession
	profile  lossless.Profile
	held     map[inof.RouterID]time.Time
	refls    *api.ReflectorsStatus
	// beforeCommit, when set, runs after the edits and before the commit.
	beforeCommit func()
}

// NewBackend opens a store in t's temporary directory, closed at cleanup.
func NewBackend(t testing.TB) *Backend { return NewBackendAt(t, nil) }

// NewBackendAt is NewBackend with the store's clock (generations, and so
// journal times and ids) read from now (time.Now if nil).
func NewBackendAt(t testing.TB, now func() time.Time) *Backend {
	t.Helper()
	st, err := zones.Open(filepath.Join(t.TempDir(), "zones.db"), zones.StoreOptions{RouterID: 0x0a000001, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if now == nil {
		now = time.Now
	}
	return &Backend{Store: st, now: now, profile: lossless.Default()}
}

// SetDevices replaces the device table.
func (b *Backend) SetDevices(ds ...api.Device) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.devices = append([]api.Device(nil), ds...)
}

// SetReports sets what Reports returns (api.ReportsBackend): every
// switch's report with its port. Before, Reports returns the devices
// SetDevices set.
func (b *Backend) SetReports(rs ...api.Device) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reports = append([]api.Device(nil), rs...)
}

// Reports implements api.ReportsBackend.
func (b *Backend) Reports(context.Context) ([]api.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reports != nil {
		return append([]api.Device(nil), b.reports...), nil
	}
	return append([]api.Device(nil), b.devices...), nil
}

// SetSessions replaces the BGP and BFD session tables.
func (b *Backend) SetSessions(ss []api.Session, bfd []api.BFDSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sessions, b.bfd = ss, bfd
}

// SetHeld says which switches' records graceful restart holds, until when
// (api.HoldBackend).
func (b *Backend) SetHeld(h map[inof.RouterID]time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = h
}

// SetReflectors sets what Reflectors returns (api.ReflectorsBackend);
// before, it returns only this reflector, at the store's clock.
func (b *Backend) SetReflectors(st api.ReflectorsStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refls = &st
}

// Reflectors implements api.ReflectorsBackend.
func (b *Backend) Reflectors(context.Context) (api.ReflectorsStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refls != nil {
		return *b.refls, nil
	}
	return api.ReflectorsStatus{Now: b.now(), Reflectors: []api.ReflectorStatus{{RouterID: 0x0a000001, Self: true,
		Revision: api.Revision(b.Store.Config()), Generation: b.Store.Generation()}}}, nil
}

// Held implements api.HoldBackend.
func (b *Backend) Held(context.Context) (map[inof.RouterID]time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, nil
}

// BeforeCommit sets a hook run inside Commit between the edits and the
// store's commit (to let a test commit concurrently in that window).
func (b *Backend) BeforeCommit(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.beforeCommit = f
}

// Config implements api.Backend.
func (b *Backend) Config() *zones.Config { return b.Store.Config() }

// Commit implements api.Backend with a store transaction.
func (b *Backend) Commit(_ context.Context, edit func(*zones.Tx) error) ([]zones.Record, error) {
	tx := b.Store.Begin()
	if err := edit(tx); err != nil {
		tx.Abort()
		return nil, fmt.Errorf("apitest: %w", err)
	}
	b.mu.Lock()
	hook := b.beforeCommit
	b.mu.Unlock()
	if hook != nil {
		hook()
	}
	rs, err := tx.Commit()
	if err != nil {
		return nil, fmt.Errorf("apitest: %w", err)
	}
	return rs, nil
}

// Devices implements api.Backend.
func (b *Backend) Devices(context.Context) ([]api.Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.Device(nil), b.devices...), nil
}

// Sessions implements api.Backend.
func (b *Backend) Sessions(context.Context) ([]api.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.Session(nil), b.sessions...), nil
}

// BFDSessions implements api.Backend.
func (b *Backend) BFDSessions(context.Context) ([]api.BFDSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]api.BFDSession(nil), b.bfd...), nil
}

// LosslessProfile implements api.Backend.
func (b *Backend) LosslessProfile(context.Context) (lossless.Profile, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.profile, nil
}

// SetLosslessProfile implements api.Backend.
func (b *Backend) SetLosslessProfile(ctx context.Context, p lossless.Profile) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.profile = p
	payload, err := lossless.Encode(p)
	if err != nil {
		return err
	}
	id := api.IdentityFrom(ctx)
	_, err = b.Store.Note(zones.Entry{Identity: id.String(), Via: id.Via, Action: zones.ActionLossless,
		Summary: fmt.Sprintf("lossless profile %q", p.Name), Profile: payload})
	return err
}

// Journal implements api.JournalBackend.
func (b *Backend) Journal(context.Context) ([]zones.Entry, error) { return b.Store.Journal() }

// ConfigAt implements api.JournalBackend.
func (b *Backend) ConfigAt(_ context.Context, v zones.Version) (*zones.Config, bool, error) {
	return b.Store.ConfigAt(v)
}

// Conflicts implements api.JournalBackend.
func (b *Backend) Conflicts(context.Context) ([]zones.Conflict, error) { return b.Store.Conflicts() }

// Backup implements api.JournalBackend.
func (b *Backend) Backup(_ context.Context, w io.Writer) (int64, error) { return b.Store.Backup(w) }

// HistorySize implements api.JournalBackend.
func (b *Backend) HistorySize() int { return zones.DefaultHistorySize }
