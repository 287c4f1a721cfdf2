package switchagent

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/l2proto"
)

// TestExampleConfig: the example under docs/deploy loads and validates,
// and the keys it shows with their defaults hold the real defaults.
func TestExampleConfig(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "docs", "deploy", "inofd-switch.yaml")
	o := DefaultOptions()
	if err := daemon.Load(daemon.LoadOptions{File: path}, &o); err != nil {
		t.Fatal(err)
	}
	def := DefaultOptions()
	if o.HoldDown != def.HoldDown || o.Settle != def.Settle || o.ConfigHold != def.ConfigHold || o.BFD != def.BFD || o.GracefulRestart != def.GracefulRestart || o.Security != def.Security ||
		o.StateDir != def.StateDir || o.MetricsListen != def.MetricsListen || o.Log != def.Log || o.MaxDevices != def.MaxDevices ||
		o.AccessLimits != def.AccessLimits || !reflect.DeepEqual(o.PortHealth, def.PortHealth) {
		t.Fatalf("example shows other defaults:\n%+v\n%+v", o, def)
	}
	if o.ASN != 65000 || len(o.Reflectors) != 2 || len(o.AccessPorts) != 3 || o.routerID() != 0x0a00000b {
		t.Fatalf("example values: %+v", o)
	}
	if o.HoldDown != 30*time.Second {
		t.Fatalf("hold_down %s", o.HoldDown)
	}
}

// TestAccessLimits: the per-port limits reach the ports, and a limit that
// is not positive is refused by name.
func TestAccessLimits(t *testing.T) {
	o := DefaultOptions()
	if got := o.AccessLimits.portLimits(); got != l2proto.DefaultLimits {
		t.Fatalf("default limits %+v, l2proto's %+v", got, l2proto.DefaultLimits)
	}
	o.AccessLimits.RegistrationsPerSecond, o.AccessLimits.QueryBurst = 2000, 4096
	if got := o.AccessLimits.portLimits(); got.Registrations.PerSecond != 2000 || got.Queries.Burst != 4096 {
		t.Fatalf("limits %+v", got)
	}
	o.AccessLimits.RegistrationBurst, o.AccessLimits.QueriesPerSecond = 0, -1
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "access_limits.registration_burst 0") ||
		!strings.Contains(err.Error(), "access_limits.queries_per_second -1") {
		t.Fatalf("bad limits: %v", err)
	}
}

// TestRenamedBFDKeys: the switch's old spelling of the BFD timers (file and
// environment) still configures them, with one warning per key; the old and
// the new name together are refused. The session security keys sit at the
// top level, as before they were a shared type.
func TestRenamedBFDKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "router_id: 10.0.0.11\nasn: 65000\nlocal_address: 10.0.0.11\nreflectors: [{address: 10.0.0.1}]\naccess_ports: [swp1]\n" +
		"password: secret\nttl_security: true\n"
	o := DefaultOptions()
	var warned []string
	err := daemon.Load(daemon.LoadOptions{File: write(base + "bfd:\n  min_tx: 300ms\n  min_rx: 200ms\n"),
		Environ: []string{"INOF_BFD_MULTIPLIER=7"}, Warn: func(m string) { warned = append(warned, m) }}, &o)
	if err != nil {
		t.Fatal(err)
	}
	if o.BFD.DesiredMinTx != 300*time.Millisecond || o.BFD.RequiredMinRx != 200*time.Millisecond || o.BFD.DetectMult != 7 {
		t.Fatalf("BFD from the old keys: %+v", o.BFD)
	}
	if o.Password != "secret" || !o.TTLSecurity {
		t.Fatalf("security keys: %+v", o.Security)
	}
	if len(warned) != 3 || !strings.Contains(strings.Join(warned, "\n"), "bfd.min_tx is deprecated: use bfd.desired_min_tx") {
		t.Fatalf("warnings: %q", warned)
	}
	o = DefaultOptions()
	err = daemon.Load(daemon.LoadOptions{File: write(base + "bfd:\n  min_tx: 300ms\n  desired_min_tx: 200ms\n")}, &o)
	if err == nil || !strings.Contains(err.Error(), "bfd.min_tx and bfd.desired_min_tx: both set") {
		t.Fatalf("old and new name together: %v", err)
	}
}

func TestSwitchServesNoConsole(t *testing.T) {
	o := DefaultOptions()
	o.API.ConsoleListen = "127.0.0.1:9443"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "api.console_listen: the web console is a reflector's") {
		t.Errorf("a switch with api.console_listen: %v", err)
	}
}

// TestDirectModeOptions: no reflectors is direct mode; it needs no asn and
// no local address (BFD runs toward reflectors only), and refuses the keys
// that only protect reflector sessions, naming them.
func TestDirectModeOptions(t *testing.T) {
	o := DefaultOptions()
	o.RouterID, o.AccessPorts = "10.0.0.11", []string{"swp1"}
	if !o.Direct() {
		t.Fatal("no reflectors is not direct mode")
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("direct mode with defaults: %v", err)
	}
	o.Password, o.TTLSecurity, o.HistorySize = "secret", true, 0
	err := o.Validate()
	for _, want := range []string{"password: set, but reflectors lists none", "ttl_security: true, but reflectors lists none",
		"history_size 0: want 1 to 10000"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	f := DefaultOptions()
	f.RouterID, f.AccessPorts, f.Reflectors = "10.0.0.11", []string{"swp1"}, []ReflectorOptions{{Address: "10.0.0.1"}}
	err = f.Validate()
	for _, want := range []string{"asn: must be set", "local_address: must be set when bfd.enabled is true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("fabric mode: error lacks %q: %v", want, err)
		}
	}
	if f.Direct() {
		t.Error("a switch with reflectors is in direct mode")
	}
}

// TestTopologyExamples: the examples of direct mode and of a switch agent
// on a reflector's box load and validate, and mean what they say.
func TestTopologyExamples(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "docs", "deploy")
	direct := DefaultOptions()
	if err := daemon.Load(daemon.LoadOptions{File: filepath.Join(dir, "inofd-switch-direct.yaml")}, &direct); err != nil {
		t.Fatal(err)
	}
	if !direct.Direct() || !direct.API.Enabled() || direct.HistorySize != DefaultOptions().HistorySize {
		t.Fatalf("direct example: %+v", direct)
	}
	box := DefaultOptions()
	if err := daemon.Load(daemon.LoadOptions{File: filepath.Join(dir, "inofd-switch-on-reflector.yaml")}, &box); err != nil {
		t.Fatal(err)
	}
	if box.Direct() || box.MetricsListen == "127.0.0.1:9465" || box.LocalAddress == box.Reflectors[0].Address ||
		box.RouterID == box.Reflectors[0].Address || box.StateDir == "/var/lib/inofd-reflector" {
		t.Fatalf("a box's switch clashes with its reflector: %+v", box)
	}
}
