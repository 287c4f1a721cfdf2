package switchagent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/zones"
)

// stateVersion is the format of the state file.
const stateVersion = 1

// savedState is what a switch agent keeps across restarts: enough to
// republish at once under the same keys, to know what each host was told,
// and to apply the same zone rules before the reflectors have resent the
// configuration, so that a restart changes nothing a host can see.
type savedState struct {
	Saved     time.Time                    `json:"saved"`
	Clean     bool                         `json:"clean"` // written by a clean stop
	Published []table.PublishedDevice      `json:"published"`
	Local     localRecords                 `json:"local"`
	Told      map[netip.Addr][]inof.Device `json:"told"`
	Zones     [][]byte                     `json:"zones"` // zones.Record, binary
	// Registrations are the deadlines of the active local registrations
	// (the registration table's, and restored ones not refreshed since),
	// so a restored record ages out when its device's registration would
	// have. Absent in files of older releases.
	Registrations []savedRegistration `json:"registrations,omitempty"`
	// Format is the record format the switch published in (absent in
	// files of older releases: per-device).
	Format record.Format `json:"format,omitempty"`
	// ZoningUnknown: the agent had not received the fabric's zoning yet
	// when it saved (the hold of a first start, confighold.go), so Zones
	// is no zoning of the fabric and the next start holds everything
	// closed too.
	ZoningUnknown bool `json:"zoning_unknown,omitempty"`
	// ToldGen is the newest told-journal generation this file holds
	// (toldjournal.go): a start replays only the newer ones. Absent in
	// files of older releases.
	ToldGen uint64 `json:"told_gen,omitempty"`
}

// localRecords are the local records in the state file, as Engine.Published
// gives them.
type localRecords []inof.Report

// UnmarshalJSON also reads the records of older releases' files, which
// name the access port "Port" and no switch (Engine.Restore fills it in).
func (l *localRecords) UnmarshalJSON(b []byte) error {
	var rs []struct {
		inof.Report
		Port string // the access port in older releases' files
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		return err
	}
	if rs == nil {
		*l = nil
		return nil
	}
	out := make(localRecords, len(rs))
	for i, r := range rs {
		if r.AccessPort == "" {
			r.AccessPort = r.Port
		}
		out[i] = r.Report
	}
	*l = out
	return nil
}

// savedRegistration is one registration's deadline, and its TTL when the
// registration table held it (zero for a restored one not taken over).
type savedRegistration struct {
	Port    string        `json:"port"`
	Addr    netip.Addr    `json:"addr"`
	Expires time.Time     `json:"expires"`
	TTL     time.Duration `json:"ttl,omitempty"`
}

// expiries returns the deadlines of the saved registrations after a
// restart at now. While the switch was down nobody read the devices'
// LLDPDUs, so a deadline is at least one TTL after the restart (the
// time a live device's next refresh takes at most); one saved without its
// TTL that has passed gets RestoredTTL. A device that went silent
// meanwhile still ages out, one TTL later than it would have.
func (s *savedState) expiries(now time.Time) map[RegistrationKey]time.Time {
	out := make(map[RegistrationKey]time.Time, len(s.Registrations))
	for _, r := range s.Registrations {
		at := r.Expires
		switch {
		case r.TTL > 0:
			at = later(at, now.Add(r.TTL))
		case at.Before(now):
			at = now.Add(RestoredTTL)
		}
		out[RegistrationKey{Port: r.Port, Addr: r.Addr}] = at
	}
	return out
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// registrations lists the deadlines to save: the registration table's
// entries, and the restored registrations it has not taken over.
func registrations(entries []l2proto.Entry, restored map[RegistrationKey]time.Time) []savedRegistration {
	out := make([]savedRegistration, 0, len(entries)+len(restored))
	for _, e := range entries {
		out = append(out, savedRegistration{Port: e.AccessPort, Addr: e.Device.Addr, Expires: e.Expires, TTL: e.TTL})
	}
	for k, at := range restored {
		out = append(out, savedRegistration{Port: k.Port, Addr: k.Addr, Expires: at})
	}
	slices.SortFunc(out, func(a, b savedRegistration) int {
		if c := strings.Compare(a.Port, b.Port); c != 0 {
			return c
		}
		return a.Addr.Compare(b.Addr)
	})
	return out
}

func loadState(path string) (savedState, bool, error) {
	var s savedState
	ok, err := daemon.LoadState(path, stateVersion, &s)
	return s, ok, err
}

func saveState(path string, s savedState) error {
	return daemon.SaveState(path, stateVersion, s)
}

// zoneRecords decodes the saved zone configuration.
func (s *savedState) zoneRecords() (zones.Records, error) {
	rs := zones.Records{}
	for i, b := range s.Zones {
		var r zones.Record
		if err := r.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("state: zone record %d: %w", i, err)
		}
		rs.Apply(r)
	}
	return rs, nil
}

// encodeZones encodes a zone configuration for the state file.
func encodeZones(rs zones.Records) ([][]byte, error) {
	out := make([][]byte, 0, len(rs))
	for _, r := range rs.Sorted() {
		b, err := r.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("state: zone record %s: %w", r.Key, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// ownRecords returns the saved published records of switch self. Records
// saved under another router-id (the switch's router_id changed) are
// dropped: reflectors refuse a record whose key names another switch than
// its sender, and quarantine the sender.
func (s *savedState) ownRecords(self inof.RouterID, log *slog.Logger) []table.PublishedDevice {
	out := make([]table.PublishedDevice, 0, len(s.Published))
	for _, d := range s.Published {
		if d.Record.Switch == self {
			out = append(out, d)
		}
	}
	if n := len(s.Published) - len(out); n > 0 {
		log.Warn("saved records of another router-id not republished (router_id changed?)", "records", n, "router_id", self)
	}
	return out
}
