package reflector

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp/record"
)

// The fabric's record format (docs/records.md, "Rolling upgrade"): how
// switches publish their devices. It is one configuration object (kind
// configsync.KindRecordFormat), persisted in the state directory and
// replicated like the lossless profile. Every switch announces what it
// reads in a switch record; the reflector takes those from its Adj-RIB-In
// and refuses "sets" while a configured switch has not announced it.

// FormatPath is the record format's state file in the state directory.
func (o *Options) FormatPath() string { return filepath.Join(o.StateDir, "record-format.json") }

// formatState is the format in effect. Only the sync loop (and the start
// steps) write it (settings.formatMu); the admin API reads it.
type formatState struct {
	rec    record.Config // zero Gen: never set, per-device
	format record.Format
}

// formatRequest asks the sync loop to change the format.
type formatRequest struct {
	format   record.Format
	identity api.Identity
	done     chan error
}

// loadFormat reads the persisted format, if any.
func (s *settings) loadFormat() error {
	rec, ok, err := s.loadSetting(s.formatPath, configsync.KindRecordFormat)
	if err != nil || !ok {
		return err
	}
	f, err := configsync.DecodeRecordFormat(rec.Payload)
	if err != nil {
		return fmt.Errorf("record format %s: %w", s.formatPath, err)
	}
	s.formatMu.Lock()
	s.format = formatState{format: f, rec: rec}
	s.formatMu.Unlock()
	return nil
}

// setFormat (sync loop) writes a new version of the format: persisted
// first, then originated.
func (l *syncLoop) setFormat(ctx context.Context, f record.Format, by api.Identity) error {
	rec := record.Config{Kind: uint8(configsync.KindRecordFormat), Gen: l.settings.clock.Next(), Writer: l.rn.routerID,
		Payload: configsync.EncodeRecordFormat(f)}
	if err := l.settings.persistFormat(rec, f); err != nil {
		return err
	}
	if _, err := l.rn.repl.Put(ctx, rec); err != nil {
		return fmt.Errorf("reflector: record format saved; originating failed: %w", err)
	}
	l.log.Info("record format set", "identity", by.String(), "via", by.Via, "format", f.String(), "generation", rec.Gen)
	return nil
}

// adoptFormat (sync loop) takes a newer version a peer reflector
// originated (the replicator already re-originates it).
func (l *syncLoop) adoptFormat(c record.Config) {
	cur := l.settings.currentFormat().rec
	f, err := configsync.DecodeRecordFormat(c.Payload)
	if err != nil || c.Name != "" || c.Part != 0 || c.Deleted || (cur.Gen != 0 && !c.Newer(&cur)) {
		l.m.malformedParts.Add(1)
		l.log.Warn("record format from a peer reflector ignored", "generation", c.Gen, "writer", c.Writer.String(),
			"name", c.Name, "part", c.Part, "deleted", c.Deleted, "err", err)
		return
	}
	if err := l.settings.clock.Observe(c.Gen); err != nil {
		l.log.Warn("record format from a peer reflector", "err", err)
	}
	if err := l.settings.persistFormat(c, f); err != nil {
		l.log.Error("persisting the record format adopted from a peer reflector", "err", err)
		return
	}
	l.m.recordsAdopted.Add(1)
	l.log.Info("record format adopted from a peer reflector", "format", f.String(), "generation", c.Gen, "writer", c.Writer.String())
	l.events.Publish(api.Event{Kind: "fabric", Subject: "record-format", Message: "record format adopted from a peer reflector",
		Attributes: map[string]string{"format": f.String(), "generation": fmt.Sprint(c.Gen), "writer": c.Writer.String()}})
}

// persistFormat writes the state file and makes rec the version in effect.
func (s *settings) persistFormat(rec record.Config, f record.Format) error {
	if err := daemon.SaveState(s.formatPath, profileFormat, savedProfile{Gen: rec.Gen, Writer: rec.Writer, Payload: rec.Payload}); err != nil {
		return fmt.Errorf("reflector: record format: %w", err)
	}
	rec.Reflector = 0
	s.formatMu.Lock()
	s.format = formatState{rec: rec, format: f}
	s.formatMu.Unlock()
	return nil
}

// RecordFormat returns the fabric's record format and what each
// configured switch announced it reads.
func (r *Reflector) RecordFormat() (api.RecordFormatStatus, error) {
	_, release, err := r.started()
	if err != nil {
		return api.RecordFormatStatus{}, err
	}
	defer release()
	return api.RecordFormatStatus{Format: r.settings.currentFormat().format.String(), Switches: r.settings.switchesReading()}, nil
}

// SetRecordFormat changes the fabric's record format. "sets" is refused
// (api.ErrFormatRefused, naming them) while a configured switch has not
// announced that it reads device sets; "per-device" is always accepted.
// ctx bounds the wait for the sync loop.
func (r *Reflector) SetRecordFormat(ctx context.Context, name string) error {
	f, err := record.ParseFormat(name)
	if err != nil {
		return fmt.Errorf("%w: %w", api.ErrFormatRefused, err)
	}
	rn, release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	if f == record.FormatSets {
		var behind []string
		all := r.settings.switchesReading()
		for _, s := range all {
			if !s.ReadsSets {
				behind = append(behind, s.Switch)
			}
		}
		if len(behind) > 0 {
			return fmt.Errorf("%w: %d of %d switches have not announced that they read device sets: %s (upgrade them, or wait until they are connected)",
				api.ErrFormatRefused, len(behind), len(all), strings.Join(behind, ", "))
		}
	}
	req := formatRequest{format: f, identity: api.IdentityFrom(ctx), done: make(chan error, 1)}
	return askLoop(ctx, rn.sync.done, rn.sync.formatReqs, req, req.done)
}

// RecordFormat implements api.RecordFormatBackend.
func (b backend) RecordFormat(context.Context) (api.RecordFormatStatus, error) {
	return b.r.RecordFormat()
}

// SetRecordFormat implements api.RecordFormatBackend.
func (b backend) SetRecordFormat(ctx context.Context, format string) error {
	return b.r.SetRecordFormat(ctx, format)
}

// DeviceCount is how many devices the fabric view holds (a count, cheap
// to poll).
func (r *Reflector) DeviceCount() int { return r.fabric.devices.Len() }

// EstablishedSessions is how many BGP sessions are established, as the
// neighbor watch last heard (a count, cheap to poll: Neighbors asks GoBGP
// for every session's advertised count, a walk of the whole table per
// session).
func (r *Reflector) EstablishedSessions() int {
	return r.fabric.established()
}
