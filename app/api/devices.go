package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// devicesAPI takes the calls on the registered devices: the list, and one
// device's reports, visibility and events.
type devicesAPI struct {
	b      Backend
	vis    *visibilityAPI // a device's visibility (GetDevice)
	events *Feed          // a device's kept events (GetDevice)
	log    *slog.Logger
}

// ListDevices lists the devices that pass every filter, by address.
func (s *devicesAPI) ListDevices(ctx context.Context, req *inofv1.ListDevicesRequest) (*inofv1.ListDevicesResponse, error) {
	match, err := deviceFilter(req)
	if err != nil {
		return nil, err
	}
	cfg := s.b.Config()
	if z := req.GetZone(); z != "" && z != zones.DefaultZone && cfg.Zones[z] == nil {
		return nil, status.Errorf(codes.NotFound, "zone %q: %v", z, zones.ErrNotFound)
	}
	devs, err := s.b.Devices(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("devices: %w", err))
	}
	held, err := s.held(ctx)
	if err != nil {
		return nil, err
	}
	ix := newIndex(s.log, cfg, devs)
	sort.Slice(devs, func(i, j int) bool { return devs[i].Addr.Less(devs[j].Addr) })
	out := &inofv1.ListDevicesResponse{}
	for _, d := range devs {
		zs := ix.Zones(d.Addr)
		if match(d, zs) {
			pd := deviceProto(d, zs)
			if until, ok := held[d.Switch]; ok {
				pd.HeldUntil = timestamppb.New(until)
			}
			pd.AccessPort = d.AccessPort
			pd.PinRefused = cfg.Refuses(d)
			out.Devices = append(out.Devices, pd)
		}
	}
	return out, nil
}

// deviceFilter checks the filters of req and returns the predicate.
func deviceFilter(req *inofv1.ListDevicesRequest) (func(Device, []string) bool, error) {
	var prefix netip.Prefix
	if a := req.GetAddress(); a != "" {
		var err error
		if strings.Contains(a, "/") {
			prefix, err = netip.ParsePrefix(a)
		} else {
			var addr netip.Addr
			addr, err = netip.ParseAddr(a)
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "address filter %q: want an address or a prefix: %v", a, err)
		}
		prefix = prefix.Masked()
	}
	var active *bool
	switch st := req.GetStatus(); st {
	case "":
	case "active", "inactive":
		v := st == "active"
		active = &v
	default:
		return nil, status.Errorf(codes.InvalidArgument, "status filter %q: want active or inactive", st)
	}
	role := inof.Role(req.GetRole())
	if !role.Valid() && role != inof.RoleUnknown {
		return nil, status.Errorf(codes.InvalidArgument, "role filter %d: unknown role", req.GetRole())
	}
	return func(d Device, zs []string) bool {
		switch {
		case prefix.IsValid() && !prefix.Contains(d.Addr),
			req.GetSwitch() != "" && d.Switch.String() != req.GetSwitch(),
			active != nil && (d.State == inof.StateActive) != *active,
			role == inof.RoleHost && !d.Role.IsHost(),
			role == inof.RoleTarget && !d.Role.IsTarget(),
			role == inof.RoleBoth && d.Role != inof.RoleBoth:
			return false
		}
		switch z := req.GetZone(); z {
		case "":
			return true
		case zones.DefaultZone:
			return len(zs) == 0
		default:
			return slices.Contains(zs, z)
		}
	}, nil
}
