package switchagent

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/openinof/inof/inof/daemon"
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
	if o.HoldDown != def.HoldDown || o.Settle != def.Settle || o.BFD != def.BFD || o.GracefulRestart != def.GracefulRestart ||
		o.StateDir != def.StateDir || o.MetricsListen != def.MetricsListen || o.Log != def.Log || o.MaxDevices != def.MaxDevices {
		t.Fatalf("example shows other defaults:\n%+v\n%+v", o, def)
	}
	if o.ASN != 65000 || len(o.Reflectors) != 2 || len(o.AccessPorts) != 3 || o.routerID() != 0x0a00000b {
		t.Fatalf("example values: %+v", o)
	}
	if o.HoldDown != 30*time.Second {
		t.Fatalf("hold_down %s", o.HoldDown)
	}
}
