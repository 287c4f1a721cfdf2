package reflector

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// pinRefusals are the device records whose claim to a pinned NQN the pins
// refuse (a device on a switch port outside the NQN's pin): the switches
// keep such a device out of every zone themselves (every switch judges
// every record, a misbehaving switch's too); the reflector, which sees
// every switch's records, reports each refused claim once, fabric-wide:
// an event, a counter, a line at a rate limit.
type pinRefusals struct {
	held  map[record.DeviceID]bool // refused now (the WatchRecords goroutine's)
	count atomic.Uint64
}

// judge judges the record of one device change under the pins in force
// (called on the WatchRecords goroutine).
func (f *fabricView) judge(ch table.DeviceChange) {
	if f.pins == nil {
		return
	}
	d := ch.Record
	if d == nil {
		delete(f.refused.held, ch.ID)
		return
	}
	pins := f.pins()
	p := pins[d.Device.NQN]
	if d.Device.NQN == "" || p == nil || p.Allows(zones.Location{Switch: d.Switch, Port: d.AccessPort}) {
		delete(f.refused.held, ch.ID)
		return
	}
	if f.refused.held[ch.ID] {
		return
	}
	if f.refused.held == nil {
		f.refused.held = map[record.DeviceID]bool{}
	}
	f.refused.held[ch.ID] = true
	f.refused.count.Add(1)
	at := make([]string, len(p.At))
	for i, l := range p.At {
		at[i] = l.String()
	}
	f.lines.Warn(f.log, "device record refused: it claims a pinned NQN on a switch port outside its pin (the switches keep it out of every zone)",
		"device", d.Device.Addr.String(), "nqn", inof.Truncate(d.Device.NQN, inof.MaxNQNLen), "switch", d.Switch.String(),
		"port", inof.Truncate(d.AccessPort, 64), "pinned", strings.Join(at, ", "))
	f.events.Publish(api.Event{Kind: "pin", Subject: d.Device.Addr.String(),
		Message: fmt.Sprintf("refused: %s claims %s on %s:%s, pinned to %s", d.Device.Addr, d.Device.NQN, d.Switch, d.AccessPort,
			strings.Join(at, ", ")),
		Attributes: map[string]string{"nqn": d.Device.NQN, "switch": d.Switch.String(), "port": d.AccessPort,
			"pinned": strings.Join(at, ", ")}})
}
