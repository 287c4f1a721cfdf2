package record

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/openinof/inof/inof"
)

const testASN = 65000

func device(sw inof.RouterID, i int) *Device {
	return &Device{Report: inof.Report{Switch: sw, Device: inof.Device{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next(),
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: fmt.Sprintf("nqn.2014-08.org.example:t%d", i)},
		Status: inof.Status{State: inof.StateActive, Changed: time.UnixMilli(2000)}, AccessPort: "swp1", Since: time.UnixMilli(1000)}}
}
