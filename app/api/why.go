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

	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// visibilityAPI takes the read-only calls that explain the zoning: who
// sees whom and why, and where a member is used.
type visibilityAPI struct {
	b   Backend
	log *slog.Logger
}

// Why explains whether a registered host sees a registered target under the
// committed configuration, with the rule that decides it.
func (s *visibilityAPI) Why(ctx context.Context, req *inofv1.WhyRequest) (*inofv1.WhyResponse, error) {
	ha, err := parseAddr("host", req.GetHost())
	if err != nil {
		return nil, err
	}
	ta, err := parseAddr("target", req.GetTarget())
	if err != nil {
		return nil, err
	}
	cfg, devs, ix, err := s.index(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range []netip.Addr{ha, ta} {
		if c, refused := pinRefused(cfg, devs, a); refused {
			return &inofv1.WhyResponse{Host: ha.String(), Target: ta.String(),
				Reason: fmt.Sprintf("%s is refused by a pin (%s): in no zone", a, c)}, nil
		}
	}
	if _, ok := ix.Device(ha); !ok {
		return nil, status.Errorf(codes.NotFound, "host %s is not registered", ha)
	}
	if _, ok := ix.Device(ta); !ok {
		return nil, status.Errorf(codes.NotFound, "target %s is not registered", ta)
	}
	return explain(cfg.Settings, ix, ha, ta), nil
}

// Visibility explains Why for the host and every registered target.
func (s *visibilityAPI) Visibility(ctx context.Context, req *inofv1.VisibilityRequest) (*inofv1.VisibilityResponse, error) {
	return s.visibility(ctx, "host", req.GetHost(), req.GetVisibleOnly())
}

// visibility explains Why for the device at addr, registered as role
// ("host" or "target"), and every registered device of the other role. A
// device a pin refuses is in no zone: it sees nothing, and no host is told
// about it.
func (s *visibilityAPI) visibility(ctx context.Context, role, addr string, visibleOnly bool) (*inofv1.VisibilityResponse, error) {
	a, err := parseAddr(role, addr)
	if err != nil {
		return nil, err
	}
	cfg, devs, ix, err := s.index(ctx)
	if err != nil {
		return nil, err
	}
	if _, refused := pinRefused(cfg, devs, a); refused {
		return &inofv1.VisibilityResponse{}, nil
	}
	d, ok := ix.Device(a)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s %s is not registered", role, a)
	}
	is, others := inof.Role.IsHost, inof.Role.IsTarget
	pair := func(other netip.Addr) (netip.Addr, netip.Addr) { return a, other }
	if role == "target" {
		is, others = others, is
		pair = func(other netip.Addr) (netip.Addr, netip.Addr) { return other, a }
	}
	if !is(d.Role) {
		return nil, status.Errorf(codes.InvalidArgument, "%s is registered as %s, not as a %s", a, d.Role, role)
	}
	return &inofv1.VisibilityResponse{Targets: explainEach(cfg.Settings, ix, devs, a, others, pair, visibleOnly)}, nil
}

// explainEach explains, for self and every other indexed device whose
// role passes role (sorted by address), the pair that pair makes of them
// (host, target); visibleOnly keeps the visible pairs.
func explainEach(st zones.Settings, ix *zones.Index, devs []Device, self netip.Addr, role func(inof.Role) bool,
	pair func(other netip.Addr) (host, target netip.Addr), visibleOnly bool) []*inofv1.WhyResponse {
	var others []netip.Addr
	for _, d := range devs {
		if role(d.Role) && d.Addr != self {
			if _, indexed := ix.Device(d.Addr); indexed {
				others = append(others, d.Addr)
			}
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Less(others[j]) })
	var out []*inofv1.WhyResponse
	for _, o := range slices.Compact(others) {
		h, t := pair(o)
		if w := explain(st, ix, h, t); w.GetVisible() || !visibleOnly {
			out = append(out, w)
		}
	}
	return out
}

// pinRefused reports whether addr's shown device is one whose claim to
// its NQN cfg's pins refuse (newIndex leaves it out), with the claim.
func pinRefused(cfg *zones.Config, devs []Device, addr netip.Addr) (zones.Claim, bool) {
	for _, d := range devs {
		if d.Addr == addr && cfg.Refuses(d) {
			return cfg.Judge(d.Device, d.Switch, d.AccessPort), true
		}
	}
	return zones.Claim{}, false
}

