package bgp_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"

	api "github.com/osrg/gobgp/v3/api"
	pkt "github.com/osrg/gobgp/v3/pkg/packet/bgp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/netns"
)

// gobgpdClient runs Debian's gobgpd (3.10) as a route-reflector client of
// r, with opaque and RTC families and graceful restart, and returns a gRPC
// client for its API.
func gobgpdClient(t *testing.T, r *bgptest.Node, self string) api.GobgpApiClient {
	t.Helper()
	bin := netns.RequireTool(t, "gobgpd")
	apiPort := bgptest.FreePort(t, bgptest.Addr("127.0.0.1"))
	conf := fmt.Sprintf(`[global.config]
  as = %d
  router-id = %q
  port = -1
[[neighbors]]
  [neighbors.config]
    neighbor-address = %q
    peer-as = %d
  [neighbors.transport.config]
    local-address = %q
    remote-port = %d
  [neighbors.timers.config]
    connect-retry = 1
  [neighbors.graceful-restart.config]
    enabled = true
    restart-time = 120
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "opaque"
    [neighbors.afi-safis.mp-graceful-restart.config]
      enabled = true
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "rtc"
    [neighbors.afi-safis.mp-graceful-restart.config]
      enabled = true
`, bgptest.ASN, self, r.Addr, bgptest.ASN, self, r.Port)
	path := filepath.Join(t.TempDir(), "gobgpd.toml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), "gobgpd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-f", path, "-p", "--pprof-disable", fmt.Sprintf("--api-hosts=127.0.0.1:%d", apiPort))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("gobgpd log:\n%s", b)
		}
	})
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", apiPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewGobgpApiClient(conn)
}

// binaryPath builds an opaque path for gobgpd's API in wire format: its
// 3.10 CLI and typed API cannot carry opaque routes (peers.md).
func binaryPath(key, value []byte, rts ...record.RouteTarget) *api.Path {
	nlri := pkt.NewOpaqueNLRI(key, value)
	nb, _ := nlri.Serialize()
	var attrs [][]byte
	add := func(a pkt.PathAttributeInterface) {
		b, err := a.Serialize()
		if err != nil {
			panic(err)
		}
		attrs = append(attrs, b)
	}
	add(pkt.NewPathAttributeOrigin(0))
	add(pkt.NewPathAttributeMpReachNLRI("0.0.0.0", []pkt.AddrPrefixInterface{nlri}))
	var ecs []pkt.ExtendedCommunityInterface
	for _, rt := range rts {
		ecs = append(ecs, pkt.NewTwoOctetAsSpecificExtended(pkt.EC_SUBTYPE_ROUTE_TARGET, uint16(rt.Global), rt.Local, true))
	}
	if len(ecs) > 0 {
		add(pkt.NewPathAttributeExtendedCommunities(ecs))
	}
	return &api.Path{Family: bgp.FamilyOpaque, NlriBinary: nb, PattrsBinary: attrs}
}

// opaqueKeys lists the keys of the opaque routes in gobgpd's table.
func opaqueKeys(t *testing.T, c api.GobgpApiClient) map[string]bool {
	t.Helper()
	stream, err := c.ListPath(context.Background(), &api.ListPathRequest{TableType: api.TableType_GLOBAL,
		Family: bgp.FamilyOpaque, EnableNlriBinary: true})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for {
		d, err := stream.Recv()
		if err != nil {
			break
		}
		for _, p := range d.GetDestination().GetPaths() {
			if b := p.NlriBinary; len(b) >= 2 && len(b) >= 2+int(binary.BigEndian.Uint16(b)) {
				keys[string(b[2:2+binary.BigEndian.Uint16(b)])] = true
			}
		}
	}
	return keys
}

// TestInteropGobgpd: stock gobgpd as a client of our reflector receives our
// records (after subscribing with an RT membership), and a record it injects
// with a malformed value is counted and ignored by our side while the
// session stays up.
func TestInteropGobgpd(t *testing.T) {
	ctx := context.Background()
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true}})
	a := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{GracefulRestart: bgp.GracefulRestart{Enabled: true}})
	bgptest.Connect(t, r, a, nil)
	const foreign = "127.0.0.5"
	if err := r.AddNeighbor(ctx, bgp.Neighbor{Address: bgptest.Addr(foreign), Passive: true, RRClient: true, NoDefaultRT: true}); err != nil {
		t.Fatal(err)
	}
	g := gobgpdClient(t, r, foreign)
	zone := record.ZoneRT(bgptest.ASN, "prod")
	bgptest.WaitState(t, r, bgptest.Addr(foreign), func(s bgp.SessionState) bool { return s == bgp.StateEstablished })

	// gobgpd subscribes to the zone through its API (RTC membership).
	rtc := bgp.RTCPath(bgptest.ASN, &zone)
	if _, err := g.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: rtc}); err != nil {
		t.Fatal(err)
	}
	rec := bgptest.Device(a.RouterID(), 1)
	if err := a.Publish(ctx, rec, zone); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !opaqueKeys(t, g)[string(rec.Key())] {
		if time.Now().After(deadline) {
			t.Fatal("gobgpd never received our record")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// gobgpd injects a malformed record and then a valid one.
	k, v, _ := record.Encode(bgptest.Device(0x7f000005, 2), 1)
	v[0] = 42 // unknown value version
	if _, err := g.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: binaryPath(k, v, zone)}); err != nil {
		t.Fatal(err)
	}
	good := bgptest.Device(0x7f000005, 3)
	gk, gv, _ := record.Encode(good, 1)
	if _, err := g.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: binaryPath(gk, gv, zone)}); err != nil {
		t.Fatal(err)
	}
	r.View.WaitFor(t, "gobgpd's valid record", func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(gk)]; return ok })
	if r.Stats().Malformed == 0 || r.View.Has(k) {
		t.Fatalf("malformed record: counted %d, held %v", r.Stats().Malformed, r.View.Has(k))
	}
	if !sessionUp(t, &bgptest.Node{GoBGP: r.GoBGP, Addr: r.Addr}, &bgptest.Node{Addr: bgptest.Addr(foreign)}, time.Second) {
		t.Fatal("session with gobgpd went down")
	}
}
