//go:build privileged

package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/internal/packaging"
	"github.com/openinof/inof/l2proto"
)

// switchDocker starts a Docker daemon inside the namespace sw, as a SONiC
// switch runs its own: a container on its host network is then in sw and
// sees the switch's front-panel ports. Only the network namespace is
// entered (nsenter, not ip netns exec, whose fresh /sys would hide the
// cgroups); data, runtime state, socket and containerd namespace are the
// test's own, so another Docker on the machine is not touched. It returns
// the DOCKER_HOST of the daemon, stopped when the test ends.
func switchDocker(t *testing.T, sw *netns.NS) string {
	t.Helper()
	requireTool(t, "dockerd", "docker.io")
	requireTool(t, "nsenter", "util-linux")
	dir, err := os.MkdirTemp("", "inof-sonic-") // short: unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("inof-sonic-%d", os.Getpid())
	host := "unix://" + filepath.Join(dir, "docker.sock")
	cmd := exec.Command("nsenter", "--net=/run/netns/"+sw.Name, "dockerd",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "-H", host,
		"--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
		"--containerd-namespace", ns, "--containerd-plugins-namespace", ns+"-plugins")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("the switch's dockerd (pid %d) did not stop within 30 s of SIGTERM: killed", cmd.Process.Pid)
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			t.Logf("the switch's dockerd log:\n%s", tail(b))
		}
		// dockerd leaves its bind mount of the namespace behind.
		if err := unix.Unmount(filepath.Join(dir, "exec", "netns", "default"), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) &&
			!errors.Is(err, unix.ENOENT) {
			t.Errorf("unmount the switch's dockerd namespace file: %v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove the switch's dockerd files: %v", err)
		}
	})
	if err := topo.Poll(60*time.Second, func() (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("dockerd exited: %v", err)
		default:
		}
		c := exec.Command("docker", "info")
		c.Env = append(os.Environ(), "DOCKER_HOST="+host)
		out, err := c.CombinedOutput()
		return err == nil, fmt.Errorf("docker info: %v: %s", err, out)
	}); err != nil {
		t.Fatal(err)
	}
	return host
}

