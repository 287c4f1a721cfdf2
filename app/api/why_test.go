package api_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/zones"
)

// Why agrees with zones.Visible on every pair under every setting.
func TestWhyAgreesWithTheRule(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	apply(t, c, createZone("red", "10.0.0.1", "10.0.1.1"), createZone("blue", "10.0.0.2", "10.0.2.1"))
	for _, st := range []zones.Settings{{}, {HardZoning: true}, {DefaultZoneEnabled: true}, {DefaultZoneEnabled: true, HardZoning: true}} {
		apply(t, c, setSettings(st.DefaultZoneEnabled, st.HardZoning))
		cfg := b.Store.Config()
		for _, h := range testDevices() {
			for _, tg := range testDevices() {
				w, err := c.Why(context.Background(), &inofv1.WhyRequest{Host: h.Addr.String(), Target: tg.Addr.String()})
				if err != nil {
					t.Fatal(err)
				}
				want := h.Role.IsHost() && tg.Role.IsTarget() && zones.Visible(cfg, h.Device, tg.Device)
				if w.GetVisible() != want {
					t.Errorf("%+v: why %s → %s = %v (%s), rule says %v", st, h.Addr, tg.Addr, w.GetVisible(), w.GetReason(), want)
				}
			}
			if h.Role.IsHost() {
				checkVisibility(t, c, cfg, h)
			}
		}
	}
}

// checkVisibility compares Visibility for host h with the rule, target by
// target, with and without visible_only.
func checkVisibility(t *testing.T, c inofv1.FabricClient, cfg *zones.Config, h api.Device) {
	t.Helper()
	var all, visible []string
	for _, tg := range testDevices() {
		if tg.Role.IsTarget() && tg.Addr != h.Addr {
			all = append(all, tg.Addr.String())
			if zones.Visible(cfg, h.Device, tg.Device) {
				visible = append(visible, tg.Addr.String())
			}
		}
	}
	for _, only := range []bool{false, true} {
		v, err := c.Visibility(context.Background(), &inofv1.VisibilityRequest{Host: h.Addr.String(), VisibleOnly: only})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range v.GetTargets() {
			if w.GetHost() != h.Addr.String() || w.GetVisible() != slices.Contains(visible, w.GetTarget()) {
				t.Errorf("visibility of %s: %v", h.Addr, w)
			}
			got = append(got, w.GetTarget())
		}
		want := all
		if only {
			want = visible
		}
		if !slices.Equal(got, want) {
			t.Errorf("visibility of %s (visible only %v): targets %v, want %v", h.Addr, only, got, want)
		}
	}
}

func TestWhyReasons(t *testing.T) {
	_, c := fabric(t, api.ServeOptions{})
	why := func(host, target string) string {
		t.Helper()
		w, err := c.Why(context.Background(), &inofv1.WhyRequest{Host: host, Target: target})
		if err != nil {
			t.Fatal(err)
		}
		return w.GetReason()
	}
	check := func(got, prefix string) {
		t.Helper()
		if !strings.HasPrefix(got, prefix) {
			t.Errorf("reason %q, want it to start with %q", got, prefix)
		}
	}
	check(why("10.0.0.1", "10.0.1.1"), "default zone: both are in no custom zone")
	apply(t, c, createZone("red", "10.0.0.1", "10.0.1.1"))
	check(why("10.0.0.1", "10.0.1.1"), "same zone red")
	check(why("10.0.0.2", "10.0.1.1"), "hard zoning blocks: 10.0.0.2 is in no custom zone, 10.0.1.1 is in red")
	check(why("10.0.0.1", "10.0.0.2"), "10.0.0.2 is registered as host, not as a target")
	apply(t, c, setSettings(true, false))
	check(why("10.0.0.2", "10.0.1.1"), "default zone, hard zoning off")
	apply(t, c, setSettings(false, false))
	check(why("10.0.0.2", "10.0.1.2"), "default zone disabled")

	for _, tc := range []struct {
		host, target string
		code         codes.Code
	}{{"10.9.9.9", "10.0.1.1", codes.NotFound}, {"10.0.0.1", "10.9.9.9", codes.NotFound}, {"nonsense", "10.0.1.1", codes.InvalidArgument}} {
		_, err := c.Why(context.Background(), &inofv1.WhyRequest{Host: tc.host, Target: tc.target})
		if status.Code(err) != tc.code {
			t.Errorf("why %s %s: %v, want %v", tc.host, tc.target, err, tc.code)
		}
	}
}

func TestListDevicesFilters(t *testing.T) {
	_, c := fabric(t, api.ServeOptions{})
	apply(t, c, createZone("red", "10.0.0.1", "10.0.1.1"))
	for _, tc := range []struct {
		req  *inofv1.ListDevicesRequest
		want string
	}{
		{&inofv1.ListDevicesRequest{}, "10.0.0.1 10.0.0.2 10.0.1.1 10.0.1.2 10.0.2.1"},
		{&inofv1.ListDevicesRequest{Zone: "red"}, "10.0.0.1 10.0.1.1"},
		{&inofv1.ListDevicesRequest{Zone: "default"}, "10.0.0.2 10.0.1.2 10.0.2.1"},
		{&inofv1.ListDevicesRequest{Role: inofv1.Role_ROLE_HOST}, "10.0.0.1 10.0.0.2 10.0.2.1"},
		{&inofv1.ListDevicesRequest{Role: inofv1.Role_ROLE_BOTH}, "10.0.2.1"},
		{&inofv1.ListDevicesRequest{Status: "inactive"}, "10.0.1.2"},
		{&inofv1.ListDevicesRequest{Switch: "192.0.2.1"}, "10.0.0.1 10.0.1.1"},
		{&inofv1.ListDevicesRequest{Address: "10.0.1.0/24"}, "10.0.1.1 10.0.1.2"},
		{&inofv1.ListDevicesRequest{Address: "10.0.2.1", Role: inofv1.Role_ROLE_TARGET}, "10.0.2.1"},
		{&inofv1.ListDevicesRequest{Zone: "red", Role: inofv1.Role_ROLE_TARGET, Status: "active"}, "10.0.1.1"},
	} {
		resp, err := c.ListDevices(context.Background(), tc.req)
		if err != nil {
			t.Fatalf("%v: %v", tc.req, err)
		}
		var got []string
		for _, d := range resp.GetDevices() {
			got = append(got, d.GetAddress())
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%v: got %v, want %s", tc.req, got, tc.want)
		}
	}
	for _, tc := range []struct {
		req  *inofv1.ListDevicesRequest
		code codes.Code
	}{
		{&inofv1.ListDevicesRequest{Zone: "blue"}, codes.NotFound},
		{&inofv1.ListDevicesRequest{Address: "10.0.0.300"}, codes.InvalidArgument},
		{&inofv1.ListDevicesRequest{Status: "up"}, codes.InvalidArgument},
	} {
		if _, err := c.ListDevices(context.Background(), tc.req); status.Code(err) != tc.code {
			t.Errorf("%v: %v, want %v", tc.req, err, tc.code)
		}
	}
}
