package bgptest

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// ASN is the autonomous system of every speaker these helpers start.
const ASN = 65000

// Addr parses an address the test writes out.
func Addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// RouterID is the router-id of a speaker at an IPv4 address (zero for
// another address).
func RouterID(a netip.Addr) inof.RouterID { id, _ := inof.RouterIDFrom(a); return id }

// Device is the i-th test device record of switch sw: an active NVMe/TCP
// target with an address and NQN of its own for each i.
func Device(sw inof.RouterID, i int) *record.Device {
	return &record.Device{Report: inof.Report{Switch: sw, Device: inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next(),
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:t%d", i)},
		Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(2000)}, AccessPort: "swp1", Since: time.UnixMilli(1000)}}
}

// FreePort returns a TCP port free on addr right now.
func FreePort(t testing.TB, addr netip.Addr) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// SkipUnderRace skips a test that runs the real GoBGP when the race
// detector is on: GoBGP v3.37 races inside its watcher (fixed upstream only
// in v4). Those tests run without -race; everything else (codec, device
// tables, the fake fabric) runs with it.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
}