// TestPrivSONiCImage builds the SONiC application extension (make
// sonic-image) and runs it as SONiC would: a Docker daemon in the switch's
// namespace, the container on its host network, privileged and with the
// volumes its manifest label declares (the label passes the schema's
// rules; on a machine whose capability bounding set is not full, runc
// cannot run --privileged and the agent's capabilities stand in), the switch's configuration directory mounted on /etc/inof and
// the image's default command reading the agent's configuration from it. A
// device on a veth access port (Ethernet0, a SONiC port name) registers
// over LLDP: the agent logs it, counts it in inof_switch_registrations and
// lists it through the image's inofctl; docker stop ends it cleanly.
func TestPrivSONiCImage(t *testing.T) {
	requireRoot(t)
	requireTool(t, "docker", "docker.io")
	sw := netns.New(t, "sonic")
	dev := netns.New(t, "sonicdev")
	netns.Veth(t, sw, "Ethernet0", dev, "eth0")
	t.Setenv("DOCKER_HOST", switchDocker(t, sw))

	tag := fmt.Sprintf("inof-test/inofd-sonic:%d", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := packaging.BuildImage(ctx, packaging.ImageOptions{Tag: tag, Root: "../..", SONiC: true}); err != nil {
		t.Fatal(err)
	}
	docker := func(args ...string) (string, error) {
		out, err := exec.Command("docker", args...).CombinedOutput()
		return string(out), err
	}
	label, err := docker("image", "inspect", "-f", `{{index .Config.Labels "`+packaging.SONiCManifestLabel+`"}}`, tag)
	if err != nil {
		t.Fatalf("docker image inspect: %v %s", err, label)
	}
	if err := packaging.ValidateSONiCManifest([]byte(label)); err != nil {
		t.Fatalf("%v\n%s", err, label)
	}
	var m packaging.SONiCManifest
	if err := json.Unmarshal([]byte(label), &m); err != nil {
		t.Fatal(err)
	}

	// The switch's file system: each volume's source under root.
	root := t.TempDir()
	cfg := filepath.Join(root, packaging.SONiCConfigDir, "inofd-switch.yaml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("router_id: 10.0.0.11\nasn: 65000\nreflectors: []\naccess_ports: [Ethernet0]\n"+
		"state_dir: "+packaging.SONiCStateDir+"\napi:\n  socket: /run/inofd/api.sock\nmetrics_listen: 127.0.0.1:9466\n"+
		"log:\n  event_lines: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As sonic-package-manager's container script creates it: the host
	// network, the manifest's privileges, volumes and environment.
	name := fmt.Sprintf("%s-%d", m.Service.Name, os.Getpid())
	args := []string{"run", "-d", "--name", name, "--net=host"}
	if m.Container.Privileged {
		if full, why := allCapabilities(t); full {
			args = append(args, "--privileged")
		} else {
			// runc cannot grant a capability this machine lacks: the
			// ones the agent uses instead, the rest as SONiC runs it.
			t.Logf("not --privileged (%s): --cap-add NET_RAW, NET_ADMIN, NET_BIND_SERVICE instead", why)
			args = append(args, "--cap-add", "NET_RAW", "--cap-add", "NET_ADMIN", "--cap-add", "NET_BIND_SERVICE")
		}
	}
	for _, v := range m.Container.Volumes {
		src, rest, _ := strings.Cut(v, ":")
		if err := os.MkdirAll(filepath.Join(root, src), 0o755); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-v", filepath.Join(root, src)+":"+rest)
	}
	for k, v := range m.Container.Environment {
		args = append(args, "-e", k+"="+v)
	}
	if out, err := docker(append(args, tag)...); err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	logs := func() string { out, _ := docker("logs", name); return out }
	if err := topo.Poll(60*time.Second, func() (bool, error) {
		out, err := docker("exec", name, "inofctl", "version")
		return err == nil && strings.Contains(out, "role switch"), fmt.Errorf("inofctl version: %v: %s", err, out)
	}); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logs())
	}

	// A target on Ethernet0 registers, as nvme-snsd does.
	var pl *l2proto.PacketLink
	if err := dev.Do(func() (err error) { pl, err = l2proto.ListenPacket("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	addr := netip.MustParseAddr("10.100.0.5")
	nqn := "nqn.2014-08.org.example:sonic-target"
	frame, err := l2proto.LLDPFrame(pl.HardwareAddr(), &l2proto.LLDPDU{
		ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: pl.HardwareAddr(),
		PortSubtype: l2proto.PortIDIfaceName, PortID: []byte("eth0"), TTL: l2proto.RegistrationTTL,
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Flags: l2proto.FlagSubscribe, Addr: addr,
			Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, ProtoVer: l2proto.ProtocolVersion1, Port: 4420, NQN: nqn},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Poll(30*time.Second, func() (bool, error) {
		if err := pl.WriteFrame(frame); err != nil { // again until seen: the port may come up after the first
			return false, err
		}
		out, err := docker("exec", name, "inofctl", "device", "list", "-o", "json")
		return err == nil && strings.Contains(out, addr.String()) && strings.Contains(out, nqn),
			fmt.Errorf("inofctl device list: %v: %s", err, out)
	}); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logs())
	}
	if l := logs(); !strings.Contains(l, `"msg":"device registered","port":"Ethernet0"`) || !strings.Contains(l, addr.String()) {
		t.Fatalf("no line 'device registered' on Ethernet0 for %s:\n%s", addr, l)
	}
	if got := switchMetric(t, sw, "inof_switch_registrations"); got != "1" {
		t.Fatalf("inof_switch_registrations %q, want 1", got)
	}

	if out, err := docker("stop", "-t", "30", name); err != nil {
		t.Fatalf("docker stop: %v %s", err, out)
	}
	code, _ := docker("inspect", "-f", "{{.State.ExitCode}}", name)
	if l := logs(); strings.TrimSpace(code) != "0" || strings.Contains(l, `"level":"ERROR"`) {
		t.Fatalf("after docker stop: exit %s, logs:\n%s", code, l)
	}
}

// allCapabilities says whether this process's bounding set holds every
// capability of the kernel, which --privileged asks runc for; else why
// not.
func allCapabilities(t *testing.T) (bool, string) {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	var n uint
	if _, err := fmt.Sscan(string(last), &n); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			var bnd uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(hex), "%x", &bnd); err != nil {
				t.Fatal(err)
			}
			want := uint64(1)<<(n+1) - 1
			return bnd&want == want, fmt.Sprintf("bounding set %#x lacks %#x", bnd, want&^bnd)
		}
	}
	t.Fatal("no CapBnd in /proc/self/status")
	return false, ""
}

// switchMetric reads one unlabelled series from the agent's /metrics on
// the switch's loopback (in sw).
func switchMetric(t *testing.T, sw *netns.NS, name string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (conn net.Conn, err error) {
			err = sw.Do(func() error { conn, err = (&net.Dialer{}).DialContext(ctx, network, a); return err })
			return conn, err
		}}}
	resp, err := c.Get("http://127.0.0.1:9466/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s (%v)", name, sc.Err())
	return ""
}
