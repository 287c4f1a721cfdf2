package reflector

import (
	"slices"
	"strings"
	"sync"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/lossless"
)

// settings are the fabric settings a reflector replicates beside the zone
// store, each one configuration object persisted in the state directory:
// the lossless profile (lossless.go) and the record format
// (recordformat.go); and what each switch announced it reads. The sync
// loop (and the start steps) write the settings, the Adj-RIB-In watch
// what switches read; the admin API reads both. Each part locks for
// itself.
type settings struct {
	profilePath, formatPath string
	clients                 []ClientOptions
	clock                   *inof.Clock // generations of the settings

	profileMu sync.RWMutex
	profile   profileState

	formatMu sync.RWMutex
	format   formatState

	switchesMu  sync.Mutex
	switchReads map[inof.RouterID]uint32
}

func newSettings(o *Options, clock *inof.Clock) *settings {
	return &settings{profilePath: o.ProfilePath(), formatPath: o.FormatPath(), clients: o.Clients, clock: clock,
		profile: profileState{profile: lossless.Default()}, format: formatState{format: record.FormatDevices},
		switchReads: map[inof.RouterID]uint32{}}
}

// load reads the persisted settings (start steps).
func (s *settings) load() error {
	if err := s.loadProfile(); err != nil {
		return err
	}
	return s.loadFormat()
}

// loadSetting reads a fabric setting persisted at path (the envelope of
// generation, writer and payload) as the configuration record of kind,
// and moves the generation clock past it; false when none was saved.
func (s *settings) loadSetting(path string, kind configsync.Kind) (record.Config, bool, error) {
	var saved savedProfile
	ok, err := daemon.LoadState(path, profileFormat, &saved)
	if err != nil || !ok {
		return record.Config{}, false, err
	}
	s.clock.Advance(saved.Gen)
	return record.Config{Kind: uint8(kind), Gen: saved.Gen, Writer: saved.Writer, Payload: saved.Payload}, true, nil
}

// setting is a setting's record in effect and what it is, for the log.
type setting struct {
	what string
	rec  record.Config
}

// records lists the settings ever set, as originated (start steps).
func (s *settings) records() []setting {
	var out []setting
	if p := s.currentProfile(); p.rec.Gen != 0 {
		out = append(out, setting{what: "lossless profile", rec: p.rec})
	}
	if f := s.currentFormat(); f.rec.Gen != 0 {
		out = append(out, setting{what: "record format", rec: f.rec})
	}
	return out
}

func (s *settings) currentProfile() profileState {
	s.profileMu.RLock()
	defer s.profileMu.RUnlock()
	return s.profile
}

func (s *settings) currentFormat() formatState {
	s.formatMu.RLock()
	defer s.formatMu.RUnlock()
	return s.format
}

// noteSwitch takes a switch record (or its withdraw) a client sent, from
// the Adj-RIB-In watch.
func (s *settings) noteSwitch(ev bgp.RecordEvent) {
	if len(ev.Key) == 0 || record.Type(ev.Key[0]) != record.TypeSwitch {
		return
	}
	sw, err := record.ParseSwitchKey(ev.Key)
	if err != nil {
		return
	}
	s.switchesMu.Lock()
	defer s.switchesMu.Unlock()
	if w, ok := ev.Record.(*record.Switch); ok && !ev.Withdrawn {
		s.switchReads[sw] = w.Reads
	} else {
		delete(s.switchReads, sw)
	}
}

// switchesReading lists every configured client with what it announced.
func (s *settings) switchesReading() []api.SwitchReads {
	s.switchesMu.Lock()
	defer s.switchesMu.Unlock()
	out := make([]api.SwitchReads, 0, len(s.clients))
	for _, c := range s.clients {
		id := inof.MustParseRouterID(c.Address) // a switch peers from its router-id (validated)
		reads, ok := s.switchReads[id]
		out = append(out, api.SwitchReads{Switch: id.String(), Announced: ok, ReadsSets: reads&record.SwitchReadsDeviceSets != 0})
	}
	slices.SortFunc(out, func(a, b api.SwitchReads) int { return strings.Compare(a.Switch, b.Switch) })
	return out
}
