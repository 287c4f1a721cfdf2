package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/reflector"
	"github.com/openinof/inof/internal/cmdtest"
	"github.com/openinof/inof/internal/syncbuf"
)

// waitTimeout bounds every wait; only a broken daemon reaches it.
const waitTimeout = 60 * time.Second

// buildInofd builds this command into a temporary directory.
func buildInofd(t *testing.T) string {
	t.Helper()
	return cmdtest.Build(t, ".", "inofd")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// child is one running inofd.
type child struct {
	cmd    *exec.Cmd
	out    *syncbuf.Buffer
	exited chan struct{}
	err    error
}

func startDaemon(t *testing.T, bin string, env []string, args ...string) *child {
	t.Helper()
	d := &child{cmd: exec.Command(bin, args...), out: &syncbuf.Buffer{}, exited: make(chan struct{})}
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() { d.cmd.Process.Kill(); <-d.exited })
	return d
}

// wait waits for the daemon to exit and returns its exit code.
func (d *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-d.exited:
	case <-time.After(waitTimeout):
		t.Fatalf("daemon did not exit; output:\n%s", d.out.String())
	}
	return d.cmd.ProcessState.ExitCode()
}

// get fetches a URL, retrying connection errors until the deadline.
func get(t *testing.T, url string, want func(code int, body string) bool) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
			if want(resp.StatusCode, string(b)) {
				return string(b)
			}
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: last answer %s", url, last)
	return ""
}

