package api_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

const pinnedNQN = "nqn.2014-08.org.example:array1"

func setPin(nqn string, at ...string) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_SetPin{SetPin: &inofv1.Pin{Nqn: nqn, At: at}}}
}

func removePin(nqn string) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_RemovePin{RemovePin: &inofv1.RemovePin{Nqn: nqn}}}
}

// A pin is a zoning edit: it shows in GetZoning and changes the revision
// (a configuration without pins keeps the revision it had before pins);
// bad pins are InvalidArgument; a dry run lists the visibility the pin
// takes from the devices that claim its NQN elsewhere; ListDevices marks
// them and puts them in no zone; GetDevice lists the ports claiming an NQN.
func TestPins(t *testing.T) {
	b, c := fabric(t, api.ServeOptions{})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rep := func(addr, sw, port, nqn string, role inof.Role) api.Device {
		return inof.Report{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP, NQN: nqn},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: inof.StateActive, Changed: t0},
			AccessPort: port, Since: t0}
	}
	devs := []api.Device{
		rep("10.0.0.1", "192.0.2.1", "eth1", "", inof.RoleHost),
		rep("10.0.1.1", "192.0.2.1", "eth3", pinnedNQN, inof.RoleTarget),
		rep("10.0.1.66", "192.0.2.2", "eth7", pinnedNQN, inof.RoleTarget), // the claim the pin refuses
	}
	b.SetDevices(devs...)
	b.SetReports(devs...)
	apply(t, c, createZone("z1", "10.0.0.1", pinnedNQN))
	before := zoning(t, c).GetRevision()

	for _, bad := range []*inofv1.Edit{setPin(pinnedNQN), setPin("iqn.2001-04.com.example:x", "192.0.2.1:eth3"),
		setPin(pinnedNQN, "leaf1:eth3"), setPin(pinnedNQN, "192.0.2.1:eth3", "192.0.2.1:eth3")} {
		_, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{bad}})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: %v, want InvalidArgument", bad, err)
		}
	}
	if _, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{removePin(pinnedNQN)}}); status.Code(err) != codes.NotFound {
		t.Errorf("removing a pin that is not there: %v, want NotFound", err)
	}

	dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{setPin(pinnedNQN, "192.0.2.1:eth3")}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if ch := dry.GetChanges(); len(ch) != 1 || ch[0].GetHost() != "10.0.0.1" || ch[0].GetTarget() != "10.0.1.66" || ch[0].GetVisible() {
		t.Errorf("dry run changes %v: want 10.0.0.1 losing 10.0.1.66", ch)
	}
	apply(t, c, setPin(pinnedNQN, "192.0.2.1:eth3"))
	z := zoning(t, c)
	if p := z.GetPins(); len(p) != 1 || p[0].GetNqn() != pinnedNQN || !slices.Equal(p[0].GetAt(), []string{"192.0.2.1:eth3"}) {
		t.Errorf("pins %v", p)
	}
	if z.GetRevision() == before {
		t.Error("a pin left the revision as it was")
	}

	list, err := c.ListDevices(ctx, &inofv1.ListDevicesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list.GetDevices() {
		rogue := d.GetAddress() == "10.0.1.66"
		if d.GetPinRefused() != rogue || rogue != (len(d.GetZones()) == 0) {
			t.Errorf("%s: pin refused %v, zones %v", d.GetAddress(), d.GetPinRefused(), d.GetZones())
		}
	}
	d, err := c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: "10.0.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"192.0.2.1:eth3 10.0.1.1", "192.0.2.2:eth7 10.0.1.66"}
	if !slices.Equal(d.GetNqnClaims(), want) {
		t.Errorf("claims %v, want %v", d.GetNqnClaims(), want)
	}
	if d, err := c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: "10.0.0.1"}); err != nil || len(d.GetNqnClaims()) != 0 {
		t.Errorf("a device without an NQN: claims %v, %v", d.GetNqnClaims(), err)
	}

	apply(t, c, removePin(pinnedNQN))
	if z := zoning(t, c); len(z.GetPins()) != 0 || z.GetRevision() != before {
		t.Errorf("after the pin's removal: pins %v, revision %s (before the pin %s)", z.GetPins(), z.GetRevision(), before)
	}
}