// index returns the committed configuration, the devices and their index
// under it.
func (s *visibilityAPI) index(ctx context.Context) (*zones.Config, []Device, *zones.Index, error) {
	devs, err := s.b.Devices(ctx)
	if err != nil {
		return nil, nil, nil, statusOf(fmt.Errorf("devices: %w", err))
	}
	cfg := s.b.Config()
	return cfg, devs, newIndex(s.log, cfg, devs), nil
}

func parseAddr(what, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, status.Errorf(codes.InvalidArgument, "%s %q: not an address", what, s)
	}
	return a, nil
}

// explain applies the visibility rule to two indexed devices and says which
// part of it decided.
func explain(st zones.Settings, ix *zones.Index, ha, ta netip.Addr) *inofv1.WhyResponse {
	h, _ := ix.Device(ha)
	t, _ := ix.Device(ta)
	out := &inofv1.WhyResponse{Host: ha.String(), Target: ta.String(), HostZones: ix.Zones(ha), TargetZones: ix.Zones(ta)}
	for _, z := range out.HostZones {
		if slices.Contains(out.TargetZones, z) {
			out.SharedZones = append(out.SharedZones, z)
		}
	}
	switch {
	case ha == ta:
		out.Reason = "the same device"
	case !h.Role.IsHost():
		out.Reason = fmt.Sprintf("%s is registered as %s, not as a host", ha, h.Role)
	case !t.Role.IsTarget():
		out.Reason = fmt.Sprintf("%s is registered as %s, not as a target", ta, t.Role)
	default:
		out.Visible, out.Reason = zoneRule(st, out, ha, ta)
	}
	return out
}

// zoneRule applies the zoning rule (docs/zoning.md, "Who sees whom") to a
// host and a target of complementary roles and says which part decided.
func zoneRule(st zones.Settings, w *inofv1.WhyResponse, host, target netip.Addr) (bool, string) {
	if len(w.SharedZones) > 0 {
		return true, "same zone " + strings.Join(w.SharedZones, ", ")
	}
	hu, tu := len(w.HostZones) == 0, len(w.TargetZones) == 0
	unzoned := func() string {
		switch {
		case hu && tu:
			return "both are in no custom zone"
		case hu:
			return fmt.Sprintf("%s is in no custom zone, %s is in %s", host, target, strings.Join(w.TargetZones, ", "))
		}
		return fmt.Sprintf("%s is in no custom zone, %s is in %s", target, host, strings.Join(w.HostZones, ", "))
	}
	switch {
	case !hu && !tu:
		return false, fmt.Sprintf("no shared zone (%s is in %s, %s is in %s)", host, strings.Join(w.HostZones, ", "),
			target, strings.Join(w.TargetZones, ", "))
	case !st.DefaultZoneEnabled:
		return false, "default zone disabled: " + unzoned()
	case hu && tu:
		return true, "default zone: " + unzoned()
	case st.HardZoning:
		return false, "hard zoning blocks: " + unzoned()
	}
	return true, "default zone, hard zoning off: " + unzoned()
}

// FindMember lists where a member is used: zones and aliases that hold it
// as written, zones that use an alias holding it, and, for an address,
// the members that cover it.
func (s *visibilityAPI) FindMember(_ context.Context, req *inofv1.FindMemberRequest) (*inofv1.FindMemberResponse, error) {
	q, err := zones.ParseMember(req.GetMember())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	c := s.b.Config()
	match := func(m zones.Member) bool {
		return m == q || (q.Kind == zones.MemberAddr && m.Covers(q.Addr))
	}
	out := &inofv1.FindMemberResponse{}
	holding := map[string][]string{} // alias → its matching members
	for _, an := range aliasNames(c) {
		for _, m := range c.Aliases[an].Members {
			if match(m) {
				holding[an] = append(holding[an], m.String())
				out.Uses = append(out.Uses, &inofv1.MemberUse{Alias: an, Member: m.String()})
			}
		}
	}
	for _, zn := range c.ZoneNames() {
		for _, m := range c.Zones[zn].Members {
			if match(m) {
				out.Uses = append(out.Uses, &inofv1.MemberUse{Zone: zn, Member: m.String()})
			}
			if m.Kind == zones.MemberAlias {
				for _, am := range holding[m.Name] {
					out.Uses = append(out.Uses, &inofv1.MemberUse{Zone: zn, Alias: m.Name, Member: am})
				}
			}
		}
	}
	return out, nil
}

// WhoSees explains Why for every registered host and the target.
func (s *visibilityAPI) WhoSees(ctx context.Context, req *inofv1.WhoSeesRequest) (*inofv1.VisibilityResponse, error) {
	return s.visibility(ctx, "target", req.GetTarget(), req.GetVisibleOnly())
}