// TestReflectorBinary runs the real binary on loopback (a high port, no
// root): /healthz and /metrics answer, SIGTERM ends it with exit code 0 and
// a clean marker, every start after the first is a graceful restart (after
// a kill or a clean stop), and the configuration comes from the file, the environment and flags.
func TestReflectorBinary(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	sock := filepath.Join(shortDir(t), "api.sock")
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := filepath.Join(dir, "inofd.yaml")
	body := fmt.Sprintf(`log:
  format: json
state_dir: %s
router_id: 127.0.0.1
listen:
  addresses: [127.0.0.1]
  port: %d
bfd:
  enabled: false
api:
  socket: %s
clients:
  - address: 127.0.0.2
`, state, freePort(t), sock)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"INOF_ASN=65000"} // a key only the environment sets
	args := []string{"--role", "reflector", "--config", cfg, "--metrics-listen", metrics}
	marker := func() string {
		b, err := os.ReadFile(filepath.Join(state, "reflector.state"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := func(restarting string) *child {
		d := startDaemon(t, bin, env, args...)
		get(t, "http://"+metrics+"/healthz", func(code int, b string) bool { return code == 200 && b == "ok\n" })
		m := get(t, "http://"+metrics+"/metrics", func(code int, _ string) bool { return code == 200 })
		for _, want := range []string{"inof_reflector_up 1", "inof_reflector_graceful_restart_restarting " + restarting,
			`inof_reflector_sessions{kind="client",state=`, "go_goroutines"} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		if m := marker(); !strings.Contains(m, `"state":"running"`) {
			t.Fatalf("marker while running: %s", m)
		}
		return d
	}
	stop := func(d *child) {
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := d.wait(t); code != 0 {
			t.Fatalf("exit code %d after SIGTERM; output:\n%s", code, d.out.String())
		}
		if m := marker(); !strings.Contains(m, `"state":"clean"`) {
			t.Fatalf("marker after SIGTERM: %s", m)
		}
		if out := d.out.String(); !strings.Contains(out, `"msg":"reflector stopped","clean":true`) {
			t.Fatalf("no clean stop logged (JSON from the file's log.format):\n%s", out)
		}
	}

	// The first start is no restart; every later one is graceful, after a
	// kill and after a clean stop alike (the switches keep the records of
	// a reflector that says it restarted: docs/reflector.md).
	stop(run("0"))
	d := run("1")
	d.cmd.Process.Kill()
	d.wait(t)
	d = run("1") // after the kill
	stop(d)
	stop(run("1"))
}

// TestInvalidConfigListsEveryError: the command refuses a bad
// configuration before touching the network and names every problem, from
// the file, the environment and the flags, and exits non-zero.
func TestInvalidConfigListsEveryError(t *testing.T) {
	bin := buildInofd(t)
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := "hold_time: soon\nbogus: 1\nrouter_id: 10.0.0.1\nclients:\n  - address: 10.0.0.300\n  - {}\nreflectors:\n  - address: 10.0.0.2\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, []string{"INOF_LOG_FORMAT=xml"}, "--role", "reflector", "--config", cfg, "--listen-port", "0")
	if code := d.wait(t); code != daemon.ExitConfig {
		t.Fatalf("exit code %d, want %d (invalid configuration)", code, daemon.ExitConfig)
	}
	out := d.out.String()
	wants := []string{"hold_time: time: invalid duration", "unknown key bogus", `log.format "xml"`, "asn: must be set",
		"listen.port 0", `clients[0].address "10.0.0.300": not an IP address`, "clients[1].address: must be set",
		"cluster_id: must be set with reflectors", "clients[0]: BFD needs local_address", "clients[1]: BFD needs local_address"}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if n := strings.Count(out, "\n") - 1; n != len(wants) { // minus the heading line
		t.Errorf("%d error lines, want %d:\n%s", n, len(wants), out)
	}

	// An environment variable's bad value names the variable; a misspelt
	// one is named with the one it likely meant.
	d = startDaemon(t, bin, []string{"INOF_ASN=abc", "INOF_ROUTR_ID=10.0.0.1"}, "--role", "reflector", "--listen-port", "0")
	if code := d.wait(t); code != daemon.ExitConfig {
		t.Fatalf("INOF_ASN=abc: exit code %d, want %d", code, daemon.ExitConfig)
	}
	for _, w := range []string{"asn: cannot parse", "(environment variable INOF_ASN)",
		"INOF_ROUTR_ID is not a setting (did you mean INOF_ROUTER_ID?): ignored"} {
		if !strings.Contains(d.out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, d.out.String())
		}
	}

	d = startDaemon(t, bin, nil, "--role", "switchboard")
	if code := d.wait(t); code != daemon.ExitUsage || !strings.Contains(d.out.String(), `--role "switchboard"`) {
		t.Fatalf("unknown role: exit %d, output %s", code, d.out.String())
	}
}

// TestExampleConfig: the example configuration under docs/deploy loads and
// validates, and the keys it shows with their defaults hold the defaults.
func TestExampleConfig(t *testing.T) {
	opts := reflector.DefaultOptions()
	if err := daemon.Load(daemon.LoadOptions{File: "../../docs/deploy/inofd-reflector.yaml"}, &opts); err != nil {
		t.Fatal(err)
	}
	def := reflector.DefaultOptions()
	// The keys marked "example" or "required" in the file.
	def.ASN, def.RouterID, def.ClusterID, def.LocalAddress = opts.ASN, opts.RouterID, opts.ClusterID, opts.LocalAddress
	def.Clients, def.Reflectors = opts.Clients, opts.Reflectors
	// YAML's [] and the default nil are one.
	if len(opts.Listen.Addresses) == 0 {
		opts.Listen.Addresses = nil
	}
	if len(opts.API.UnixIdentities) == 0 {
		opts.API.UnixIdentities = nil
	}
	if len(opts.API.Clients) == 0 {
		opts.API.Clients = nil
	}
	if !reflect.DeepEqual(opts, def) {
		t.Fatalf("example differs from the defaults:\n%+v\n%+v", opts, def)
	}
	if len(opts.Clients) != 3 || opts.Clients[1].BFD.DetectMult != 5 || !opts.Clients[2].BFD.Disabled || len(opts.Reflectors) != 1 {
		t.Fatalf("example lists: %+v %+v", opts.Clients, opts.Reflectors)
	}
}
