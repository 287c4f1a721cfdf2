package api

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// reports returns every switch's report of every device: the backend's
// when it is a ReportsBackend, else the shown ones without their port.
func (s *devicesAPI) reports(ctx context.Context) ([]Device, error) {
	if rb, ok := s.b.(ReportsBackend); ok {
		rs, err := rb.Reports(ctx)
		if err != nil {
			return nil, statusOf(fmt.Errorf("devices: %w", err))
		}
		return rs, nil
	}
	devs, err := s.b.Devices(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("devices: %w", err))
	}
	return devs, nil
}

// GetDevice tells everything the server knows about one address.
func (s *devicesAPI) GetDevice(ctx context.Context, req *inofv1.GetDeviceRequest) (*inofv1.DeviceDetail, error) {
	addr, err := parseAddr("address", req.GetAddress())
	if err != nil {
		return nil, err
	}
	list, err := s.ListDevices(ctx, &inofv1.ListDevicesRequest{Address: addr.String()})
	if err != nil {
		return nil, err
	}
	if len(list.GetDevices()) == 0 {
		return nil, status.Errorf(codes.NotFound, "device %s is not registered", addr)
	}
	shown := list.GetDevices()[0]
	out := &inofv1.DeviceDetail{Device: shown}
	rs, err := s.reports(ctx)
	if err != nil {
		return nil, err
	}
	held, err := s.held(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Addr != addr {
			continue
		}
		p := &inofv1.DeviceReport{Switch: r.Switch.String(), AccessPort: r.AccessPort, Active: r.Active(),
			Shown: r.Switch.String() == shown.GetSwitch()}
		if !r.Active() {
			p.Reason = r.Reason.String()
		}
		if !r.Changed.IsZero() {
			p.Since = timestamppb.New(r.Changed)
		}
		if !r.Since.IsZero() {
			p.FirstSeen = timestamppb.New(r.Since)
		}
		if until, ok := held[r.Switch]; ok {
			p.HeldUntil = timestamppb.New(until)
		}
		out.Reports = append(out.Reports, p)
	}
	slices.SortStableFunc(out.Reports, func(a, b *inofv1.DeviceReport) int {
		switch {
		case a.GetShown() != b.GetShown() && a.GetShown():
			return -1
		case a.GetShown() != b.GetShown():
			return 1
		}
		sa, _ := inof.ParseRouterID(a.GetSwitch())
		sb, _ := inof.ParseRouterID(b.GetSwitch())
		return int(sa) - int(sb)
	})
	out.NqnClaims = nqnClaims(rs, shown.GetNqn())
	var vis *inofv1.VisibilityResponse
	if inof.Role(shown.GetRole()).IsHost() {
		vis, err = s.vis.Visibility(ctx, &inofv1.VisibilityRequest{Host: addr.String()})
	} else {
		vis, err = s.vis.WhoSees(ctx, &inofv1.WhoSeesRequest{Target: addr.String()})
	}
	if err != nil {
		return nil, err
	}
	out.Visibility = vis.GetTargets()
	out.Events = keptEvents(s.events, func(e Event) bool { return e.Subject == addr.String() })
	return out, nil
}

// nqnClaims lists the active reports that claim nqn as "SWITCH:PORT
// ADDRESS", sorted, when they come from more than one switch port (nil
// otherwise, and for no NQN). A dual-ported array and a device claiming
// another's NQN look the same here; a pin tells them apart (docs/zoning.md).
func nqnClaims(rs []Device, nqn string) []string {
	if nqn == "" {
		return nil
	}
	type at struct {
		sw   inof.RouterID
		port string
	}
	ports := map[at]bool{}
	var out []string
	for _, r := range rs {
		if r.NQN != nqn || !r.Active() {
			continue
		}
		ports[at{r.Switch, r.AccessPort}] = true
		out = append(out, fmt.Sprintf("%s:%s %s", r.Switch, r.AccessPort, r.Addr))
	}
	if len(ports) < 2 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// held returns the HoldBackend's holds (nil for another backend).
func (s *devicesAPI) held(ctx context.Context) (map[inof.RouterID]time.Time, error) {
	hb, ok := s.b.(HoldBackend)
	if !ok {
		return nil, nil
	}
	h, err := hb.Held(ctx)
	if err != nil {
		return nil, statusOf(fmt.Errorf("devices: %w", err))
	}
	return h, nil
}
