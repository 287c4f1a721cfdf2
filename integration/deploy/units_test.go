package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/internal/cmdtest"
)

// unitFile is a systemd unit read as key=value lines (repeated keys kept).
type unitFile map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			u[k] = append(u[k], v)
		}
	}
	return u
}

func (u unitFile) one(k string) string {
	if len(u[k]) == 0 {
		return ""
	}
	return u[k][len(u[k])-1]
}

// TestUnits: systemd-analyze verify accepts the three units of docs/deploy
// (their ExecStart pointed at freshly built binaries), and they hold what
// the daemons need: Type=notify with a watchdog, SIGHUP as the reload,
// no restart on the daemons' usage and configuration exit codes, the
// hardening of issue #25, a runtime directory wherever the example
// configuration puts a socket under /run, CAP_NET_ADMIN for the host's
// lossless profile, and a reflector and a switch on one machine sharing
// no state directory, runtime directory or metrics port.
func TestUnits(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "systemd")
	bins := map[string]string{"inofd": cmdtest.Build(t, "../../cmd/inofd", "inofd"),
		"inof-host": cmdtest.Build(t, "../../cmd/inof-host", "inof-host")}
	dir := t.TempDir()
	units := map[string]string{"inofd-reflector.service": "inofd-reflector.yaml", "inofd-switch.service": "inofd-switch.yaml",
		"inof-host.service": "inof-host.yaml"}
	state, runtime, ports := map[string]string{}, map[string]string{}, map[string]string{}
	for name, cfg := range units {
		path := filepath.Join(deployDir, name)
		u := readUnit(t, path)
		for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main", "ExecReload": "/bin/kill -HUP $MAINPID",
			"RestartPreventExitStatus": fmt.Sprintf("%d %d", daemon.ExitUsage, daemon.ExitConfig), "Restart": "on-failure",
			"ProtectProc": "invisible", "ProcSubset": "pid", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
			"SystemCallErrorNumber": "EPERM"} {
			if got := u.one(k); got != want {
				t.Errorf("%s: %s=%q, want %q", name, k, got, want)
			}
		}
		if !slices.Contains(u["SystemCallFilter"], "@system-service") || u.one("WatchdogSec") == "" {
			t.Errorf("%s: SystemCallFilter %q, WatchdogSec %q", name, u["SystemCallFilter"], u.one("WatchdogSec"))
		}
		if o, ok := state[u.one("StateDirectory")]; ok {
			t.Errorf("%s and %s share StateDirectory=%s", name, o, u.one("StateDirectory"))
		}
		state[u.one("StateDirectory")] = name
		if rd := u.one("RuntimeDirectory"); rd != "" {
			if o, ok := runtime[rd]; ok {
				t.Errorf("%s and %s share RuntimeDirectory=%s", name, o, rd)
			}
			runtime[rd] = name
		}
		// The example configuration's state and sockets lie in the unit's
		// directories; its metrics port is its own.
		var conf struct {
			StateDir      string `yaml:"state_dir"`
			StateFile     string `yaml:"state_file"`
			MetricsListen string `yaml:"metrics_listen"`
			API           struct {
				Socket string `yaml:"socket"`
			} `yaml:"api"`
		}
		if err := readYAML(filepath.Join(deployDir, cfg), &conf); err != nil {
			t.Fatal(err)
		}
		if st := conf.StateDir + conf.StateFile; !strings.HasPrefix(st, "/var/lib/"+u.one("StateDirectory")) {
			t.Errorf("%s: state %s outside StateDirectory=%s", cfg, st, u.one("StateDirectory"))
		}
		if s := conf.API.Socket; s != "" && filepath.Dir(s) != "/run/"+u.one("RuntimeDirectory") {
			t.Errorf("%s: api.socket %s outside RuntimeDirectory=%s", cfg, s, u.one("RuntimeDirectory"))
		}
		if o, ok := ports[conf.MetricsListen]; ok {
			t.Errorf("%s and %s both serve metrics on %s", cfg, o, conf.MetricsListen)
		}
		ports[conf.MetricsListen] = cfg

		exec0 := strings.Fields(u.one("ExecStart"))
		bin := bins[filepath.Base(exec0[0])]
		if bin == "" {
			t.Fatalf("%s: ExecStart %q runs none of our binaries", name, u.one("ExecStart"))
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		local := filepath.Join(dir, name)
		if err := os.WriteFile(local, []byte(strings.Replace(string(body), "ExecStart="+exec0[0], "ExecStart="+bin, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(analyze, "verify", "--man=no", local).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
	host := readUnit(t, filepath.Join(deployDir, "inof-host.service"))
	for _, k := range []string{"CapabilityBoundingSet", "AmbientCapabilities"} {
		if !regexp.MustCompile(`\bCAP_NET_ADMIN\b`).MatchString(host.one(k)) {
			t.Errorf("inof-host.service %s=%q lacks CAP_NET_ADMIN (--apply-lossless)", k, host.one(k))
		}
	}
	for _, name := range []string{"inofd-reflector.service", "inofd-switch.service"} {
		u := readUnit(t, filepath.Join(deployDir, name))
		for _, k := range []string{"CapabilityBoundingSet", "AmbientCapabilities"} {
			if !regexp.MustCompile(`\bCAP_NET_RAW\b`).MatchString(u.one(k)) {
				t.Errorf("%s %s=%q lacks CAP_NET_RAW (bfd.probe's ICMP echo)", name, k, u.one(k))
			}
		}
	}
	for _, name := range []string{"inofd-reflector.service", "inofd-switch.service"} {
		u := readUnit(t, filepath.Join(deployDir, name))
		if u.one("RestrictRealtime") != "no" || u.one("LimitRTPRIO") != "1" {
			t.Errorf("%s: RestrictRealtime=%q LimitRTPRIO=%q, want no and 1 (BFD's real-time timer thread)", name, u.one("RestrictRealtime"), u.one("LimitRTPRIO"))
		}
	}
	sw := readUnit(t, filepath.Join(deployDir, "inofd-switch.service"))
	if sw.one("RuntimeDirectory") == "" {
		t.Error("inofd-switch.service has no RuntimeDirectory: /run is read-only under ProtectSystem=strict")
	}
}
