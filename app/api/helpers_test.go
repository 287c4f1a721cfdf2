package api_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// fabric starts a server on a fresh store with five devices: two hosts,
// two targets and one device of role both.
func fabric(t *testing.T, opts api.ServeOptions) (*apitest.Backend, inofv1.FabricClient) {
	t.Helper()
	b := apitest.NewBackend(t)
	b.SetDevices(testDevices()...)
	_, sock := apitest.Serve(t, b, opts)
	return b, dialUnix(t, sock)
}

func testDevices() []api.Device {
	dev := func(addr string, role inof.Role, sw string, st inof.State) api.Device {
		return api.Device{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: st}}
	}
	return []api.Device{
		dev("10.0.0.1", inof.RoleHost, "192.0.2.1", inof.StateActive),
		dev("10.0.0.2", inof.RoleHost, "192.0.2.2", inof.StateActive),
		dev("10.0.1.1", inof.RoleTarget, "192.0.2.1", inof.StateActive),
		dev("10.0.1.2", inof.RoleTarget, "192.0.2.2", inof.StateInactive),
		dev("10.0.2.1", inof.RoleBoth, "192.0.2.2", inof.StateActive),
	}
}

func dialUnix(t *testing.T, sock string) inofv1.FabricClient {
	t.Helper()
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return inofv1.NewFabricClient(conn)
}

// apply commits edits against the current revision and fails the test on
// error.
func apply(t *testing.T, c inofv1.FabricClient, edits ...*inofv1.Edit) *inofv1.ApplyZoningResponse {
	t.Helper()
	resp, err := c.ApplyZoning(context.Background(), &inofv1.ApplyZoningRequest{Edits: edits})
	if err != nil {
		t.Fatalf("apply %v: %v", edits, err)
	}
	return resp
}

func createZone(name string, members ...string) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: name, Members: members}}}
}

func addMembers(zone string, members ...string) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_AddZoneMembers{AddZoneMembers: &inofv1.ZoneMembers{Zone: zone, Members: members}}}
}

func setSettings(defaultZone, hard bool) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_SetSettings{SetSettings: &inofv1.SetSettings{DefaultZoneEnabled: &defaultZone, HardZoning: &hard}}}
}

func zoning(t *testing.T, c inofv1.FabricClient) *inofv1.Zoning {
	t.Helper()
	z, err := c.GetZoning(context.Background(), &inofv1.GetZoningRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return z
}
