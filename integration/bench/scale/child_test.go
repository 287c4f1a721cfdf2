package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/protobuf/types/known/anypb"

	inofapi "github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/reflector"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/zones"
)

// The child process: the test binary re-executed with childEnv set runs one
// reflector and serves its figures over HTTP on loopback until killed.
const (
	childEnv = "INOF_SCALE_CHILD" // "ours" or "stock"
	argsEnv  = "INOF_SCALE_ARGS"  // childArgs as JSON
)

// childArgs configure a child reflector.
type childArgs struct {
	Port     int
	Clients  []string
	Plan     Plan
	StateDir string
	RTC      bool // stock only: negotiate RT-constraint
}

// childFigures is what a child reports.
type childFigures struct {
	// Count is what the reflector accepted from all neighbors: devices
	// (ours, whatever the record format), opaque records (stock).
	Count       int
	Established int   // client sessions established
	Heap        int64 // Go heap in use after a GC
	RSS         int64
	PeakRSS     int64
	CPUns       int64
}

func runChild(kind string) {
	var a childArgs
	if err := json.Unmarshal([]byte(os.Getenv(argsEnv)), &a); err != nil {
		fail(fmt.Errorf("child args: %w", err))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var count func(context.Context) (int, int, error)
	var err error
	switch kind {
	case "ours":
		// As inofd runs it: with the collector's headroom.
		defer daemon.StartRuntime(daemon.DefaultRuntimeOptions(), log)()
		count, err = startOurs(a, log)
	case "stock":
		count, err = startStock(a)
	default:
		err = fmt.Errorf("unknown child %q", kind)
	}
	if err != nil {
		fail(err)
	}
	mux := http.NewServeMux()
	var prof *os.File
	mux.HandleFunc("/cpu/start", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Create(r.URL.Query().Get("file"))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		prof = f
	})
	mux.HandleFunc("/cpu/stop", func(w http.ResponseWriter, r *http.Request) {
		pprof.StopCPUProfile()
		if prof != nil {
			prof.Close()
		}
		f, err := os.Create(r.URL.Query().Get("allocs"))
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.HandleFunc("/figures", func(w http.ResponseWriter, r *http.Request) {
		var f childFigures
		var err error
		if f.Count, f.Established, err = count(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if r.URL.Query().Get("gc") != "" {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			f.Heap = int64(ms.HeapAlloc)
		}
		u, err := ProcUsage(0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f.RSS, f.PeakRSS, f.CPUns = u.RSS, u.PeakRSS, int64(u.CPU)
		json.NewEncoder(w).Encode(f)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	fmt.Println("ready", ln.Addr().String())
	fail(http.Serve(ln, mux))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scale child:", err)
	os.Exit(1)
}

// startOurs runs app/reflector as inofd would, BFD off (the feeders have
// none), and commits the plan's zones with soft zoning (so that an unzoned
// device sees every zone).
func startOurs(a childArgs, log *slog.Logger) (func(context.Context) (int, int, error), error) {
	o := reflector.DefaultOptions()
	o.StateDir, o.ASN, o.RouterID, o.LocalAddress = a.StateDir, ASN, "127.0.0.1", "127.0.0.1"
	o.Listen = reflector.ListenOptions{Addresses: []string{"127.0.0.1"}, Port: a.Port}
	o.MetricsListen = ""
	o.BFD.Enabled = false
	for _, c := range a.Clients {
		o.Clients = append(o.Clients, reflector.ClientOptions{Address: c})
	}
	// As inofd wires it: the admin API's event feed gets every device event.
	r, err := reflector.New(reflector.Config{Options: o, Logger: log, Events: inofapi.NewFeed(inofapi.FeedOptions{})})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	failed := make(chan error, 1)
	go func() { failed <- r.Run(ctx) }() // the child process ends the run
	select {
	case <-r.Ready():
	case err := <-failed:
		return nil, err
	}
	_, err = r.Commit(ctx, func(tx *zones.Tx) error {
		if err := tx.SetSettings(zones.Settings{DefaultZoneEnabled: true, HardZoning: false}); err != nil {
			return err
		}
		for z := range a.Plan.Zones {
			if err := tx.CreateZone(ZoneName(z), a.Plan.ZoneMembers(z)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit zones: %w", err)
	}
	return func(context.Context) (int, int, error) {
		return r.DeviceCount(), r.EstablishedSessions(), nil
	}, nil
}

// quiet is a GoBGP logger that keeps only errors.
type quiet struct{}

func (quiet) Panic(msg string, f gobgplog.Fields) { panic(msg) }
func (quiet) Fatal(msg string, f gobgplog.Fields) { fail(fmt.Errorf("GoBGP fatal: %s %v", msg, f)) }
func (quiet) Error(msg string, f gobgplog.Fields) { fmt.Fprintln(os.Stderr, "gobgp:", msg, f) }
func (quiet) Warn(string, gobgplog.Fields)        {}
func (quiet) Info(string, gobgplog.Fields)        {}
func (quiet) Debug(string, gobgplog.Fields)       {}
func (quiet) SetLevel(gobgplog.LogLevel)          {}
func (quiet) GetLevel() gobgplog.LogLevel         { return gobgplog.ErrorLevel }

var (
	famOpaque = &api.Family{Afi: api.Family_AFI_OPAQUE, Safi: api.Family_SAFI_KEY_VALUE}
	famRTC    = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_ROUTE_TARGET_CONSTRAINTS}
)

// stockPeer is a neighbor of a stock GoBGP server, configured as ours are.
func stockPeer(addr string, rr, rtc bool, remotePort uint32, local string) *api.Peer {
	p := &api.Peer{Conf: &api.PeerConf{NeighborAddress: addr, PeerAsn: ASN},
		Transport: &api.Transport{PassiveMode: rr, RemotePort: remotePort, LocalAddress: local},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: 1, HoldTime: 9, KeepaliveInterval: 3}}}
	if rr {
		p.RouteReflector = &api.RouteReflector{RouteReflectorClient: true, RouteReflectorClusterId: "127.0.0.1"}
	}
	fams := []*api.Family{famOpaque}
	if rtc {
		fams = append(fams, famRTC)
	}
	for _, f := range fams {
		p.AfiSafis = append(p.AfiSafis, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f, Enabled: true}})
	}
	return p
}

// rtcPath is an RT-constraint membership; rt nil is the default (all).
func rtcPath(rt *record.RouteTarget) (*api.Path, error) {
	m := &api.RouteTargetMembershipNLRI{}
	if rt != nil {
		m.Asn = ASN
		a, err := anypb.New(&api.TwoOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt.Global, LocalAdmin: rt.Local})
		if err != nil {
			return nil, err
		}
		m.Rt = a
	}
	nlri, err := anypb.New(m)
	if err != nil {
		return nil, err
	}
	origin, err := anypb.New(&api.OriginAttribute{})
	if err != nil {
		return nil, err
	}
	mp, err := anypb.New(&api.MpReachNLRIAttribute{Family: famRTC, NextHops: []string{"0.0.0.0"}, Nlris: []*anypb.Any{nlri}})
	if err != nil {
		return nil, err
	}
	return &api.Path{Family: famRTC, Nlri: nlri, Pattrs: []*anypb.Any{origin, mp}}, nil
}

// startStock runs plain GoBGP v3.37 as the reflector, with the default
// route-target membership when RT-constraint is on (as ours has).
func startStock(a childArgs) (func(context.Context) (int, int, error), error) {
	s := server.NewBgpServer(server.LoggerOption(quiet{}))
	go s.Serve()
	ctx := context.Background()
	g := &api.Global{Asn: ASN, RouterId: "127.0.0.1", ListenPort: int32(a.Port), ListenAddresses: []string{"127.0.0.1"}}
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: g}); err != nil {
		return nil, err
	}
	if a.RTC {
		p, err := rtcPath(nil)
		if err != nil {
			return nil, err
		}
		if _, err := s.AddPath(ctx, &api.AddPathRequest{Path: p}); err != nil {
			return nil, err
		}
	}
	for _, c := range a.Clients {
		if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: stockPeer(c, true, a.RTC, 0, "")}); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) (int, int, error) { return stockCount(ctx, s.ListPeer) }, nil
}

// stockCount sums the opaque records accepted from every neighbor and
// counts the established sessions.
func stockCount(ctx context.Context, list func(context.Context, *api.ListPeerRequest, func(*api.Peer)) error) (int, int, error) {
	n, up := 0, 0
	err := list(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		if p.GetState().GetSessionState() == api.PeerState_ESTABLISHED {
			up++
		}
		for _, as := range p.GetAfiSafis() {
			f := as.GetConfig().GetFamily()
			if f.GetAfi() == famOpaque.Afi && f.GetSafi() == famOpaque.Safi {
				n += int(as.GetState().GetAccepted())
			}
		}
	})
	return n, up, err
}
