package api

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// zoningProto converts a configuration, sorted by name.
func zoningProto(c *zones.Config) *inofv1.Zoning {
	out := &inofv1.Zoning{
		Revision: Revision(c),
		Settings: &inofv1.Settings{DefaultZoneEnabled: c.Settings.DefaultZoneEnabled, HardZoning: c.Settings.HardZoning},
	}
	for _, n := range c.ZoneNames() {
		out.Zones = append(out.Zones, &inofv1.Zone{Name: n, Members: memberStrings(c.Zones[n].Members)})
	}
	for _, n := range aliasNames(c) {
		out.Aliases = append(out.Aliases, &inofv1.Alias{Name: n, Members: memberStrings(c.Aliases[n].Members)})
	}
	for _, n := range c.PinNQNs() {
		out.Pins = append(out.Pins, &inofv1.Pin{Nqn: n, At: locationStrings(c.Pins[n].At)})
	}
	return out
}

func locationStrings(ls []zones.Location) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

func memberStrings(ms []zones.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

func deviceProto(d Device, zs []string) *inofv1.Device {
	out := &inofv1.Device{
		Address:  d.Addr.String(),
		Role:     inofv1.Role(d.Role),
		Protocol: d.Protocol.String(),
		Port:     uint32(d.Port),
		Nqn:      d.NQN,
		Switch:   d.Switch.String(),
		Active:   d.State == inof.StateActive,
		Zones:    zs,
	}
	if d.State != inof.StateActive {
		out.Reason = d.Reason.String()
	}
	if !d.Changed.IsZero() {
		out.Since = timestamppb.New(d.Changed)
	}
	return out
}
