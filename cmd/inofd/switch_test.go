package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/app/daemon"
)

// TestSwitchInvalidConfigListsEveryError: inofd --role switch refuses a
// bad configuration with every problem listed, and exits non-zero.
func TestSwitchInvalidConfigListsEveryError(t *testing.T) {
	bin := buildInofd(t)
	cfg := filepath.Join(t.TempDir(), "s.yaml")
	body := "router_id: 10.0.0\nreflectors:\n  - address: 10.0.0.1\n  - address: 10.0.0.1\naccess_ports: [swp1, swp1]\nhold_down: -1s\nlegacy_v0_ports: [eth9]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, nil, "--role", "switch", "--config", cfg)
	if code := d.wait(t); code != daemon.ExitConfig {
		t.Fatalf("exit code %d, want %d", code, daemon.ExitConfig)
	}
	out := d.out.String()
	wants := []string{`router_id "10.0.0"`, "asn: must be set", "local_address: must be set when bfd.enabled is true",
		"reflectors[1].address 10.0.0.1: listed twice", `access_ports[1] "swp1": listed twice`, "hold_down -1s",
		`legacy_v0_ports: "eth9" is not an access port`}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if d := startDaemon(t, bin, nil, "--role", "switch", "--cluster-id", "1.2.3.4"); d.wait(t) != daemon.ExitUsage ||
		!strings.Contains(d.out.String(), "--cluster-id does not apply to role switch") {
		t.Fatalf("a reflector flag on a switch: %s", d.out.String())
	}
}

// TestSwitchDirectModeInvalidConfig: a switch without reflectors (direct
// mode) that sets keys only a reflector session uses exits with the
// configuration error code (78), naming each.
func TestSwitchDirectModeInvalidConfig(t *testing.T) {
	bin := buildInofd(t)
	cfg := filepath.Join(t.TempDir(), "s.yaml")
	body := "router_id: 10.0.0.11\naccess_ports: [swp1]\npassword: secret\nttl_security: true\nhistory_size: 0\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, nil, "--role", "switch", "--config", cfg)
	if code := d.wait(t); code != daemon.ExitConfig {
		t.Fatalf("exit code %d, want %d:\n%s", code, daemon.ExitConfig, d.out.String())
	}
	out := d.out.String()
	wants := []string{"password: set, but reflectors lists none", "ttl_security: true, but reflectors lists none",
		"history_size 0: want 1 to 10000"}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "\n") - 1; n != len(wants) {
		t.Errorf("%d error lines, want %d (asn and local_address are not needed in direct mode):\n%s", n, len(wants), out)
	}
}
