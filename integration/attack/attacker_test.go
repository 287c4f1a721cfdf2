//go:build privileged

package attack

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/internal/netns"
)

// The attacker is a stock GoBGP speaker (GoBGP's own server, none of our
// code) in a child process, run inside a namespace of the fabric, that
// announces whatever the test tells it: any key and value, any route
// targets, any next hop, an ORIGINATOR_ID of its choosing. The test drives
// it over stdin with one JSON command per line; it answers "ok" or
// "error: …".

// attackerEnv makes the test binary the attacker (see TestMain).
const attackerEnv = "INOF_ATTACKER"

// attackerConf is the attacker's configuration, in attackerEnv.
type attackerConf struct {
	RouterID   string   `json:"router_id"`
	Local      string   `json:"local"`
	Reflectors []string `json:"reflectors"`
	Password   string   `json:"password"`
	ASN        uint32   `json:"asn"`
	// TTLSecurity sends TTL 255 (GTSM), as the fabric's switches do.
	TTLSecurity bool `json:"ttl_security"`
}

// command is one line the test sends.
type command struct {
	Op         string      `json:"op"` // publish, withdraw
	Key        string      `json:"key,omitempty"`
	Value      string      `json:"value,omitempty"`
	RTs        [][2]uint32 `json:"rts,omitempty"`
	NextHop    string      `json:"next_hop,omitempty"`
	Originator string      `json:"originator,omitempty"`
}

// runAttacker is the child's main: a GoBGP speaker peering with the
// reflectors (which it configures as its route-reflector clients, so that
// GoBGP keeps an ORIGINATOR_ID it is given), then the command loop.
func runAttacker(confJSON string) {
	var c attackerConf
	if err := json.Unmarshal([]byte(confJSON), &c); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	s := server.NewBgpServer(server.LoggerOption(quiet{}))
	go s.Serve()
	ctx := context.Background()
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: c.ASN, RouterId: c.RouterID, ListenPort: -1}}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	families := []*api.Family{{Afi: api.Family_AFI_OPAQUE, Safi: api.Family_SAFI_KEY_VALUE},
		{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_ROUTE_TARGET_CONSTRAINTS}}
	for _, r := range c.Reflectors {
		p := &api.Peer{Conf: &api.PeerConf{NeighborAddress: r, PeerAsn: c.ASN, AuthPassword: c.Password},
			Transport:      &api.Transport{LocalAddress: c.Local},
			Timers:         &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, HoldTime: 9, KeepaliveInterval: 3}},
			RouteReflector: &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: c.RouterID}}
		if c.TTLSecurity {
			p.TtlSecurity = &api.TtlSecurity{Enabled: true, TtlMin: 255}
		}
		for _, f := range families {
			p.AfiSafis = append(p.AfiSafis, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f, Enabled: true}})
		}
		if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: p}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var cmd command
		err := json.Unmarshal(in.Bytes(), &cmd)
		if err == nil {
			err = attackerDo(ctx, s, cmd)
		}
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println("ok")
	}
	os.Exit(0)
}

func attackerDo(ctx context.Context, s *server.BgpServer, c command) error {
	family := &api.Family{Afi: api.Family_AFI_OPAQUE, Safi: api.Family_SAFI_KEY_VALUE}
	key, err := hex.DecodeString(c.Key)
	if err != nil {
		return err
	}
	value, err := hex.DecodeString(c.Value)
	if err != nil {
		return err
	}
	nlri, err := anypb.New(&api.OpaqueNLRI{Key: key, Value: value})
	if err != nil {
		return err
	}
	nh := c.NextHop
	if nh == "" {
		nh = "0.0.0.0"
	}
	var attrs []*anypb.Any
	origin, _ := anypb.New(&api.OriginAttribute{Origin: 0})
	mp, _ := anypb.New(&api.MpReachNLRIAttribute{Family: family, NextHops: []string{nh}, Nlris: []*anypb.Any{nlri}})
	attrs = append(attrs, origin, mp)
	if len(c.RTs) > 0 {
		var comms []*anypb.Any
		for _, rt := range c.RTs {
			x, _ := anypb.New(&api.TwoOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt[0], LocalAdmin: rt[1]})
			comms = append(comms, x)
		}
		ext, _ := anypb.New(&api.ExtendedCommunitiesAttribute{Communities: comms})
		attrs = append(attrs, ext)
	}
	if c.Originator != "" {
		o, _ := anypb.New(&api.OriginatorIdAttribute{Id: c.Originator})
		attrs = append(attrs, o)
	}
	path := &api.Path{Family: family, Nlri: nlri, Pattrs: attrs}
	switch c.Op {
	case "publish":
		_, err = s.AddPath(ctx, &api.AddPathRequest{Path: path})
	case "withdraw":
		err = s.DeletePath(ctx, &api.DeletePathRequest{Path: path})
	default:
		err = fmt.Errorf("unknown op %q", c.Op)
	}
	return err
}

