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

// profileState is the profile in effect. Only the sync loop writes it
// (under profileMu); the admin API reads it.
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
func (r *Reflector) loadProfile() error {
	r.profile = profileState{profile: lossless.Default()}
	rec, ok, err := r.loadSetting(r.opts.ProfilePath(), configsync.KindLossless)
	if err != nil || !ok {
		return err
	}
	p, err := lossless.Decode(rec.Payload)
	if err != nil {
		return fmt.Errorf("lossless profile %s: %w", r.opts.ProfilePath(), err)
	}
	r.profile = profileState{profile: p, rec: rec}
	return nil
}

// loadSetting reads a fabric setting persisted at path (the envelope of
// generation, writer and payload) as the configuration record of kind,
// and moves the generation clock past it; false when none was saved.
func (r *Reflector) loadSetting(path string, kind configsync.Kind) (record.Config, bool, error) {
	var s savedProfile
	ok, err := daemon.LoadState(path, profileFormat, &s)
	if err != nil || !ok {
		return record.Config{}, false, err
	}
	r.clock.Advance(s.Gen)
	return record.Config{Kind: uint8(kind), Gen: s.Gen, Writer: s.Writer, Payload: s.Payload}, true, nil
}

// setProfile (sync loop) writes a new version of the profile: persisted
// first, then originated.
func (r *Reflector) setProfile(ctx context.Context, p lossless.Profile, by api.Identity) error {
	payload, err := lossless.Encode(p)
	if err != nil {
		return err
	}
	rec := record.Config{Kind: uint8(configsync.KindLossless), Gen: r.clock.Next(), Writer: r.routerID, Payload: payload}
	if err := r.persistProfile(rec, p); err != nil {
		return err
	}
	if _, err := r.repl.Put(ctx, rec); err != nil {
		return fmt.Errorf("reflector: lossless profile saved; originating failed: %w", err)
	}
	if _, err := r.store.Note(zones.Entry{Identity: by.String(), Via: by.Via, Action: zones.ActionLossless,
		Summary: fmt.Sprintf("lossless profile %q (generation %d)", p.Name, rec.Gen), Profile: payload}); err != nil {
		return fmt.Errorf("reflector: lossless profile set; journal: %w", err)
	}
	if _, err := r.reconcileJournal(ctx); err != nil {
		return fmt.Errorf("reflector: lossless profile set; %w", err)
	}
	r.log.Info("lossless profile replaced", "identity", by.String(), "via", by.Via, "name", p.Name, "generation", rec.Gen)
	return nil
}

// adoptProfile (sync loop) takes a newer profile version a peer reflector
// originated (the replicator already re-originates it).
func (r *Reflector) adoptProfile(c record.Config) {
	r.profileMu.RLock()
	cur := r.profile.rec
	r.profileMu.RUnlock()
	if c.Name != "" || c.Part != 0 || c.Deleted || (cur.Gen != 0 && !c.Newer(&cur)) {
		r.m.malformedParts.Add(1)
		r.log.Warn("lossless profile from a peer reflector ignored", "generation", c.Gen,
			"writer", c.Writer.String(), "name", c.Name, "part", c.Part, "deleted", c.Deleted)
		return
	}
	p, err := lossless.Decode(c.Payload)
	if err != nil {
		r.m.malformedParts.Add(1)
		r.log.Warn("lossless profile from a peer reflector refused", "err", err)
		return
	}
	if err := r.clock.Observe(c.Gen); err != nil {
		r.log.Warn("lossless profile from a peer reflector", "err", err)
	}
	if err := r.persistProfile(c, p); err != nil {
		r.log.Error("persisting the lossless profile adopted from a peer reflector", "err", err)
		return
	}
	r.m.recordsAdopted.Add(1)
	r.log.Info("lossless profile adopted from a peer reflector", "name", p.Name, "generation", c.Gen,
		"writer", c.Writer.String())
	r.events.Publish(api.Event{Kind: "lossless", Subject: p.Name, Message: "lossless profile adopted from a peer reflector",
		Attributes: map[string]string{"generation": fmt.Sprint(c.Gen), "writer": c.Writer.String()}})
}

// persistProfile writes the state file and makes rec the version in effect.
func (r *Reflector) persistProfile(rec record.Config, p lossless.Profile) error {
	if err := saveProfileState(r.opts.ProfilePath(), rec.Gen, rec.Writer, rec.Payload); err != nil {
		return err
	}
	rec.Reflector = 0
	r.profileMu.Lock()
	r.profile = profileState{rec: rec, profile: p}
	r.profileMu.Unlock()
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
	release, err := r.started()
	if err != nil {
		return lossless.Profile{}, err
	}
	defer release()
	r.profileMu.RLock()
	defer r.profileMu.RUnlock()
	return r.profile.profile, nil
}

// SetLosslessProfile replaces the fabric's lossless profile (validate it
// first): the new version is persisted in the state directory and
// originated as a configuration record (kind configsync.KindLossless), which every
// other reflector adopts. ctx bounds the wait for the sync loop.
func (r *Reflector) SetLosslessProfile(ctx context.Context, p lossless.Profile) error {
	release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	req := profileRequest{profile: p, identity: api.IdentityFrom(ctx), done: make(chan error, 1)}
	return askLoop(ctx, r.loopDone, r.profileReqs, req, req.done)
}
