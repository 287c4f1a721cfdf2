package bgp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// childEnv carries a childConfig: the test binary then runs one reflector
// speaker until it is killed (see startChildReflector).
const childEnv = "INOF_BGP_CHILD_REFLECTOR"

// bfdChildEnv carries "local,peer": the test binary then runs one BFD
// session (3 × 50 ms) until it is killed, so a test can make a BFD peer
// fall silent the way a crashed process does, without an AdminDown.
const bfdChildEnv = "INOF_BGP_CHILD_BFD"

// clientChildEnv carries a clientChildConfig: the test binary then runs one
// client speaker with BFD, publishes records and waits to be killed.
const clientChildEnv = "INOF_BGP_CHILD_CLIENT"

type clientChildConfig struct {
	RouterID      string
	Reflector     string
	ReflectorPort uint16
	RestartTime   time.Duration
	Zone          string
	Records       int
}

type childConfig struct {
	RouterID    string
	Port        uint16
	Clients     []string
	RestartTime time.Duration
	Restarting  bool
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		if err := runChildReflector(raw); err != nil {
			fmt.Fprintln(os.Stderr, "child reflector:", err)
			os.Exit(2)
		}
		return
	}
	if raw := os.Getenv(clientChildEnv); raw != "" {
		if err := runChildClient(raw); err != nil {
			fmt.Fprintln(os.Stderr, "child client:", err)
			os.Exit(2)
		}
		return
	}
	if raw := os.Getenv(bfdChildEnv); raw != "" {
		if err := runChildBFD(raw); err != nil {
			fmt.Fprintln(os.Stderr, "child BFD:", err)
			os.Exit(2)
		}
		return
	}
	if os.Getenv("INOF_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

func runChildReflector(raw string) error {
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	id := netip.MustParseAddr(c.RouterID)
	g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleReflector, ASN: bgptest.ASN, RouterID: id, ListenAddresses: []netip.Addr{id},
		ListenPort: int32(c.Port), GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: c.RestartTime, Restarting: c.Restarting},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := g.Start(ctx); err != nil {
		return err
	}
	for _, cl := range c.Clients {
		if err := g.AddNeighbor(ctx, bgp.Neighbor{Address: netip.MustParseAddr(cl), Passive: true, RRClient: true}); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	select {}
}

func runChildClient(raw string) error {
	var c clientChildConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return err
	}
	id, refl := netip.MustParseAddr(c.RouterID), netip.MustParseAddr(c.Reflector)
	m := bfd.NewManager(bfd.ManagerOptions{})
	g, err := bgp.NewGoBGP(bgp.Options{Role: bgp.RoleClient, ASN: bgptest.ASN, RouterID: id, ListenPort: -1, BFD: m,
		GracefulRestart: bgp.GracefulRestart{Enabled: true, RestartTime: c.RestartTime, Notification: true},
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := g.Start(ctx); err != nil {
		return err
	}
	for i := range c.Records {
		if err := g.Publish(ctx, bgptest.Device(bgptest.RouterID(id), i), record.ZoneRT(bgptest.ASN, c.Zone)); err != nil {
			return err
		}
	}
	err = g.AddNeighbor(ctx, bgp.Neighbor{Address: refl, Port: c.ReflectorPort, LocalAddress: id,
		BFD: &bgp.NeighborBFD{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3}})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	select {}
}

func runChildBFD(raw string) error {
	local, peer, ok := strings.Cut(raw, ",")
	if !ok {
		return fmt.Errorf("want local,peer: %q", raw)
	}
	m := bfd.NewManager(bfd.ManagerOptions{})
	_, err := m.Add(bfd.Config{Key: bfd.SessionKey{Local: netip.MustParseAddr(local), Peer: netip.MustParseAddr(peer)},
		DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 50 * time.Millisecond, DetectMult: 3})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	select {}
}