// attacker is the test's handle on the child.
type attacker struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startAttacker runs the attacker inside ns.
func startAttacker(t *testing.T, ns *netns.NS, c attackerConf) *attacker {
	t.Helper()
	conf, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := ns.Command(os.Args[0])
	cmd.Env = append(os.Environ(), attackerEnv+"="+string(conf))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &attacker{t: t, cmd: cmd, in: in, out: bufio.NewScanner(outp)}
	t.Cleanup(a.stop)
	if line := a.line(); line != "ready" {
		t.Fatalf("attacker: %s", line)
	}
	return a
}

// stop kills the attacker: its sessions end.
func (a *attacker) stop() {
	a.in.Close()
	a.cmd.Process.Kill()
	a.cmd.Wait()
}

func (a *attacker) line() string {
	a.t.Helper()
	if !a.out.Scan() {
		a.t.Fatalf("attacker ended: %v", a.out.Err())
	}
	return a.out.Text()
}

// do sends one command and waits for its answer.
func (a *attacker) do(c command) {
	a.t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := fmt.Fprintf(a.in, "%s\n", b); err != nil {
		a.t.Fatal(err)
	}
	if line := a.line(); line != "ok" {
		a.t.Fatalf("attacker %s: %s", c.Op, line)
	}
}

// publish announces r with the route targets (and next hop and
// ORIGINATOR_ID, if set) as the attacker's own path.
func (a *attacker) publish(r record.Record, nextHop, originator string, rts ...record.RouteTarget) {
	a.t.Helper()
	key, value, err := record.Encode(r, len(rts))
	if err != nil {
		a.t.Fatal(err)
	}
	a.publishRaw(key, value, nextHop, originator, rts...)
}

// publishRaw publishes a record's key and value as they are: a value our
// encoder refuses to write, as an older release or a foreign speaker would
// send it.
func (a *attacker) publishRaw(key, value []byte, nextHop, originator string, rts ...record.RouteTarget) {
	a.t.Helper()
	c := command{Op: "publish", Key: hex.EncodeToString(key), Value: hex.EncodeToString(value), NextHop: nextHop,
		Originator: originator}
	for _, rt := range rts {
		c.RTs = append(c.RTs, [2]uint32{rt.Global, rt.Local})
	}
	a.do(c)
}

// withdraw takes back the attacker's path for the key of r.
func (a *attacker) withdraw(r record.Record) {
	a.t.Helper()
	key, value, err := record.Encode(r, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	a.do(command{Op: "withdraw", Key: hex.EncodeToString(key), Value: hex.EncodeToString(value)})
}

// quiet is a GoBGP logger that keeps errors only.
type quiet struct{}

func (quiet) Panic(msg string, f gobgplog.Fields) { panic(msg) }
func (quiet) Fatal(msg string, f gobgplog.Fields) {
	fmt.Fprintln(os.Stderr, "attacker gobgp fatal:", msg, f)
	os.Exit(1)
}
func (quiet) Error(msg string, f gobgplog.Fields) {
	if !strings.Contains(msg, "connect") {
		fmt.Fprintln(os.Stderr, "attacker gobgp:", msg, f)
	}
}
func (quiet) Warn(string, gobgplog.Fields)  {}
func (quiet) Info(string, gobgplog.Fields)  {}
func (quiet) Debug(string, gobgplog.Fields) {}
func (quiet) SetLevel(gobgplog.LogLevel)    {}
func (quiet) GetLevel() gobgplog.LogLevel   { return gobgplog.ErrorLevel }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: timed out (last error %v)", what, last)
}
