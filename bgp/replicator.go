package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
)

// ConfigSpeaker is what configuration replication needs from a speaker:
// publishing and the Adj-RIB-In of peer reflectors (GoBGP implements it).
type ConfigSpeaker interface {
	Publish(ctx context.Context, r Record, rts ...RouteTarget) error
	WatchReceived(ctx context.Context, fn func(RecordEvent)) error
}

// ReplicatorConfig configures a ConfigReplicator.
type ReplicatorConfig struct {
	Speaker  ConfigSpeaker
	RouterID uint32      // this reflector; the Reflector field of its copies
	RT       RouteTarget // the fabric-wide configuration route target
	// OnAdopt is called (outside locks) with each object version learned
	// from another reflector that is newer than ours, after we re-originate
	// it; the daemon persists it there.
	OnAdopt func(ConfigRecord)
	Logger  *slog.Logger
}

// ConfigReplicator keeps a reflector's configuration in step with its peer
// reflectors (DESIGN §3): every reflector originates its own copy of every
// object under its own key, so a copy never dies with the reflector that
// wrote it; a newer version seen from a peer (by generation, then writer) is
// adopted and re-originated; deletions travel as tombstones (Deleted), so a
// returning reflector with an old copy cannot resurrect a deleted object.
type ConfigReplicator struct {
	cfg ReplicatorConfig
	log *slog.Logger

	mu      sync.Mutex
	objects map[ConfigObject]ConfigRecord
}

// NewConfigReplicator returns a replicator; seed it with Put (from the
// persistent store) before Run.
func NewConfigReplicator(cfg ReplicatorConfig) (*ConfigReplicator, error) {
	if cfg.Speaker == nil || cfg.RouterID == 0 {
		return nil, errors.New("bgp: replicator needs a speaker and a router-id")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &ConfigReplicator{cfg: cfg, log: log, objects: map[ConfigObject]ConfigRecord{}}, nil
}

// Put originates a version written locally (a commit, or the store's content
// at start-up). An older version than the one held is ignored; Put reports
// whether it was taken.
func (r *ConfigReplicator) Put(ctx context.Context, rec ConfigRecord) (bool, error) {
	rec.Reflector = r.cfg.RouterID
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.objects[rec.Object()]; ok && !rec.Newer(&cur) {
		return false, nil
	}
	if err := r.cfg.Speaker.Publish(ctx, &rec, r.cfg.RT); err != nil {
		return false, fmt.Errorf("bgp: originate %v: %w", rec.Object(), err)
	}
	r.objects[rec.Object()] = rec
	return true, nil
}

// Run watches records received from peers until ctx ends.
func (r *ConfigReplicator) Run(ctx context.Context) error {
	return r.cfg.Speaker.WatchReceived(ctx, func(ev RecordEvent) {
		c, ok := ev.Record.(*ConfigRecord)
		if !ok || ev.Withdrawn || c.Reflector == r.cfg.RouterID {
			return // a withdrawn peer copy means the peer went away or pruned: ours stays
		}
		adopted := *c
		took, err := r.Put(ctx, adopted)
		if err != nil {
			r.log.Warn("re-originating configuration failed", "object", c.Object(), "err", err)
			return
		}
		if took && r.cfg.OnAdopt != nil {
			adopted.Reflector = r.cfg.RouterID
			r.cfg.OnAdopt(adopted)
		}
	})
}

// Objects returns the versions this reflector originates, sorted.
func (r *ConfigReplicator) Objects() []ConfigRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ConfigRecord, 0, len(r.objects))
	for _, c := range r.objects {
		out = append(out, c)
	}
	sortConfig(out)
	return out
}

func sortConfig(cs []ConfigRecord) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Kind != cs[j].Kind {
			return cs[i].Kind < cs[j].Kind
		}
		return cs[i].Name < cs[j].Name
	})
}

// ConfigView is a reader's view of the configuration (switch agents, and
// tests): it holds every reflector's copy and answers per object with the
// newest version. A copy vanishing with its reflector changes nothing while
// another reflector still carries the same version.
type ConfigView struct {
	mu     sync.Mutex
	copies map[ConfigObject]map[uint32]ConfigRecord
}

// NewConfigView returns an empty view.
func NewConfigView() *ConfigView {
	return &ConfigView{copies: map[ConfigObject]map[uint32]ConfigRecord{}}
}

// Apply feeds a record event; it returns the object's newest version after
// the event and whether that changed (ok is false when no copy is left).
func (v *ConfigView) Apply(ev RecordEvent) (newest ConfigRecord, ok, changed bool) {
	var obj ConfigObject
	var refl uint32
	if c, isCfg := ev.Record.(*ConfigRecord); isCfg {
		obj, refl = c.Object(), c.Reflector
	} else if ev.Withdrawn && len(ev.Key) > 0 && RecordType(ev.Key[0]) == TypeConfig {
		if c, err := decodeConfigKey(ev.Key); err == nil {
			obj, refl = c.Object(), c.Reflector
		} else {
			return ConfigRecord{}, false, false
		}
	} else {
		return ConfigRecord{}, false, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	before, hadBefore := v.newestLocked(obj)
	if v.copies[obj] == nil {
		v.copies[obj] = map[uint32]ConfigRecord{}
	}
	if ev.Withdrawn {
		delete(v.copies[obj], refl)
	} else {
		v.copies[obj][refl] = *ev.Record.(*ConfigRecord)
	}
	after, has := v.newestLocked(obj)
	if !has {
		delete(v.copies, obj)
	}
	changed = has != hadBefore || (has && (after.Gen != before.Gen || after.Writer != before.Writer))
	return after, has, changed
}

func (v *ConfigView) newestLocked(obj ConfigObject) (ConfigRecord, bool) {
	var best ConfigRecord
	found := false
	for _, c := range v.copies[obj] {
		if !found || c.Newer(&best) {
			best, found = c, true
		}
	}
	return best, found
}

// Objects returns the newest version of every object, tombstones included,
// sorted by kind and name.
func (v *ConfigView) Objects() []ConfigRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []ConfigRecord
	for obj := range v.copies {
		if c, ok := v.newestLocked(obj); ok {
			out = append(out, c)
		}
	}
	sortConfig(out)
	return out
}

func decodeConfigKey(key []byte) (*ConfigRecord, error) {
	k := reader{b: key[1:]}
	c := &ConfigRecord{Reflector: k.u32(), Kind: k.u8()}
	c.Name = k.str()
	return c, k.done("config key")
}
