package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/lossless"
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

// TestDryRunPrintsLosslessCommands: --dry-run with a profile file prints the
// dcb commands and ECN writes for the configured interfaces and exits
// without opening any link.
func TestDryRunPrintsLosslessCommands(t *testing.T) {
	dir := t.TempDir()
	p := lossless.Default()
	p.Name = "lab"
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(profile, y, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("host_nqn: nqn.2014-08.org.nvmexpress:uuid:1\nstate_file: "+dir+"/s.json\n"+
		"interfaces:\n  - {name: ens1f0np0, role: host, protocol: rdma, address: 10.1.0.2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd := newCommand(nil, &stderr)
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"--config", cfg, "--lossless-file", profile, "--dry-run"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	for _, want := range []string{`profile "lab"`, "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on",
		"echo 48 > /sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout.String())
		}
	}
	cmd = newCommand(nil, &stderr)
	cmd.SetArgs([]string{"--config", cfg, "--dry-run"})
	if err := cmd.Execute(); err == nil || !strings.Contains(stderr.String(), "lossless.server or lossless.file") {
		t.Fatalf("dry run without a source: %v, %s", err, stderr.String())
	}
}
