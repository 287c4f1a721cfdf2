package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/app/api/apiclient"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/internal/cmdtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestCommandLine runs the real binary as a user would: --version prints
// the build; a misspelt flag, a stray argument, a missing or unknown role
// and a flag of the other role are usage errors (exit 64) that say what is
// wrong with the usage line (they used to exit 1 without a word); --help
// marks only the flags one role alone takes. Output is compared with
// golden files (go test -update rewrites them).
func TestCommandLine(t *testing.T) {
	bin := buildInofd(t)
	r := cmdtest.Run(t, bin, nil, "--version")
	if r.Code != 0 || !cmdtest.VersionShape("inofd", r.Stdout) || r.Stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	cmdtest.Golden(t, *update, "version", cmdtest.Normalize(r.Stdout))
	for name, args := range map[string][]string{
		"misspelt-flag":  {"--confg", "x"},
		"stray-argument": {"--role", "reflector", "extra"},
		"no-role":        {},
		"unknown-role":   {"--role", "switchboard"},
		"foreign-flag":   {"--role", "switch", "--cluster-id", "1.2.3.4"},
	} {
		r := cmdtest.Run(t, bin, nil, args...)
		if r.Code != daemon.ExitUsage || r.Stdout != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q", name, r.Code, daemon.ExitUsage, r.Stdout)
		}
		cmdtest.Golden(t, *update, name, r.Stderr)
	}
	r = cmdtest.Run(t, bin, nil, "--help")
	if r.Code != 0 {
		t.Fatalf("--help: exit %d: %s", r.Code, r.Stderr)
	}
	cmdtest.Golden(t, *update, "help", r.Stdout)
	for _, line := range strings.Split(r.Stdout, "\n") {
		for _, both := range []string{"--asn ", "--router-id ", "--local-address ", "--api-socket "} {
			if strings.Contains(line, both) && strings.Contains(line, "(reflector)") {
				t.Errorf("a flag both roles take is marked for the reflector only: %s", line)
			}
		}
		for flag, role := range map[string]string{"--cluster-id ": "(reflector)", "--listen-port ": "(reflector)",
			"--access-ports ": "(switch)", "--hold-down ": "(switch)"} {
			if strings.Contains(line, flag) && !strings.Contains(line, role) {
				t.Errorf("%s not marked %s: %s", flag, role, line)
			}
		}
	}
}

// TestAccessPortsFlag: --access-ports a,b through the real command line
// reaches the agent as two ports named a and b (it used to be "[a" and
// "b]"). The ports do not exist, so the agent fails to open the first one
// and says which.
func TestAccessPortsFlag(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "s.yaml")
	body := fmt.Sprintf("state_dir: %s\nasn: 65000\nrouter_id: 127.0.0.1\nmetrics_listen: \"\"\nbfd:\n  enabled: false\n"+
		"reflectors:\n  - address: 127.0.0.2\n    port: %d\n", dir, freePort(t))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--access-ports", "nosuch1,nosuch2"}, {"--access-ports", "nosuch1", "--access-ports", "nosuch2"}} {
		d := startDaemon(t, bin, nil, append([]string{"--role", "switch", "--config", cfg}, args...)...)
		code := d.wait(t)
		out := d.out.String()
		if code != daemon.ExitFailure || !strings.Contains(out, "access port nosuch1:") || strings.Contains(out, "access port [") {
			t.Fatalf("%v: exit %d (want %d, the port cannot be opened):\n%s", args, code, daemon.ExitFailure, out)
		}
		if !strings.Contains(out, `access_ports="[nosuch1 nosuch2]"`) {
			t.Fatalf("%v: the agent did not start with the two ports:\n%s", args, out)
		}
	}
}

// notifySocket is a stand-in for systemd's notification socket.
type notifySocket struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(shortDir(t), "notify")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n.conn = c
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := c.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, strings.TrimSpace(string(buf[:k])))
			n.mu.Unlock()
		}
	}()
	return n
}

// count returns how many messages so far contain s.
func (n *notifySocket) count(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.msgs {
		if strings.Contains(m, s) {
			c++
		}
	}
	return c
}

