//go:build privileged

package attack

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/discovery"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/internal/testpki"
	"github.com/openinof/inof/l2proto"
)

const (
	consolePort   = 8443
	discoveryPort = 8009
	arrayNQN      = "nqn.2014-08.org.example:array1"
	hostNQN       = "nqn.2014-08.org.nvmexpress:uuid:0a0a0a0a-0000-4000-8000-000000000001"
	// floodConns idle connections are opened to the console from
	// floodSources addresses.
	floodConns   = 3000
	floodSources = 20
)

// hostileNQNs are NQNs a device registers to blind admins (not UTF-8),
// to add options to every host's nvme connect, and to rewrite an admin's
// terminal.
var hostileNQNs = []string{
	"nqn.2014-08.org.example:t\xff\xfe",
	"nqn.2014-08.org.example:t,nr_io_queues=1,queue_size=2",
	"nqn.2014-08.org.example:\x1b[2J\x1b]0;owned\x07",
}

// TestPrivHostileDevices: what a device on an access port, or anyone who
// can reach a listening port without credentials, tried against a real
// reflector and switch (docs/security.md, "Devices" and "Listeners"):
// registrations with hostile NQNs, discovery from the management side and
// hostile text over discovery, 3,000 idle connections to the console and
// requests with 1 MB paths. Each is refused and counted; the admins' tools
// keep working; no host is told anything until a real link cut.
func TestPrivHostileDevices(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "attack-ca")
	cert, key := ca.Server("inofd", net.ParseIP("10.0.0.1"))
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("tokens:\n  - {name: vera, role: viewer, sha256: %s}\n",
		apiclient.HashToken("viewer-token"))), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := topo.Spec{
		Reflectors: []string{"rr1"},
		Switches:   []string{"leaf1"},
		Devices: []topo.Device{
			{Name: "t1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "h1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}},
			{Name: "x1", Probe: true, NICs: []topo.NIC{{Switch: "leaf1"}}}, // the hostile device
		},
		ReflectorConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = relaxedBFD()
			a, _ := cfg["api"].(map[string]any)
			if a == nil {
				a = map[string]any{}
			}
			a["console_listen"] = fmt.Sprintf("10.0.0.1:%d", consolePort)
			a["tls_cert"], a["tls_key"], a["tokens_file"] = cert, key, tokens
			cfg["api"] = a
		},
		SwitchConfig: func(_ string, cfg map[string]any) {
			cfg["bfd"] = relaxedBFD()
			cfg["discovery"] = map[string]any{"enabled": true, "listen": fmt.Sprintf(":%d", discoveryPort), "mdns": false}
		},
	}
	f := topo.Start(t, spec)
	rr1, leaf1 := f.Node("rr1"), f.Node("leaf1")
	expectClients(t, rr1, 1)
	t1, h1, x1 := f.Node("t1").Probe(0), f.Node("h1").Probe(0), f.Node("x1").Probe(0)
	if err := t1.Register(inof.RoleTarget, inof.ProtocolTCP, 4420, arrayNQN); err != nil {
		t.Fatal(err)
	}
	if err := h1.Register(inof.RoleHost, inof.ProtocolTCP, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := h1.Query(); err != nil {
		t.Fatal(err)
	}
	if _, err := h1.WaitNotification(wait, func(n l2proto.Notification) bool {
		return n.Target == t1.Addr() && n.State == inof.StateActive
	}); err != nil {
		t.Fatal(err)
	}
	h1.Drain()

	// Items 1, 4, 7: x1 registers as a target with each hostile NQN. The
	// switch refuses each frame (drop reason "text"); nothing is stored,
	// published or told; inofctl keeps answering everywhere.
	for _, nqn := range hostileNQNs {
		b, err := hostileRegistration(x1, nqn)
		if err != nil {
			t.Fatal(err)
		}
		if err := x1.SendRaw(b); err != nil {
			t.Fatal(err)
		}
	}
	counted(t, leaf1, "inof_switch_frames_dropped_total", "text", float64(len(hostileNQNs)))
	for _, n := range []*topo.Node{rr1, leaf1} {
		for _, args := range [][]string{{"device", "list"}, {"device", "list", "-o", "json"}} {
			out, err := n.Inofctl(args...)
			if err != nil {
				t.Fatalf("%s: %v", n.Name, err)
			}
			if !strings.Contains(out, t1.Addr().String()) || strings.Contains(out, x1.Addr().String()) {
				t.Errorf("%s inofctl %s: want t1 and not x1:\n%s", n.Name, strings.Join(args, " "), out)
			}
		}
	}

	// Item 6: discovery from the management side. h1's access port joins
	// a bridge on leaf1 whose address is in h1's subnet (as an SVI's
	// would be); rr1 (the management side) reaches it, and the switch's
	// own control address, by routing through leaf1: both connections
	// are closed unserved. h1 itself is served (through the bridge its
	// access port is a member of), but refused a host NQN with connect
	// options and a DIM with a terminal escape in its name.
	hl := f.Node("h1").Links[0]
	gw := hl.Prefix.Masked().Addr().Next()
	sw := hl.Switch.NS
	sw.MustIP("link", "add", "acc0", "type", "bridge")
	sw.MustIP("link", "set", "acc0", "up")
	sw.MustIP("link", "set", hl.Port, "master", "acc0")
	sw.Addr("acc0", netip.PrefixFrom(gw, hl.Prefix.Bits()).String())
	rr1.NS.MustIP("route", "add", hl.Prefix.Masked().String(), "via", leaf1.Addr.String())
	ok, err := dialDiscovery(h1NS(f), gw, discovery.ClientOptions{HostNQN: hostNQN, KATO: 30 * time.Second})
	if err != nil {
		t.Fatalf("a host on the access port: %v", err)
	}
	for _, to := range []netip.Addr{gw, leaf1.Addr} {
		if c, err := dialDiscovery(rr1.NS, to, discovery.ClientOptions{HostNQN: hostNQN, KATO: 30 * time.Second}); err == nil {
			c.DIM(discovery.TaskRegister, discovery.Registration{HostNQN: hostNQN}, "")
			c.Close()
			t.Errorf("discovery at %s served the management side", to)
		}
	}
	counted(t, leaf1, "inof_discovery_connections_refused_total", "interface", 2)
	if err := ok.DIM(discovery.TaskRegister, discovery.Registration{HostNQN: hostNQN, Name: "h1\x1b]0;owned\x07"}, ""); err == nil {
		t.Error("a DIM with a terminal escape in its name was taken")
	}
	if _, err := leaf1.WaitMetric(wait, func(v float64) bool { return v >= 1 }, "inof_discovery_registrations_total",
		"outcome", "refused"); err != nil {
		t.Fatal(err)
	}
	ok.Close()
	if c, err := dialDiscovery(h1NS(f), gw, discovery.ClientOptions{HostNQN: hostNQN + ",nr_io_queues=1"}); err == nil {
		c.Close()
		t.Error("a Connect with option separators in its host NQN was served")
	}
	if out, err := leaf1.Inofctl("device", "list"); err != nil || strings.Contains(out, "nvme-dim") {
		t.Errorf("leaf1 after the discovery attacks: %v\n%s", err, out)
	}

	// Item 5: 20 requests with 1 MB paths and 20 with 32 KB paths, no
	// credentials: refused (431 past the header limit, 401 otherwise),
	// logged at most a few lines, truncated.
	flood := floodNamespace(t, f)
	logBefore := rr1.LogSize()
	codes := map[int]int{}
	for i := range 40 {
		size := 1 << 20
		if i%2 == 1 {
			size = 32 << 10
		}
		code, err := consoleGet(flood, "10.0.0.150", "/ui/"+strings.Repeat("a", size))
		switch {
		case err != nil && size == 1<<20:
			code = -1 // the server answered 431 and closed while the client still wrote
		case err != nil:
			t.Fatalf("request %d: %v", i, err)
		}
		codes[code]++
	}
	if codes[http.StatusRequestHeaderFieldsTooLarge]+codes[-1] != 20 || codes[http.StatusUnauthorized] != 20 {
		t.Errorf("answers %v, want 20 × 431 (or closed while sending) and 20 × 401", codes)
	}
	grown := rr1.LogSize() - logBefore
	t.Logf("40 refused console requests (20 × 1 MiB path, 20 × 32 KiB) added %d bytes of log", grown)
	if grown > 16<<10 {
		t.Errorf("refused requests added %d bytes of log", grown)
	}

	// Item 2: 3,000 idle connections to the console from 20 addresses.
	// Each address holds at most its share, the listener its total; the
	// unix-socket API, /healthz and the other listeners keep answering.
	pid := daemonPID(t, rr1)
	rssBefore, fdsBefore := procFigures(t, pid)
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	err = flood.Do(func() error {
		for i := range floodConns {
			src := netip.AddrFrom4([4]byte{10, 0, 0, byte(150 + i%floodSources)})
			d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0)), Timeout: wait}
			c, err := d.Dial("tcp", fmt.Sprintf("10.0.0.1:%d", consolePort))
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	held, err := rr1.WaitMetric(wait, func(v float64) bool { return v > 0 }, "inof_listener_connections", "listener", "console")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0.0
	for _, r := range []string{"total", "source"} {
		v, err := rr1.Metric("inof_listener_refused_total", "listener", "console", "reason", r)
		if err != nil {
			t.Fatal(err)
		}
		refused += v
	}
	if held > 256 || refused < floodConns-256 {
		t.Errorf("console holds %v connections, refused %v, of %d", held, refused, floodConns)
	}
	if code, body, err := rr1.HTTPGet("/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz during the flood: %d %v %s", code, err, body)
	}
	if out, err := rr1.Inofctl("device", "list"); err != nil || !strings.Contains(out, t1.Addr().String()) {
		t.Errorf("inofctl over the unix socket during the flood: %v\n%s", err, out)
	}
	rssAfter, fdsAfter := procFigures(t, pid)
	t.Logf("rr1 inofd with %d connections opened to the console (%v held, %v refused): RSS %d → %d KiB, open files %d → %d",
		floodConns, held, refused, rssBefore, rssAfter, fdsBefore, fdsAfter)
	if fdsAfter-fdsBefore > 300 {
		t.Errorf("the flood took %d file descriptors", fdsAfter-fdsBefore)
	}

	// Nothing any host is told until a real change: t1's link goes down.
	for _, n := range topo.Notices(h1.Drain()) {
		if n.N.Host == h1.Addr() {
			t.Errorf("h1 heard during the attacks: %+v", n)
		}
	}
	t1.Link.Cut(t)
	if _, err := h1.WaitNotification(wait, func(n l2proto.Notification) bool {
		return n.Target == t1.Addr() && n.State == inof.StateInactive && n.Reason == inof.ReasonLinkDown
	}); err != nil {
		t.Fatal(err)
	}
}

