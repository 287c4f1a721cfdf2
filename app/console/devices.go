package console

import (
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// deviceFilter is the devices page's form: the API's filters (zone,
// switch, role, state) and two of the console's own (protocol, a text the
// address or NQN contains).
type deviceFilter struct {
	Q, Zone, Switch, State, Role, Protocol string
}

type devicesView struct {
	Filter   deviceFilter
	Devices  []*inofv1.Device
	Zones    []string
	Switches []string
	All      int
}

var roleOf = map[string]inofv1.Role{"host": inofv1.Role_ROLE_HOST, "target": inofv1.Role_ROLE_TARGET, "both": inofv1.Role_ROLE_BOTH}

func (c *Console) devices(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	q := r.URL.Query()
	f := deviceFilter{Q: strings.TrimSpace(q.Get("q")), Zone: q.Get("zone"), Switch: q.Get("switch"), State: q.Get("state"),
		Role: q.Get("role"), Protocol: q.Get("protocol")}
	req := &inofv1.ListDevicesRequest{Zone: f.Zone, Switch: f.Switch, Role: roleOf[f.Role]}
	if f.Role != "" && req.Role == inofv1.Role_ROLE_UNSPECIFIED {
		return "", nil, status.Errorf(codes.InvalidArgument, "role %q: want host, target or both", f.Role)
	}
	switch f.State {
	case "", "stale":
	case "active", "inactive":
		req.Status = f.State
	default:
		return "", nil, status.Errorf(codes.InvalidArgument, "state %q: want active, inactive or stale", f.State)
	}
	all, err := c.f.ListDevices(ctx, &inofv1.ListDevicesRequest{})
	if err != nil {
		return "", nil, err
	}
	resp, err := c.f.ListDevices(ctx, req)
	if err != nil {
		return "", nil, err
	}
	z, err := c.f.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return "", nil, err
	}
	v := devicesView{Filter: f, All: len(all.GetDevices()), Zones: []string{"default"}}
	for _, x := range z.GetZones() {
		v.Zones = append(v.Zones, x.GetName())
	}
	for _, d := range all.GetDevices() {
		if !slices.Contains(v.Switches, d.GetSwitch()) {
			v.Switches = append(v.Switches, d.GetSwitch())
		}
	}
	slices.Sort(v.Switches)
	text := strings.ToLower(f.Q)
	for _, d := range resp.GetDevices() {
		if f.Protocol != "" && d.GetProtocol() != f.Protocol {
			continue
		}
		if f.State == "stale" && d.GetHeldUntil() == nil {
			continue
		}
		if text != "" && !strings.Contains(strings.ToLower(d.GetAddress()+" "+d.GetNqn()), text) {
			continue
		}
		v.Devices = append(v.Devices, d)
	}
	return "Devices", v, nil
}

type deviceView struct {
	Device *inofv1.Device
	// Sees are the targets a host sees or the hosts that see a target, with
	// Why's reason (Visibility, WhoSees).
	Sees    []*inofv1.WhyResponse
	AsHost  bool
	History []event // newest first: the events of this address
	// Claims are the switch ports claiming the device's NQN
	// ("SWITCH:PORT ADDRESS"), when more than one does (GetDevice).
	Claims []string
}

func (c *Console) device(r *http.Request) (string, any, error) {
	ctx, cancel := bounded(r)
	defer cancel()
	addr := r.PathValue("addr")
	resp, err := c.f.ListDevices(ctx, &inofv1.ListDevicesRequest{Address: addr})
	if err != nil {
		return "", nil, err
	}
	var d *inofv1.Device
	for _, x := range resp.GetDevices() {
		if x.GetAddress() == addr {
			d = x
		}
	}
	if d == nil {
		return "", nil, status.Errorf(codes.NotFound, "device %s is not registered", addr)
	}
	v := deviceView{Device: d}
	detail, err := c.f.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: addr})
	if err != nil {
		return "", nil, err
	}
	v.Claims = detail.GetNqnClaims()
	switch d.GetRole() {
	case inofv1.Role_ROLE_HOST, inofv1.Role_ROLE_BOTH:
		v.AsHost = true
		sees, err := c.f.Visibility(ctx, &inofv1.VisibilityRequest{Host: addr})
		if err != nil {
			return "", nil, err
		}
		v.Sees = sees.GetTargets()
	default:
		sees, err := c.f.WhoSees(ctx, &inofv1.WhoSeesRequest{Target: addr})
		if err != nil {
			return "", nil, err
		}
		v.Sees = sees.GetTargets()
	}
	evs, err := c.keptEvents(ctx, func(e event) bool { return e.Subject == addr })
	if err != nil {
		return "", nil, err
	}
	slices.Reverse(evs)
	v.History = evs
	return "Device " + addr, v, nil
}
