package switchagent

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// sample reads one series of a gathered family, by its labels; ok is false
// when the series is missing.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}

func waitMetric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, found := sample(t, reg, name, labels)
		if found && ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v (present %v)", name, labels, v, found)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// downLink is an access port that can be made to refuse writes as a port
// that went down does (sendto: network is down).
type downLink struct {
	l2proto.Link
	down atomic.Bool
}

func (l *downLink) WriteFrame(b []byte) error {
	if l.down.Load() {
		return syscall.ENETDOWN
	}
	return l.Link.WriteFrame(b)
}

// TestNotificationSendFailuresCounted: notifications whose frame the port
// refused are counted (send-failed) and their next send counts as a
// retransmission (issue #25: retransmitted stayed 0 while the log showed
// the retries); the host gets them once the port works again. Every
// labelled series is there, at zero, before anything happened, and
// inof_switch_up says the agent runs.
func TestNotificationSendFailuresCounted(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	near, far := memPorts("10.0.0.11", "swp1", "swp2")
	hostPort := &downLink{Link: near["swp1"]}
	near["swp1"] = hostPort
	reg := prometheus.NewRegistry()
	s := runSwitch(t, f, ra, "10.0.0.11", t.TempDir(), reg, func(o *Options) { o.AccessPorts = []string{"swp1", "swp2"} }, near)
	for _, outcome := range []string{"sent", "retransmitted", "send-failed", "acked", "gave-up", "superseded"} {
		if _, ok := sample(t, reg, "inof_switch_notifications_total", map[string]string{"outcome": outcome}); !ok {
			t.Errorf("no notifications_total series for %s at start", outcome)
		}
	}
	for _, reason := range []string{"not-access-port", "short", "port-full", "unexpected"} {
		if _, ok := sample(t, reg, "inof_switch_frames_dropped_total", map[string]string{"reason": reason}); !ok {
			t.Errorf("no frames_dropped_total series for %s at start", reason)
		}
	}
	for _, state := range []string{"idle", "active", "established"} {
		if _, ok := sample(t, reg, "inof_switch_bgp_sessions", map[string]string{"state": state}); !ok {
			t.Errorf("no bgp_sessions series for %s", state)
		}
	}
	waitMetric(t, reg, "inof_switch_up", nil, func(v float64) bool { return v == 1 })

	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host := newSimHost(t, far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	host.register(120)
	tgt := newSimHost(t, far["swp2"], target)
	hostPort.down.Store(true)
	tgt.register(120)
	failed := map[string]string{"outcome": "send-failed"}
	waitMetric(t, reg, "inof_switch_notifications_total", failed, func(v float64) bool { return v >= 1 })
	hostPort.down.Store(false)
	host.waitFor("target active after the port came back", last(target.Addr, inof.StateActive, inof.ReasonNone))
	waitMetric(t, reg, "inof_switch_notifications_total", map[string]string{"outcome": "retransmitted"}, func(v float64) bool { return v >= 1 })
	waitMetric(t, reg, "inof_switch_notifications_total", map[string]string{"outcome": "acked"}, func(v float64) bool { return v >= 1 })
	s.stop()
	if v, _ := sample(t, reg, "inof_switch_up", nil); v != 0 {
		t.Fatalf("inof_switch_up %v after stop", v)
	}
}

// TestReloadAccessPorts: a reload that drops an access port and adds one,
// with the agent running: the devices of the dropped port leave (hosts
// elsewhere hear reason 1), the new port takes registrations at once, and
// the port kept is untouched (its host hears nothing but those changes).
func TestReloadAccessPorts(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.11")
	near, far := memPorts("10.0.0.11", "swp1", "swp2", "swp3")
	var opts Options
	s := runSwitch(t, f, ra, "10.0.0.11", t.TempDir(), nil, func(o *Options) {
		o.AccessPorts = []string{"swp1", "swp2"}
		opts = *o
	}, near)
	idle, err := New(Config{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Reload(context.Background(), opts); err != errNotRunning {
		t.Fatalf("reload of an agent that does not run: %v", err)
	}
	<-s.agent.Ready()
	target := inof.Device{Addr: netip.MustParseAddr("10.1.0.100"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420}
	host := newSimHost(t, far["swp1"], inof.Device{Addr: netip.MustParseAddr("10.1.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP})
	host.register(120)
	newSimHost(t, far["swp2"], target).register(120)
	host.waitFor("target active on swp2", last(target.Addr, inof.StateActive, inof.ReasonNone))

	next := opts
	next.AccessPorts = []string{"swp1", "swp3"}
	if err := s.agent.Reload(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	host.waitFor("target gone with swp2", last(target.Addr, inof.StateInactive, inof.ReasonLinkDown))
	if !s.agent.ports.isAccessPort("swp3") || s.agent.ports.isAccessPort("swp2") {
		t.Fatal("ports after the reload")
	}
	newSimHost(t, far["swp3"], target).register(120)
	host.waitFor("target active on swp3", last(target.Addr, inof.StateActive, inof.ReasonNone))

	bad := next
	bad.AccessPorts = []string{"swp1", "swp9"}
	if err := s.agent.Reload(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "swp9") {
		t.Fatalf("a port that cannot be opened: %v", err)
	}
	if !s.agent.ports.isAccessPort("swp1") {
		t.Fatal("the kept port was closed")
	}
}
