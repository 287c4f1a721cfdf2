package reflector

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/zones"
)

// profileFormat versions the profile state file.
const profileFormat = 1

// ProfilePath is the lossless profile's state file in the state directory.
func (o *Options) ProfilePath() string { return filepath.Join(o.StateDir, "lossless.json") }

// savedProfile is the profile state file: the version in effect and its
// encoding, exactly as replicated.
type savedProfile struct {
	Gen     uint64        `json:"generation"`
	Writer  inof.RouterID `json:"writer"`
	Payload []byte        `json:"payload"`
}

// profileState is the profile in effect. Only the sync loop (and the
// start steps) write it (settings.profileMu); the admin API reads it.
type profileState struct {
	rec     record.Config // zero Gen: none set, the default applies
	profile lossless.Profile
}

// profileRequest asks the sync loop to replace the profile.
type profileRequest struct {
	profile  lossless.Profile
	identity api.Identity // who asked, for the log
	done     chan error
}

// loadProfile reads the persisted profile, if any, into the state.
func (s *settings) loadProfile() error {
	rec, ok, err := s.loadSetting(s.profilePath, configsync.KindLossless)
	if err != nil || !ok {
		return err
	}
	p, err := lossless.Decode(rec.Payload)
	if err != nil {
		return fmt.Errorf("lossless profile %s: %w", s.profilePath, err)
	}
	s.profileMu.Lock()
	s.profile = profileState{profile: p, rec: rec}
	s.profileMu.Unlock()
	return nil
}

// setProfile (sync loop) writes a new version of the profile: persisted
// first, then originated.
func (l *syncLoop) setProfile(ctx context.Context, p lossless.Profile, by api.Identity) error {
	payload, err := lossless.Encode(p)
	if err != nil {
		return err
	}
	rec := record.Config{Kind: uint8(configsync.KindLossless), Gen: l.settings.clock.Next(), Writer: l.rn.routerID, Payload: payload}
	if err := l.settings.persistProfile(rec, p); err != nil {
		return err
	}
	if _, err := l.rn.repl.Put(ctx, rec); err != nil {
		return fmt.Errorf("reflector: lossless profile saved; originating failed: %w", err)
	}
	if _, err := l.rn.store.Note(zones.Entry{Identity: by.String(), Via: by.Via, Action: zones.ActionLossless,
		Summary: fmt.Sprintf("lossless profile %q (generation %d)", p.Name, rec.Gen), Profile: payload}); err != nil {
		return fmt.Errorf("reflector: lossless profile set; journal: %w", err)
	}
	if _, err := l.reconcileJournal(ctx); err != nil {
		return fmt.Errorf("reflector: lossless profile set; %w", err)
	}
	l.log.Info("lossless profile replaced", "identity", by.String(), "via", by.Via, "name", p.Name, "generation", rec.Gen)
	return nil
}

// adoptProfile (sync loop) takes a newer profile version a peer reflector
// originated (the replicator already re-originates it).
func (l *syncLoop) adoptProfile(c record.Config) {
	cur := l.settings.currentProfile().rec
	if c.Name != "" || c.Part != 0 || c.Deleted || (cur.Gen != 0 && !c.Newer(&cur)) {
		l.m.malformedParts.Add(1)
		l.log.Warn("lossless profile from a peer reflector ignored", "generation", c.Gen,
			"writer", c.Writer.String(), "name", c.Name, "part", c.Part, "deleted", c.Deleted)
		return
	}
	p, err := lossless.Decode(c.Payload)
	if err != nil {
		l.m.malformedParts.Add(1)
		l.log.Warn("lossless profile from a peer reflector refused", "err", err)
		return
	}
	if err := l.settings.clock.Observe(c.Gen); err != nil {
		l.log.Warn("lossless profile from a peer reflector", "err", err)
	}
	if err := l.settings.persistProfile(c, p); err != nil {
		l.log.Error("persisting the lossless profile adopted from a peer reflector", "err", err)
		return
	}
	l.m.recordsAdopted.Add(1)
	l.log.Info("lossless profile adopted from a peer reflector", "name", p.Name, "generation", c.Gen,
		"writer", c.Writer.String())
	l.events.Publish(api.Event{Kind: "lossless", Subject: p.Name, Message: "lossless profile adopted from a peer reflector",
		Attributes: map[string]string{"generation": fmt.Sprint(c.Gen), "writer": c.Writer.String()}})
}

// persistProfile writes the state file and makes rec the version in effect.
func (s *settings) persistProfile(rec record.Config, p lossless.Profile) error {
	if err := saveProfileState(s.profilePath, rec.Gen, rec.Writer, rec.Payload); err != nil {
		return err
	}
	rec.Reflector = 0
	s.profileMu.Lock()
	s.profile = profileState{rec: rec, profile: p}
	s.profileMu.Unlock()
	return nil
}

// saveProfileState writes the profile state file.
func saveProfileState(path string, gen uint64, writer inof.RouterID, payload []byte) error {
	b := savedProfile{Gen: gen, Writer: writer, Payload: payload}
	if err := daemon.SaveState(path, profileFormat, b); err != nil {
		return fmt.Errorf("reflector: lossless profile: %w", err)
	}
	return nil
}

// LosslessProfile returns the fabric's lossless profile: the newest version
// set on any reflector, or lossless.Default() if none was ever set.
func (r *Reflector) LosslessProfile() (lossless.Profile, error) {
	_, release, err := r.started()
	if err != nil {
		return lossless.Profile{}, err
	}
	defer release()
	return r.settings.currentProfile().profile, nil
}

// SetLosslessProfile replaces the fabric's lossless profile (validate it
// first): the new version is persisted in the state directory and
// originated as a configuration record (kind configsync.KindLossless), which every
// other reflector adopts. ctx bounds the wait for the sync loop.
func (r *Reflector) SetLosslessProfile(ctx context.Context, p lossless.Profile) error {
	rn, release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	req := profileRequest{profile: p, identity: api.IdentityFrom(ctx), done: make(chan error, 1)}
	return askLoop(ctx, rn.sync.done, rn.sync.profileReqs, req, req.done)
}
