//go:build privileged

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/l2proto"
)

const (
	privHostNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555"
	privSubNQN  = "nqn.2014-08.org.example:nvme:array-priv"
	privWait    = 30 * time.Second
)

// buildBinary builds cmd/inof-host into a fresh directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "inof-host")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestPrivHostAgentEndToEnd runs the real inof-host in a namespace with a
// veth to the test, which plays the switch with l2proto codecs over
// AF_PACKET: it checks the registration and zone query, sends an active
// notification and gets the ACK, sees the fake nvme connect with the right
// arguments, then an inactive with reason 4 and sees the disconnect, and
// finally stops the daemon with SIGTERM.
func TestPrivHostAgentEndToEnd(t *testing.T) {
	netns.RequireRoot(t)
	bin := buildBinary(t)
	swNS := netns.New(t, "sw")
	hostNS := netns.New(t, "host")
	netns.Veth(t, swNS, "sw1", hostNS, "eth0")
	hostNS.Addr("eth0", "10.77.0.2/24")
	hostIP := netip.MustParseAddr("10.77.0.2")

	var sw *l2proto.PacketLink
	if err := swNS.Do(func() (err error) { sw, err = l2proto.ListenPacket("sw1"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	frames := make(chan l2proto.Frame, 64)
	go func() {
		buf := make([]byte, l2proto.MaxFrameLen+4)
		for {
			n, err := sw.ReadFrame(buf)
			if errors.Is(err, syscall.ENETDOWN) {
				continue // reported once after the port was set down
			}
			if err != nil {
				return
			}
			if f, err := l2proto.DecodeFrame(buf[:n]); err == nil {
				frames <- f
			}
		}
	}()
	next := func(what string) l2proto.Frame {
		t.Helper()
		select {
		case f := <-frames:
			return f
		case <-time.After(privWait):
			t.Fatalf("no %s from inof-host", what)
			return l2proto.Frame{}
		}
	}

	// The fake nvme on PATH, and the configuration.
	script, err := filepath.Abs("../../app/hostagent/testdata/fake-nvme")
	if err != nil {
		t.Fatal(err)
	}
	fakeBin, nvmeDir, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.Symlink(script, filepath.Join(fakeBin, "nvme")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(work, "inof-host.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`log:
  level: debug
metrics_listen: 127.0.0.1:0
state_file: %s/state.json
host_nqn: %s
restrain_time: 0s
interfaces:
  - name: eth0
    role: host
    protocol: tcp
`, work, privHostNQN)), 0o600); err != nil {
		t.Fatal(err)
	}

	logs, err := os.Create(filepath.Join(work, "inof-host.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	logText := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	cmd := hostNS.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_NVME_DIR="+nvmeDir)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	exited := make(chan struct{})
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("inof-host log:\n%s", logText())
		}
	})

	// Registration and zone query, decoded.
	f := next("LLDPDU")
	if f.LLDP == nil {
		t.Fatalf("first frame %+v, want an LLDPDU", f)
	}
	r := f.LLDP.Registration
	if r.Addr != hostIP || r.Role != inof.RoleHost || r.Protocol != inof.ProtocolTCP || f.LLDP.TTL != 120 ||
		r.Flags != l2proto.FlagSubscribe || !bytes.Equal(f.LLDP.ChassisID, f.Source) {
		t.Fatalf("registration %+v, LLDPDU %+v", r, f.LLDP)
	}
	f = next("zone query")
	if f.Message == nil || len(f.Message.Queries) != 1 || f.Message.Queries[0].Host != hostIP {
		t.Fatalf("second frame %+v, want a zone query for %s", f, hostIP)
	}

	// Link flaps: carrier goes when the switch port is set down (a flap
	// shorter than the poll interval, seen in carrier_changes), and the
	// host's own port may be set down too (its socket reports ENETDOWN
	// once). Each time carrier is back the host registers and queries its
	// zone again.
	for i, flap := range []struct {
		ns     *netns.NS
		ifname string
	}{{swNS, "sw1"}, {hostNS, "eth0"}} {
		flap.ns.MustIP("link", "set", flap.ifname, "down")
		flap.ns.MustIP("link", "set", flap.ifname, "up")
		waitFor(t, func() bool { return strings.Count(logText(), "msg=\"link up\"") == i+1 }, "link up in the log")
		for sawLLDP := false; ; {
			f := next("registration after link up")
			if f.LLDP != nil {
				sawLLDP = true
				continue
			}
			if f.Message == nil || len(f.Message.Queries) != 1 || f.Message.Queries[0].Host != hostIP || !sawLLDP {
				t.Fatalf("after link up on %s: %+v (LLDPDU before it: %v), want an LLDPDU, then a zone query", flap.ifname, f, sawLLDP)
			}
			break
		}
	}

	if !strings.Contains(logText(), `msg="interface down" interface=eth0`) {
		t.Fatalf("the agent's socket never reported its port down:\n%s", logText())
	}

	notify := func(n l2proto.Notification) {
		t.Helper()
		fr, err := l2proto.MessageFrame(sw.HardwareAddr(), &l2proto.Message{Version: l2proto.Version1, Notifications: []l2proto.Notification{n}})
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
		for {
			f := next("ACK")
			if f.Message == nil || len(f.Message.Acks) == 0 {
				continue // a periodic LLDPDU may come first
			}
			if len(f.Message.Acks) != 1 || f.Message.Acks[0].Key() != n.Key() {
				t.Fatalf("ACK %+v for %+v", f.Message.Acks, n)
			}
			return
		}
	}
	target := netip.MustParseAddr("10.77.0.100")
	n := l2proto.Notification{Target: target, Host: hostIP, Seq: 0x1001, State: inof.StateActive,
		Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420, NQN: privSubNQN}
	notify(n)
	waitCall(t, nvmeDir, "connect -t tcp -a 10.77.0.100 -s 4420 -w 10.77.0.2 -n "+privSubNQN+" -q "+privHostNQN+" -l 1800 -o json")

	n.Seq, n.State, n.Reason = 0x1002, inof.StateInactive, inof.ReasonZoneChange
	notify(n)
	waitCall(t, nvmeDir, "disconnect -d nvme0")
	// The daemon counts and logs a command after it exited.
	waitFor(t, func() bool { return strings.Contains(logText(), "msg=disconnected reason=zone-change") }, "the disconnect in the log")

	// /healthz and /metrics of the running daemon, fetched inside its
	// namespace.
	addr := regexp.MustCompile(`msg=metrics listen=(127\.0\.0\.1:\d+)`).FindStringSubmatch(logText())
	if addr == nil {
		t.Fatalf("no metrics address in the log:\n%s", logText())
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (conn net.Conn, err error) {
		err = hostNS.Do(func() error { conn, err = (&net.Dialer{}).DialContext(ctx, network, a); return err })
		return conn, err
	}}}
	fetch := func(path string) string {
		t.Helper()
		resp, err := client.Get("http://" + addr[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	if body := fetch("/healthz"); body != "ok\n" {
		t.Fatalf("/healthz %q", body)
	}
	metrics := fetch("/metrics")
	for _, want := range []string{`inof_host_notifications_acked_total{interface="eth0"} 2`,
		`inof_host_nvme_operations_total{op="connect",result="ok"} 1`,
		`inof_host_nvme_operations_total{op="disconnect",result="ok"} 1`, "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("inof-host exit after SIGTERM: %v", exitErr)
		}
	case <-time.After(privWait):
		t.Fatal("inof-host did not stop on SIGTERM")
	}
	calls := readCalls(t, nvmeDir)
	if c := strings.Count(strings.Join(calls, "\n"), "connect -t"); c != 1 {
		t.Fatalf("%d connects: %q", c, calls)
	}
	if !strings.Contains(logText(), "inof-host stopped") {
		t.Fatalf("no clean stop in the log:\n%s", logText())
	}
}

func readCalls(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// waitCall waits until the fake nvme logged the call line.
func waitCall(t *testing.T, dir, line string) {
	t.Helper()
	waitFor(t, func() bool { return slices.Contains(readCalls(t, dir), line) }, "fake nvme call "+line)
}

// waitFor polls cond until it holds; privWait only bounds a hang.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(privWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
