package switchagent

import (
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/porthealth"
)

// TestPortHealthOptions: the defaults are the lossless watchdog's and
// validate; a wrong source or threshold is refused by its key.
func TestPortHealthOptions(t *testing.T) {
	o := DefaultOptions()
	o.RouterID, o.AccessPorts, o.Reflectors = "10.0.0.1", []string{"swp1"}, nil
	o.PortHealth.Source = HealthSourceSONiC
	if err := o.PortHealth.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		edit func(*PortHealthOptions)
		want string
	}{
		{func(p *PortHealthOptions) { p.Source = "snmp" }, `port_health.source "snmp"`},
		{func(p *PortHealthOptions) { p.StormDetection = 50 * time.Millisecond }, "port_health: storm detection 50ms is shorter than the poll interval"},
		{func(p *PortHealthOptions) { p.Priorities = []uint8{8} }, "port_health: priority 8"},
	} {
		p := o.PortHealth
		c.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
	}
}

func TestPortHealthReason(t *testing.T) {
	h := &portHealth{sick: map[string]map[porthealth.Condition]bool{
		"swp1": {porthealth.PFCStorm: true, porthealth.PacketErrors: true},
		"swp2": {porthealth.PacketErrors: true},
		"swp3": {porthealth.PFCStorm: false},
	}}
	for port, want := range map[string]inof.Reason{"swp1": inof.ReasonPFCStorm, "swp2": inof.ReasonPacketErr, "swp3": inof.ReasonNone, "swp4": inof.ReasonNone} {
		if got := h.reason(port); got != want {
			t.Errorf("%s: %v, want %v", port, got, want)
		}
	}
}
