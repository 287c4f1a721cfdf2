package scale

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// gobgpdRefl is Debian's gobgpd (3.10) as the reflector, configured by a
// TOML file like the stock library one, counted through its gRPC API.
type gobgpdRefl struct {
	cmd  *exec.Cmd
	port uint16
	cli  api.GobgpApiClient
	conn *grpc.ClientConn
}

func gobgpdSetup(rtc bool) setup {
	// The new client asks for every zone with one membership each: gobgpd
	// 3.10 crashes on the default (wildcard) membership.
	name := "gobgpd 3.10 RTC per zone"
	if !rtc {
		name = "gobgpd 3.10 no RTC"
	}
	s := setup{name: name, optIn: rtc, sessions: rtc, converge: func(ctx context.Context, tb testing.TB, r refl, p Plan) synced {
		return convergeStock(ctx, tb, r, p, rtc, false)
	}}
	if _, err := exec.LookPath("gobgpd"); err != nil {
		return s // not installed: start stays nil, the setup is skipped
	}
	s.start = func(tb testing.TB, p Plan, withNew bool) refl { return startGobgpd(tb, p, rtc, withNew) }
	return s
}

func gobgpdConfig(port uint16, clients []string, rtc bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[global.config]\n  as = %d\n  router-id = \"127.0.0.1\"\n  port = %d\n  local-address-list = [\"127.0.0.1\"]\n", ASN, port)
	for _, c := range clients {
		fmt.Fprintf(&b, "\n[[neighbors]]\n  [neighbors.config]\n    neighbor-address = %q\n    peer-as = %d\n", c, ASN)
		b.WriteString("  [neighbors.transport.config]\n    passive-mode = true\n")
		b.WriteString("  [neighbors.timers.config]\n    connect-retry = 1\n    hold-time = 9\n    keepalive-interval = 3\n")
		b.WriteString("  [neighbors.route-reflector.config]\n    route-reflector-client = true\n    route-reflector-cluster-id = \"127.0.0.1\"\n")
		fams := []string{"opaque"}
		if rtc {
			fams = append(fams, "rtc")
		}
		for _, f := range fams {
			fmt.Fprintf(&b, "  [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n      afi-safi-name = %q\n", f)
		}
	}
	return b.String()
}

func startGobgpd(tb testing.TB, p Plan, rtc, withNew bool) refl {
	port, apiPort := freePort(tb), freePort(tb)
	conf := filepath.Join(tb.TempDir(), "gobgpd.toml")
	if err := os.WriteFile(conf, []byte(gobgpdConfig(port, clientList(p, withNew), rtc)), 0o644); err != nil {
		tb.Fatal(err)
	}
	apiAddr := fmt.Sprintf("127.0.0.1:%d", apiPort)
	cmd := exec.Command("gobgpd", "-f", conf, "-t", "toml", "-l", "error", "--api-hosts", apiAddr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	conn, err := grpc.NewClient(apiAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		tb.Fatal(err)
	}
	g := &gobgpdRefl{cmd: cmd, port: port, cli: api.NewGobgpApiClient(conn), conn: conn}
	// Up once its API answers and every neighbor is configured.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n := 0
		err := g.listPeer(ctx, &api.ListPeerRequest{}, func(*api.Peer) { n++ })
		cancel()
		if err == nil && n == len(clientList(p, withNew)) {
			return g
		}
		if time.Now().After(deadline) {
			g.stop()
			tb.Fatalf("gobgpd not ready: %d neighbors, %v", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gobgpdRefl) listPeer(ctx context.Context, req *api.ListPeerRequest, fn func(*api.Peer)) error {
	st, err := g.cli.ListPeer(ctx, req)
	if err != nil {
		return err
	}
	for {
		r, err := st.Recv()
		if err != nil {
			if ctx.Err() == nil && err.Error() == "EOF" {
				return nil
			}
			return err
		}
		fn(r.Peer)
	}
}

func (g *gobgpdRefl) addr() netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), g.port)
}

func (g *gobgpdRefl) figures(ctx context.Context, _ bool) (childFigures, error) {
	f := childFigures{Heap: -1}
	var err error
	if f.Count, f.Established, err = stockCount(ctx, g.listPeer); err != nil {
		return f, err
	}
	u, err := ProcUsage(g.cmd.Process.Pid)
	f.RSS, f.PeakRSS, f.CPUns = u.RSS, u.PeakRSS, int64(u.CPU)
	return f, err
}

func (g *gobgpdRefl) stop() {
	g.conn.Close()
	g.cmd.Process.Kill()
	g.cmd.Wait()
}
