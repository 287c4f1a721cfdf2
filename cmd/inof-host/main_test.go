package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInvalidConfigListsEveryError: the command refuses a bad
// configuration before touching the network and names every problem, from
// the file, the environment and the flags.
func TestInvalidConfigListsEveryError(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("restrain_time: soon\nbogus: 1\ninterfaces:\n  - name: eth0\n    role: host\n    protocol: fc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := newCommand([]string{"INOF_LOG_FORMAT=xml"}, &stderr)
	cmd.SetArgs([]string{"--config", cfg, "--disconnect-on", "sometimes"})
	if err := cmd.Execute(); err == nil {
		t.Fatal("accepted")
	}
	out := stderr.String()
	for _, want := range []string{"restrain_time: time: invalid duration", "unknown key bogus", `log.format "xml"`,
		`disconnect_on "sometimes"`, `interfaces[0].protocol: "fc"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
}
