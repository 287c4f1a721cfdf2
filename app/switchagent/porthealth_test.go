package switchagent

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/app/configsync"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/porthealth"
)

// TestPortHealthOptions: the defaults validate (the keys left out taken
// from the default lossless profile); a wrong source or threshold is
// refused by its key.
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
		{func(p *PortHealthOptions) { p.StormDetection = 50 * time.Millisecond }, "port_health (keys left out from the default lossless profile): storm detection 50ms is shorter than the poll interval 200ms"},
		{func(p *PortHealthOptions) { p.Priorities = []uint8{8} }, "port_health (keys left out from the default lossless profile): priority 8"},
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

// askSource is a porthealth.Source that serves the receive errors the
// test sets (zero by default) and records the ports each read asked for.
type askSource struct {
	mu    sync.Mutex
	asked [][]string
	errs  map[string]uint64
}

func (s *askSource) setErrors(port string, n uint64) {
	s.mu.Lock()
	s.errs[port] = n
	s.mu.Unlock()
}

func (s *askSource) Read(_ context.Context, ports []string) ([]porthealth.Sample, error) {
	s.mu.Lock()
	s.asked = append(s.asked, slices.Clone(ports))
	s.mu.Unlock()
	out := make([]porthealth.Sample, len(ports))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range ports {
		out[i] = porthealth.Sample{Port: p, HasErrors: true, Errors: s.errs[p]}
	}
	return out, nil
}

// waitAsked waits for a read of exactly want and returns every read so far.
func (s *askSource) waitAsked(t *testing.T, want ...string) [][]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		asked := slices.Clone(s.asked)
		s.mu.Unlock()
		if len(asked) > 0 && slices.Equal(asked[len(asked)-1], want) {
			return asked
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read of %v; reads: %v", want, asked)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPortHealthFollowsDevicesAndProfile: on a switch with three access
// ports, port health polls only the ports that carry a registered device
// (none before the first registers, the port dropped when its last device
// leaves, its sickness with it), and the thresholds follow the lossless profile the reflector
// publishes, a value set in port_health winning over the profile's; a
// profile whose watchdog makes them unusable is refused and counted, and
// those in force stay.
func TestPortHealthFollowsDevicesAndProfile(t *testing.T) {
	ctx := context.Background()
	f := bgp.NewFakeFabric()
	ra := netip.MustParseAddr("10.255.0.1")
	raID, _ := inof.RouterIDFrom(ra)
	refl, err := f.NewSpeaker(bgp.Options{Role: bgp.RoleReflector, ASN: testASN, RouterID: ra})
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(refl.Stop)
	if err := refl.AddNeighbor(ctx, bgp.Neighbor{Address: netip.MustParseAddr("10.0.0.11"), RRClient: true}); err != nil {
		t.Fatal(err)
	}
	gen := inof.GenerationAt(time.Now())
	publish := func(v uint64, w lossless.Watchdog) {
		t.Helper()
		p := lossless.Default()
		p.Name, p.Watchdog = fmt.Sprintf("v%d", v), w
		payload, err := lossless.Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		rec := record.Config{Reflector: raID, Kind: uint8(configsync.KindLossless), Gen: gen + v, Writer: raID, Payload: payload}
		if err := refl.Publish(ctx, &rec, record.ConfigRT(testASN)); err != nil {
			t.Fatal(err)
		}
	}

	src := &askSource{errs: map[string]uint64{}}
	reg := prometheus.NewRegistry()
	ports := []string{"swp1", "swp2", "swp3"}
	near, far := memPorts("10.0.0.11", ports...)
	s := runSwitchHealth(t, f, ra, "10.0.0.11", t.TempDir(), reg, nil, func(o *Options) {
		o.AccessPorts = ports
		o.PortHealth.StormDetection = 300 * time.Millisecond // set: wins over every profile
	}, near, src)
	s.waitSettled(t)
	mon := s.agent.health.mon
	if in := mon.InForce(); in.Interval != 200*time.Millisecond || in.Thresholds.StormDetection != 300*time.Millisecond ||
		in.Thresholds.StormRecovery != 200*time.Millisecond {
		t.Fatalf("before any profile (the default's watchdog, detection set): %+v", in)
	}

	host := newSimHost(t, far["swp2"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	host.register(120)
	for _, a := range src.waitAsked(t, "swp2") {
		if !slices.Equal(a, []string{"swp2"}) {
			t.Fatalf("a read of %v before or with the first device (on swp2)", a)
		}
	}
	tgt := newSimHost(t, far["swp3"], inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget,
		Protocol: inof.ProtocolTCP, Port: 4420, NQN: "nqn.2014-08.org.example:array"})
	tgt.register(120)
	src.waitAsked(t, "swp2", "swp3")

	// The profile's poll and restoration apply; its detection does not.
	publish(1, lossless.Watchdog{DetectionMs: 400, RestorationMs: 600, PollMs: 100, Action: lossless.ActionDrop})
	want := porthealth.Tuning{Interval: 100 * time.Millisecond, Thresholds: porthealth.DefaultThresholds()}
	want.Thresholds.StormDetection, want.Thresholds.StormRecovery = 300*time.Millisecond, 600*time.Millisecond
	waitFor(t, "the profile's watchdog in force", func() bool { return reflect.DeepEqual(mon.InForce(), want) })

	// A 500 ms poll under the 300 ms detection set in the options: refused.
	publish(2, lossless.Watchdog{DetectionMs: 500, RestorationMs: 500, PollMs: 500, Action: lossless.ActionDrop})
	waitFor(t, "the unusable profile refused", func() bool {
		return gathered(t, reg, "inof_switch_port_health_profiles_refused_total") == 1
	})
	if in := mon.InForce(); !reflect.DeepEqual(in, want) {
		t.Fatalf("after a refused profile: %+v, want %+v", in, want)
	}

	// The target's port takes 100 receive errors: sick, the host is told
	// reason 3. Then the port loses carrier: the target's registration
	// ends, swp3 is dropped and its sick gauge returns to 0.
	src.setErrors("swp3", 100)
	host.waitFor("target inactive, packet errors", last(tgt.dev.Addr, inof.StateInactive, inof.ReasonPacketErr))
	sick := func() float64 {
		return gatheredWith(t, reg, "inof_switch_port_sick", map[string]string{"port": "swp3", "condition": "packet-errors"})
	}
	if v := sick(); v != 1 {
		t.Fatalf("swp3 sick gauge %v, want 1", v)
	}
	s.links <- l2proto.LinkState{Name: "swp3", Running: false}
	src.waitAsked(t, "swp2")
	waitFor(t, "swp3's sick gauge back to 0", func() bool { return sick() == 0 })
}

// waitFor polls ok until it holds (a wait, not a bound on how fast).
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gathered is the value of the unlabelled counter name in reg (-1 if
// there is none).
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return gatheredWith(t, reg, name, nil)
}

// gatheredWith is the value of the series of name in reg with these
// labels (-1 if there is none).
func gatheredWith(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := sample(t, reg, name, labels)
	if !ok {
		return -1
	}
	return v
}
