package cli_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/inof"
)

// TestPinVerbs: pin set (with its dry run and question), pin list in a
// table and JSON, bad pins, a device a pin refuses in device list and
// device show (zones, claims), staging a pin, pin remove.
func TestPinVerbs(t *testing.T) {
	e := newEnv(t)
	const nqn = "nqn.2014-08.org.example:array1"
	rep := func(addr string, role inof.Role, sw, port, nqn string) api.Device {
		return inof.Report{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP, Port: 4420, NQN: nqn},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: inof.StateActive, Changed: testTime},
			AccessPort: port, Since: testTime.Add(-time.Hour)}
	}
	reports := []api.Device{
		rep("10.0.0.1", inof.RoleHost, "192.0.2.1", "Ethernet0", ""),
		rep("10.0.1.1", inof.RoleTarget, "192.0.2.1", "Ethernet4", nqn),
		rep("10.0.1.66", inof.RoleTarget, "192.0.2.2", "Ethernet9", nqn),
	}
	e.b.SetReports(reports...)
	e.b.SetDevices(api.Shown(reports)...)
	e.run("", "zone", "create", "z1", "10.0.0.1", nqn, "--yes")
	e.run("", "device", "show", "10.0.1.1")
	e.run("", "pin", "set", nqn)
	e.run("", "pin", "set", nqn, "--at", "leaf1:Ethernet4", "--yes")
	e.run("y\n", "pin", "set", nqn, "--at", "192.0.2.1:Ethernet4")
	e.run("", "pin", "list")
	e.run("", "pin", "list", "-o", "json")
	e.run("", "device", "list")
	e.run("", "device", "show", "10.0.1.66")
	e.run("", "pin", "set", nqn, "--at", "192.0.2.1:Ethernet4", "--at", "192.0.2.2:Ethernet9", "--stage")
	e.run("", "zoning", "diff")
	e.run("", "zoning", "abort")
	e.run("", "pin", "remove", "nqn.2014-08.org.example:none", "--yes")
	e.run("", "pin", "remove", nqn, "--yes")
	e.run("", "pin", "list")
	e.golden("pins")
}