func (n *notifySocket) waitFor(t *testing.T, s string, times int, d *child) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for n.count(s) < times {
		if time.Now().After(deadline) {
			n.mu.Lock()
			defer n.mu.Unlock()
			t.Fatalf("no %d× %q from the daemon; got %q; output:\n%s", times, s, n.msgs, d.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLog waits until the daemon's output has want after offset.
func (d *child) waitLog(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		out := d.out.String()
		if i := strings.Index(out[from:], want); i >= 0 {
			return from + i + len(want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon never logged %q; output:\n%s", want, out)
		}
		select {
		case <-d.exited:
			t.Fatalf("daemon exited (%v) waiting for %q; output:\n%s", d.err, want, d.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReloadAndNotify runs the real reflector under a stand-in for
// systemd: it reports READY=1 once it serves and feeds the watchdog.
// SIGHUP with a changed log level and BFD timers (it used to kill the
// daemon, leaving its marker at "running") reloads them: the process stays
// up, debug lines appear, the BFD session shows the new timers through the
// API, systemd hears RELOADING=1 then READY=1, and the key that needs a
// restart is named. A reload with an invalid file is refused and changes
// nothing. SIGTERM still stops it cleanly (exit 0, STOPPING=1) with no
// ERROR line.
func TestReloadAndNotify(t *testing.T) {
	bin := buildInofd(t)
	dir := t.TempDir()
	sock := filepath.Join(shortDir(t), "api.sock")
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := filepath.Join(dir, "inofd.yaml")
	port := freePort(t)
	write := func(level, rx string, mult int, holdTime string) {
		body := fmt.Sprintf(`log:
  format: json
  level: %s
state_dir: %s
asn: 65000
router_id: 127.0.0.1
local_address: 127.0.0.1
hold_time: %s
listen:
  addresses: [127.0.0.1]
  port: %d
bfd:
  enabled: true
  desired_min_tx: 100ms
  required_min_rx: %s
  detect_mult: %d
api:
  socket: %s
clients:
  - address: 127.0.0.2
`, level, dir, holdTime, port, rx, mult, sock)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("info", "100ms", 3, "9s")
	ns := listenNotify(t)
	d := startDaemon(t, bin, []string{"NOTIFY_SOCKET=" + ns.path, "WATCHDOG_USEC=200000"},
		"--role", "reflector", "--config", cfg, "--metrics-listen", metrics)
	ns.waitFor(t, "READY=1", 1, d)
	get(t, "http://"+metrics+"/healthz", func(code int, b string) bool { return code == 200 })
	ns.waitFor(t, "WATCHDOG=1", 3, d)
	bfdSession := func() *inofv1.BFDSession {
		conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := inofv1.NewFabricClient(conn).ListBFDSessions(ctx, &inofv1.ListBFDSessionsRequest{})
		if err != nil || len(resp.GetSessions()) != 1 {
			t.Fatalf("BFD sessions: %v %v", resp, err)
		}
		return resp.GetSessions()[0]
	}
	if s := bfdSession(); s.GetRxIntervalMs() != 100 || s.GetDetectMult() != 3 {
		t.Fatalf("BFD before the reload: %v", s)
	}
	if strings.Contains(d.out.String(), `"level":"DEBUG"`) {
		t.Fatal("debug lines at level info")
	}

	write("debug", "250ms", 4, "12s")
	at := len(d.out.String())
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	at = d.waitLog(t, at, `"msg":"configuration reloaded","applied":"bfd.detect_mult,bfd.required_min_rx,log.level"`)
	d.waitLog(t, at, `"msg":"configuration changes that need a restart (not applied)","keys":"hold_time"`)
	ns.waitFor(t, "RELOADING=1", 1, d)
	ns.waitFor(t, "READY=1", 2, d)
	if s := bfdSession(); s.GetRxIntervalMs() != 250 || s.GetDetectMult() != 4 {
		t.Fatalf("BFD after the reload: %v", s)
	}
	// The client connects (from its address, 127.0.0.2): the session's
	// steps are debug lines, shown now.
	c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	d.waitLog(t, at, `"level":"DEBUG"`)
	c.Close()
	get(t, "http://"+metrics+"/healthz", func(code int, b string) bool { return code == 200 })

	// An invalid file: refused, the running configuration stays.
	if err := os.WriteFile(cfg, []byte("log:\n  level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	at = len(d.out.String())
	d.cmd.Process.Signal(syscall.SIGHUP)
	d.waitLog(t, at, `"msg":"reload refused; the running configuration stays"`)
	if s := bfdSession(); s.GetRxIntervalMs() != 250 {
		t.Fatalf("BFD after a refused reload: %v", s)
	}

	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, d.out.String())
	}
	ns.waitFor(t, "STOPPING=1", 1, d)
	for _, line := range strings.Split(d.out.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) && !strings.Contains(line, "reload refused") {
			t.Errorf("ERROR logged in a run with a clean stop: %s", line)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "reflector.state")); err != nil || !strings.Contains(string(b), `"state":"clean"`) {
		t.Fatalf("marker after SIGTERM: %s %v", b, err)
	}
}