// hostileRegistration is x's registration as a target with nqn, built as a
// device that does not use our encoders would (they refuse such NQNs).
func hostileRegistration(x *topo.Probe, nqn string) ([]byte, error) {
	ph := []byte(strings.Repeat("Z", len(nqn)))
	b, err := l2proto.LLDPFrame(x.MAC(), &l2proto.LLDPDU{ChassisSubtype: l2proto.ChassisIDMAC, ChassisID: x.MAC(),
		PortSubtype: l2proto.PortIDIfaceName, PortID: []byte("x1"), TTL: l2proto.RegistrationTTL,
		Registration: &l2proto.Registration{Version: l2proto.RegistrationVer, Flags: l2proto.FlagSubscribe, Addr: x.Addr(),
			Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, ProtoVer: l2proto.ProtocolVersion1, Port: 4420, NQN: string(ph)}})
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndex(b, ph)
	if i < 0 {
		return nil, errors.New("placeholder NQN not in the frame")
	}
	copy(b[i:], nqn)
	return b, nil
}

func h1NS(f *topo.Fabric) *netns.NS { return f.Node("h1").NS }

// dialDiscovery opens a discovery connection from ns and starts it
// (Connect, Identify); an error if the controller closes it.
func dialDiscovery(ns *netns.NS, to netip.Addr, o discovery.ClientOptions) (*discovery.Client, error) {
	var c *discovery.Client
	err := ns.Do(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		var err error
		c, err = discovery.Dial(ctx, netip.AddrPortFrom(to, discoveryPort).String(), o)
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.Start([16]byte{1}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// floodNamespace is a namespace on the fabric bridge with floodSources
// addresses from 10.0.0.150.
func floodNamespace(t *testing.T, f *topo.Fabric) *netns.NS {
	t.Helper()
	ns := netns.New(t, "flood")
	netns.Veth(t, f.Bridge(), "fl", ns, "fab0")
	f.Bridge().MustIP("link", "set", "fl", "master", "br0")
	for i := range floodSources {
		ns.Addr("fab0", fmt.Sprintf("10.0.0.%d/24", 150+i))
	}
	return ns
}

// consoleGet sends one GET without credentials to rr1's console from src
// (in ns) and returns the status code.
func consoleGet(ns *netns.NS, src, path string) (int, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: wait}
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = ns.Do(func() error {
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	tr := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test's own server
		DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: wait}).Get(fmt.Sprintf("https://10.0.0.1:%d%s", consolePort, path))
	if err != nil {
		return 0, errors.New(inof.Truncate(err.Error(), 200))
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// daemonPID finds the inofd process running n's configuration.
func daemonPID(t *testing.T, n *topo.Node) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(n.ConfigPath())) && bytes.Contains(cmd, []byte("inofd")) {
			return pid
		}
	}
	t.Fatalf("no inofd process for %s", n.Name)
	return 0
}

// procFigures returns a process's resident memory (KiB) and open files.
func procFigures(t *testing.T, pid int) (rssKiB, fds int) {
	t.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return rssKiB, len(ents)
}
