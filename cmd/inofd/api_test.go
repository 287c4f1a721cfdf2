package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/cmdtest"
)

// skipUnderRace skips a test that runs the real GoBGP in the test process:
// GoBGP v3.37 races inside its watcher (fixed upstream only in v4).
func skipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("runs the real GoBGP, which races internally; run without -race")
	}
}

// buildInofctl builds the admin CLI into a temporary directory.
func buildInofctl(t *testing.T) string {
	t.Helper()
	return cmdtest.Build(t, "../inofctl", "inofctl")
}

// shortDir is a temporary directory with a short path (unix socket paths
// are limited to about 100 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "inofd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// inofctl runs the CLI against a socket and returns its stdout, stderr
// and exit code.
func inofctl(t *testing.T, bin, socket string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--server", "unix://" + socket}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("inofctl %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errOut.String(), code
}

// mustInofctl runs the CLI and fails the test unless it exits 0.
func mustInofctl(t *testing.T, bin, socket string, args ...string) string {
	t.Helper()
	out, errOut, code := inofctl(t, bin, socket, args...)
	if code != 0 {
		t.Fatalf("inofctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// waitInofctl repeats a CLI call until its output satisfies ok.
func waitInofctl(t *testing.T, what, bin, socket string, ok func(string) bool, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last string
	for time.Now().Before(deadline) {
		out, errOut, code := inofctl(t, bin, socket, args...)
		if code == 0 && ok(out) {
			return out
		}
		last = fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last answer: %s", what, last)
	return ""
}

// TestReflectorAPIEndToEnd (issue #11 item 4): two real inofd reflectors
// on loopback, peered with each other, and a switch (a real GoBGP speaker
// in this process) that registers a host and a target with the first. The
// real inofctl, over the first reflector's unix socket, sees both devices,
// creates a zone with them and commits it, lists it as JSON and explains
// why the host sees the target; the second reflector receives the zone
// (inofctl on its own socket).
func TestReflectorAPIEndToEnd(t *testing.T) {
	skipUnderRace(t)
	inofd, ctl := buildInofd(t), buildInofctl(t)
	dir := shortDir(t)
	const ra, sw, rb = "127.0.0.1", "127.0.0.2", "127.0.0.3"
	pa, pb := freePort(t), freePort(t)
	sockA, sockB := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	config := func(id string, port int, peer string, peerPort int, sock string, clients string) string {
		cfg := filepath.Join(dir, id+".yaml")
		body := fmt.Sprintf(`asn: 65000
router_id: %[1]s
cluster_id: 127.0.0.254
local_address: %[1]s
state_dir: %[2]s
metrics_listen: ""
listen: {addresses: [%[1]s], port: %[3]d}
bfd: {enabled: false}
api: {socket: %[4]s}
reflectors: [{address: %[5]s, port: %[6]d}]
clients: %[7]s
`, id, filepath.Join(dir, "state-"+id), port, sock, peer, peerPort, clients)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a := startDaemon(t, inofd, nil, "--role", "reflector", "--config", config(ra, pa, rb, pb, sockA, "[{address: "+sw+"}]"))
	b := startDaemon(t, inofd, nil, "--role", "reflector", "--config", config(rb, pb, ra, pa, sockB, "[]"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reflector A:\n%s\nreflector B:\n%s", a.out.String(), b.out.String())
		}
	})

	// The switch: a route-reflector client of A that publishes a host and
	// a target.
	s, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: 65000, RouterID: netip.MustParseAddr(sw), ListenPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := s.AddNeighbor(ctx, bgp.Neighbor{Address: netip.MustParseAddr(ra), Port: uint16(pa),
		LocalAddress: netip.MustParseAddr(sw)}); err != nil {
		t.Fatal(err)
	}
	pub, err := table.NewDevicePublisher(table.DevicePublisherOptions{Speaker: s})
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(time.Now().UnixMilli())
	for _, d := range []inof.Device{
		{Addr: netip.MustParseAddr("10.0.0.1"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP},
		{Addr: netip.MustParseAddr("10.0.1.1"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420},
	} {
		rec := record.Device{Report: inof.Report{Switch: 0x7f000002, Device: d, Status: inof.Status{State: inof.StateActive, Changed: now}, AccessPort: "swp1", Since: now}}
		if err := pub.Publish(ctx, rec, record.ZoneRT(65000, "red")); err != nil {
			t.Fatal(err)
		}
	}

	waitInofctl(t, "both devices at reflector A", ctl, sockA, func(out string) bool {
		var list struct {
			Kind  string `json:"kind"`
			Items []struct {
				Address    string `json:"address"`
				Switch     string `json:"switch"`
				AccessPort string `json:"access_port"`
				Active     bool   `json:"active"`
			} `json:"items"`
		}
		return json.Unmarshal([]byte(out), &list) == nil && list.Kind == "DeviceList" && len(list.Items) == 2 &&
			list.Items[0].Address == "10.0.0.1" && list.Items[1].Address == "10.0.1.1" && list.Items[0].Switch == sw &&
			list.Items[1].AccessPort == "swp1" && list.Items[0].Active && list.Items[1].Active
	}, "device", "list", "-o", "json")

	if st, err := os.Stat(sockA); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("API socket: %v, mode %v", err, st.Mode())
	}
	out := mustInofctl(t, ctl, sockA, "zone", "create", "red", "10.0.0.1", "10.0.1.1", "--yes")
	if !strings.HasPrefix(out, "committed: revision ") || !strings.Contains(out, "1 record(s) written") {
		t.Fatalf("zone create: %q", out)
	}
	if out := mustInofctl(t, ctl, sockA, "zone", "list", "-o", "json"); !cmdtest.HasZone(out, "red", "10.0.0.1", "10.0.1.1") {
		t.Fatalf("zone list at A:\n%s", out)
	}
	if out := mustInofctl(t, ctl, sockA, "device", "why", "10.0.0.1", "10.0.1.1"); out != "10.0.0.1 sees 10.0.1.1: same zone red\n" {
		t.Fatalf("device why: %q", out)
	}
	waitInofctl(t, "the zone at reflector B", ctl, sockB, func(out string) bool {
		return cmdtest.HasZone(out, "red", "10.0.0.1", "10.0.1.1")
	}, "zone", "list", "-o", "json")

	// Errors are refused with exit code 1 and a message.
	if _, errOut, code := inofctl(t, ctl, sockA, "zone", "add", "nosuch", "10.0.0.9", "--yes"); code != 1 || !strings.Contains(errOut, "nosuch") {
		t.Fatalf("unknown zone: exit %d, %q", code, errOut)
	}
	// The feed has the switch's device records and the commit; B's has the
	// merge.
	events := mustInofctl(t, ctl, sockA, "events", "-o", "json")
	for _, want := range []string{`"kind":"record"`, `"kind":"zoning"`, `"kind":"session"`} {
		if !strings.Contains(events, want) {
			t.Errorf("A's events lack %s:\n%s", want, events)
		}
	}
	waitInofctl(t, "the merge on B's feed", ctl, sockB, func(out string) bool {
		return strings.Contains(out, "merged from a peer reflector")
	}, "events", "-o", "json")
	sessions := mustInofctl(t, ctl, sockA, "session", "list")
	for _, want := range []string{sw + "  client", rb + "  reflector"} {
		if !strings.Contains(sessions, want) {
			t.Errorf("session list lacks %q:\n%s", want, sessions)
		}
	}

	// Day two: one device (the switch and port its record names, the host
	// told about it, its events), one session, filtered events.
	out = mustInofctl(t, ctl, sockA, "device", "show", "10.0.1.1")
	for _, want := range []string{"Switch:    " + sw + " port swp1", "Reported by 1 switch(es)", "Zones:     red",
		"10.0.0.1  yes   same zone red", "device joined"} {
		if !strings.Contains(out, want) {
			t.Errorf("device show lacks %q:\n%s", want, out)
		}
	}
	out = mustInofctl(t, ctl, sockA, "session", "show", sw)
	for _, want := range []string{"BGP session with " + sw + " (client)", "State:          established, up for ",
		"Router-id:      " + sw, "Records:        2 received", "BFD:            not configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("session show lacks %q:\n%s", want, out)
		}
	}
	out = mustInofctl(t, ctl, sockA, "events", "--kind", "record", "--subject", "10.0.1.1")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) == 0 || strings.Contains(out, " zoning ") ||
		strings.Contains(out, "10.0.0.1 ") || !strings.Contains(out, " record 10.0.1.1 device joined") {
		t.Errorf("events --kind record --subject 10.0.1.1:\n%s", out)
	}
}

// TestAPIRefusesInsecureTCP: an API TCP listener without TLS and a token is
// an invalid configuration: inofd lists it and exits 1 before serving.
func TestAPIRefusesInsecureTCP(t *testing.T) {
	bin := buildInofd(t)
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	body := fmt.Sprintf("asn: 65000\nrouter_id: 127.0.0.1\nstate_dir: %s\nbfd: {enabled: false}\napi: {listen: 127.0.0.1:%d}\n",
		t.TempDir(), freePort(t))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, nil, "--role", "reflector", "--config", cfg, "--api-socket", filepath.Join(shortDir(t), "a.sock"))
	if code := d.wait(t); code != daemon.ExitConfig || !strings.Contains(d.out.String(), "api.listen: needs api.tls_cert, api.tls_key and a way to tell callers apart") {
		t.Fatalf("exit %d, output:\n%s", code, d.out.String())
	}
}
