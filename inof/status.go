package inof

import (
	"fmt"
	"time"
)

// Status is a device's state as a switch reports it: whether it is usable,
// why it last changed and when. Every record of a device (the switch's own,
// the BGP record, a remote switch's view) embeds it, so a status travels as
// one value.
type Status struct {
	State   State
	Reason  Reason    // why the state last changed (ReasonNone while it never left)
	Changed time.Time // last state change
}

// Active reports whether the status is StateActive.
func (s Status) Active() bool { return s.State == StateActive }

// Report is one switch's report of one device: the device carrier. It
// travels unchanged from the registration on an access port (the
// registration table's entry embeds it) through the switch's own record
// and the BGP record (which embeds it beside its epoch) into a remote
// switch's device table and its merged view of each address. Transport
// details stay with their transport: the LLDP IDs, MAC and TTL with the
// registration, the epoch with the record.
type Report struct {
	Switch RouterID // the switch that reports the device
	// Device is embedded for its fields; in JSON (state files) it stays
	// one object named Device, as it was before it was embedded.
	Device `json:"Device"`
	Status
	AccessPort string    // the switch interface the device is on
	Since      time.Time // first registration (millisecond precision on the wire)
}

func (r Report) String() string {
	return fmt.Sprintf("%s %s (switch %s)", r.Device, r.State, r.Switch)
}

// Preferred reports whether report r of an address is the one to show
// rather than o, when two switches report the same address (a device that
// moved, or a NIC on a shared segment): active first, then the newest
// change, then the lower switch router-id, so the choice does not depend on
// the order the reports came in.
func (r Report) Preferred(o Report) bool {
	if r.Active() != o.Active() {
		return r.Active()
	}
	if !r.Changed.Equal(o.Changed) {
		return r.Changed.After(o.Changed)
	}
	return r.Switch < o.Switch
}
