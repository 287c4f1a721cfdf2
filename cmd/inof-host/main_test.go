package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/lossless"
)

// execute runs the command tree as main does and returns the exit code and
// what it printed.
func execute(environ []string, args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	cmd := newCommand(environ, &errOut)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	code = daemon.Execute(cmd, &errOut)
	return code, out.String(), errOut.String()
}

// TestInvalidConfigListsEveryError: the command refuses a bad
// configuration before touching the network and names every problem, from
// the file, the environment and the flags.
func TestInvalidConfigListsEveryError(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("restrain_time: soon\nbogus: 1\ninterfaces:\n  - name: eth0\n    role: host\n    protocol: fc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, out := execute([]string{"INOF_LOG_FORMAT=xml"}, "--config", cfg, "--disconnect-on", "sometimes")
	if code != daemon.ExitConfig {
		t.Fatalf("exit %d, want %d (invalid configuration)", code, daemon.ExitConfig)
	}
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
	code, stdout, stderr := execute(nil, "--config", cfg, "--lossless-file", profile, "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`profile "lab"`, "dcb pfc set dev ens1f0np0 prio-pfc 0:off 1:off 2:off 3:on",
		"echo 48 > /sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	code, _, stderr = execute(nil, "--config", cfg, "--dry-run")
	if code != daemon.ExitFailure || !strings.Contains(stderr, "lossless.server or lossless.file") {
		t.Fatalf("dry run without a source: exit %d, %s", code, stderr)
	}
}
