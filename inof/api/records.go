package api

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/inof"
)

// DevicesFromRecords turns the device records a daemon holds into the
// API's devices, one per address: a device that two switches report (it
// moved, or sits on a shared segment) is shown as the active report, then
// the most recent change, then the lowest switch router-id. Sorted by
// address.
func DevicesFromRecords(rs []bgp.DeviceRecord) []Device {
	best := map[netip.Addr]bgp.DeviceRecord{}
	for _, d := range rs {
		if cur, ok := best[d.Device.Addr]; !ok || preferDevice(d, cur) {
			best[d.Device.Addr] = d
		}
	}
	out := make([]Device, 0, len(best))
	for _, d := range best {
		out = append(out, Device{Device: d.Device, Switch: RouterIDString(d.Switch), State: d.State,
			Reason: d.Reason, Since: d.Changed})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out
}

// preferDevice reports whether report a of one address is shown rather
// than b.
func preferDevice(a, b bgp.DeviceRecord) bool {
	if (a.State == inof.StateActive) != (b.State == inof.StateActive) {
		return a.State == inof.StateActive
	}
	if !a.Changed.Equal(b.Changed) {
		return a.Changed.After(b.Changed)
	}
	return a.Switch < b.Switch
}

// RouterIDString formats a router-id in dotted form.
func RouterIDString(id uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// BFDStateName is the API's name of a BFD state.
func BFDStateName(s bfd.State) string {
	switch s {
	case bfd.AdminDown:
		return "admin-down"
	case bfd.Down:
		return "down"
	case bfd.Init:
		return "init"
	default:
		return "up"
	}
}
