package switchagent

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
)

// carriers remembers the route targets of the remote device records this
// switch holds, so that a membership is not withdrawn while a record its
// hosts use arrives under that membership alone.
//
// A zone edit that moves a remote device makes its switch re-tag the
// record (a new epoch under the new route targets); a switch that is down
// meanwhile (stopped, restarting) cannot, and the reflectors keep its
// record stale under the old ones. A switch here that drops the old
// zone's membership after MembershipLinger then has the record withdrawn
// by the reflector (route-target constraint), and its hosts are told the
// device's switch is gone (reason 7) until that switch returns and
// re-tags (seed 630883987523050148 step 5: leaf4 stopped with SIGTERM,
// a zone edit on rr2 moved its target t4/0; h1 and hd1 were told reason 7
// three seconds later, active again six seconds after). The membership
// now stays until no such record is left. The loop owns it.
type carriers struct {
	byKey map[string]carried
}

// carried is what one received device or device set record carries.
type carried struct {
	rts     []record.RouteTarget
	devices []netip.Addr
}

func newCarriers() *carriers { return &carriers{byKey: map[string]carried{}} }

// apply follows one device or device set record event.
func (c *carriers) apply(ev bgp.RecordEvent) {
	var devs []netip.Addr
	switch r := ev.Record.(type) {
	case *record.Device:
		devs = []netip.Addr{r.Device.Addr}
	case *record.DeviceSet:
		devs = make([]netip.Addr, 0, len(r.Devices))
		for _, d := range r.Devices {
			devs = append(devs, d.Device.Addr)
		}
	}
	if ev.Withdrawn || ev.Local() || len(devs) == 0 {
		delete(c.byKey, string(ev.Key))
		return
	}
	c.byKey[string(ev.Key)] = carried{rts: slices.Clone(ev.RouteTargets), devices: devs}
}

// needs returns a device in use (inUse) whose record carries rt and none
// of the route targets of the memberships kept (AnyRT covers all): one
// that withdrawing rt's membership would take from this switch. Every
// record comes under AnyRT: dropping it (the switch went from wanting every
// zone to wanting some) takes each record that carries no kept route
// target (soak seed 14344280810485850043 step 9: leaf1 stopped with
// SIGTERM, an alias edit let leaf4's hosts see its target td1, whose stale
// record still carried only its old zone's route target; leaf4, no longer
// wanting every zone after an address change, dropped AnyRT three seconds
// later and its hosts were told td1's switch was gone).
func (c *carriers) needs(rt record.RouteTarget, kept []record.RouteTarget, inUse func(netip.Addr) bool) (netip.Addr, bool) {
	if slices.Contains(kept, record.AnyRT) {
		return netip.Addr{}, false
	}
	for _, r := range c.byKey {
		carries := rt == record.AnyRT || slices.Contains(r.rts, rt)
		if !carries || slices.ContainsFunc(r.rts, func(x record.RouteTarget) bool { return slices.Contains(kept, x) }) {
			continue
		}
		if i := slices.IndexFunc(r.devices, inUse); i >= 0 {
			return r.devices[i], true
		}
	}
	return netip.Addr{}, false
}
