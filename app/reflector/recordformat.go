package reflector

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// The fabric's record format (docs/records.md, "Rolling upgrade"): how
// switches publish their devices. It is one configuration object (kind
// configsync.KindRecordFormat), persisted in the state directory and
// replicated like the lossless profile. Every switch announces what it
// reads in a switch record; the reflector takes those from its Adj-RIB-In
// and refuses "sets" while a configured switch has not announced it.

// FormatPath is the record format's state file in the state directory.
func (o *Options) FormatPath() string { return filepath.Join(o.StateDir, "record-format.json") }

// formatState is the format in effect. Only the sync loop writes it (under
// formatMu); the admin API reads it.
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
func (r *Reflector) loadFormat() error {
	r.format = formatState{format: record.FormatDevices}
	rec, ok, err := r.loadSetting(r.opts.FormatPath(), configsync.KindRecordFormat)
	if err != nil || !ok {
		return err
	}
	f, err := configsync.DecodeRecordFormat(rec.Payload)
	if err != nil {
		return fmt.Errorf("record format %s: %w", r.opts.FormatPath(), err)
	}
	r.format = formatState{format: f, rec: rec}
	return nil
}

// setFormat (sync loop) writes a new version of the format: persisted
// first, then originated.
func (r *Reflector) setFormat(ctx context.Context, f record.Format, by api.Identity) error {
	rec := record.Config{Kind: uint8(configsync.KindRecordFormat), Gen: r.clock.Next(), Writer: r.routerID,
		Payload: configsync.EncodeRecordFormat(f)}
	if err := r.persistFormat(rec, f); err != nil {
		return err
	}
	if _, err := r.repl.Put(ctx, rec); err != nil {
		return fmt.Errorf("reflector: record format saved; originating failed: %w", err)
	}
	r.log.Info("record format set", "identity", by.String(), "via", by.Via, "format", f.String(), "generation", rec.Gen)
	return nil
}

// adoptFormat (sync loop) takes a newer version a peer reflector
// originated (the replicator already re-originates it).
func (r *Reflector) adoptFormat(c record.Config) {
	r.formatMu.RLock()
	cur := r.format.rec
	r.formatMu.RUnlock()
	f, err := configsync.DecodeRecordFormat(c.Payload)
	if err != nil || c.Name != "" || c.Part != 0 || c.Deleted || (cur.Gen != 0 && !c.Newer(&cur)) {
		r.m.malformedParts.Add(1)
		r.log.Warn("record format from a peer reflector ignored", "generation", c.Gen, "writer", c.Writer.String(),
			"name", c.Name, "part", c.Part, "deleted", c.Deleted, "err", err)
		return
	}
	if err := r.clock.Observe(c.Gen); err != nil {
		r.log.Warn("record format from a peer reflector", "err", err)
	}
	if err := r.persistFormat(c, f); err != nil {
		r.log.Error("persisting the record format adopted from a peer reflector", "err", err)
		return
	}
	r.m.recordsAdopted.Add(1)
	r.log.Info("record format adopted from a peer reflector", "format", f.String(), "generation", c.Gen, "writer", c.Writer.String())
	r.events.Publish(api.Event{Kind: "fabric", Subject: "record-format", Message: "record format adopted from a peer reflector",
		Attributes: map[string]string{"format": f.String(), "generation": fmt.Sprint(c.Gen), "writer": c.Writer.String()}})
}

// persistFormat writes the state file and makes rec the version in effect.
func (r *Reflector) persistFormat(rec record.Config, f record.Format) error {
	if err := daemon.SaveState(r.opts.FormatPath(), profileFormat, savedProfile{Gen: rec.Gen, Writer: rec.Writer, Payload: rec.Payload}); err != nil {
		return fmt.Errorf("reflector: record format: %w", err)
	}
	rec.Reflector = 0
	r.formatMu.Lock()
	r.format = formatState{rec: rec, format: f}
	r.formatMu.Unlock()
	return nil
}

// noteSwitch takes a switch record (or its withdraw) a client sent, from
// the Adj-RIB-In watch.
func (r *Reflector) noteSwitch(ev bgp.RecordEvent) {
	if len(ev.Key) == 0 || record.Type(ev.Key[0]) != record.TypeSwitch {
		return
	}
	sw, err := record.ParseSwitchKey(ev.Key)
	if err != nil {
		return
	}
	r.switchesMu.Lock()
	defer r.switchesMu.Unlock()
	if r.switchReads == nil {
		r.switchReads = map[inof.RouterID]uint32{}
	}
	if w, ok := ev.Record.(*record.Switch); ok && !ev.Withdrawn {
		r.switchReads[sw] = w.Reads
	} else {
		delete(r.switchReads, sw)
	}
}

// switchesReading lists every configured client with what it announced.
func (r *Reflector) switchesReading() []api.SwitchReads {
	r.switchesMu.Lock()
	defer r.switchesMu.Unlock()
	out := make([]api.SwitchReads, 0, len(r.opts.Clients))
	for _, c := range r.opts.Clients {
		id := inof.MustParseRouterID(c.Address) // a switch peers from its router-id (validated)
		reads, ok := r.switchReads[id]
		out = append(out, api.SwitchReads{Switch: id.String(), Announced: ok, ReadsSets: reads&record.SwitchReadsDeviceSets != 0})
	}
	slices.SortFunc(out, func(a, b api.SwitchReads) int { return strings.Compare(a.Switch, b.Switch) })
	return out
}

// RecordFormat returns the fabric's record format and what each
// configured switch announced it reads.
func (r *Reflector) RecordFormat() (api.RecordFormatStatus, error) {
	release, err := r.started()
	if err != nil {
		return api.RecordFormatStatus{}, err
	}
	defer release()
	r.formatMu.RLock()
	f := r.format.format
	r.formatMu.RUnlock()
	return api.RecordFormatStatus{Format: f.String(), Switches: r.switchesReading()}, nil
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
	release, err := r.started()
	if err != nil {
		return err
	}
	defer release()
	if f == record.FormatSets {
		var behind []string
		all := r.switchesReading()
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
	return askLoop(ctx, r.loopDone, r.formatReqs, req, req.done)
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
	r.fabric.mu.Lock()
	defer r.fabric.mu.Unlock()
	n := 0
	for _, st := range r.fabric.bgp {
		if st.state == bgp.StateEstablished {
			n++
		}
	}
	return n
}
