package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/syncbuf"
)

// dayTwoFabric sets, on e's backend, two switches' reports of 10.0.1.2 (one
// on each switch, each with its port) and the session details, and puts
// events on the feed.
func dayTwoFabric(e *env) {
	rep := func(addr string, role inof.Role, sw, port string, st inof.State, r inof.Reason, changed time.Time) api.Device {
		return inof.Report{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolRoCE,
			Port: 4420, NQN: "nqn.2014-08.org.example:" + addr}, Switch: inof.MustParseRouterID(sw),
			Status: inof.Status{State: st, Reason: r, Changed: changed}, AccessPort: port, Since: testTime.Add(-time.Hour)}
	}
	reports := []api.Device{
		rep("10.0.0.1", inof.RoleHost, "192.0.2.1", "Ethernet0", inof.StateActive, 0, testTime),
		rep("10.0.0.2", inof.RoleHost, "192.0.2.2", "Ethernet4", inof.StateActive, 0, testTime),
		rep("10.0.1.2", inof.RoleTarget, "192.0.2.2", "Ethernet8", inof.StateActive, 0, testTime.Add(-90*time.Second)),
		rep("10.0.1.2", inof.RoleTarget, "192.0.2.1", "Ethernet12", inof.StateInactive, inof.ReasonLinkDown, testTime.Add(-2*time.Minute)),
	}
	e.b.SetReports(reports...)
	e.b.SetDevices(api.Shown(reports)...)
	e.b.SetSessions([]api.Session{
		{Peer: "192.0.2.1", Kind: "client", State: "established", Since: testTime.Add(-75 * time.Minute), Received: 3, Advertised: 7,
			RouterID: "192.0.2.1", LocalAddress: "192.0.2.254", Passive: true, EndOfRIB: true, BFD: true},
		{Peer: "192.0.2.2", Kind: "client", State: "active", Since: testTime.Add(-time.Minute), RouterID: "192.0.2.2",
			HoldTime: 30 * time.Second, Keepalive: 10 * time.Second},
	}, []api.BFDSession{{Peer: "192.0.2.1", Local: "192.0.2.254", State: "up", Diagnostic: "none", Since: testTime.Add(-74 * time.Minute),
		TxInterval: 100 * time.Millisecond, RxInterval: 100 * time.Millisecond, DetectMult: 3}})
	at := func(d time.Duration) time.Time { return testTime.Add(d).Add(123 * time.Millisecond) }
	for _, ev := range []api.Event{
		{Kind: "session", Subject: "192.0.2.2", Time: at(-time.Hour), Message: "BGP session with client 192.0.2.2 established",
			Attributes: map[string]string{"protocol": "bgp", "kind": "client", "state": "established"}},
		{Kind: "record", Subject: "10.0.1.2", Time: at(-2 * time.Minute), Message: "device inactive on switch 192.0.2.1: link-down",
			Attributes: map[string]string{"switch": "192.0.2.1", "role": "target", "protocol": "roce", "state": "inactive",
				"reason": "link-down", "port": "Ethernet12"}},
		{Kind: "record", Subject: "10.0.1.2", Time: at(-90 * time.Second),
			Message: "device joined: target 10.0.1.2/roce:4420 on switch 192.0.2.2 port Ethernet8, active",
			Attributes: map[string]string{"switch": "192.0.2.2", "role": "target", "protocol": "roce", "state": "active",
				"reason": "none", "port": "Ethernet8", "nqn": "nqn.2014-08.org.example:10.0.1.2"}},
		{Kind: "session", Subject: "192.0.2.2", Time: at(-time.Minute), Message: "BGP session with client 192.0.2.2 lost (now active)",
			Attributes: map[string]string{"protocol": "bgp", "kind": "client", "state": "active"}},
		{Kind: "zoning", Subject: "8a98727d11013d48", Time: at(0), Message: "alice committed zone red",
			Attributes: map[string]string{"identity": "user:alice"}},
	} {
		e.feed.Publish(ev)
	}
}

// TestDayTwoVerbs is a golden transcript of what an admin reaches for on
// day two: one device, one session, the port column, -o wide,
// --no-headers, event filters, and the one JSON envelope.
func TestDayTwoVerbs(t *testing.T) {
	e := newEnv(t)
	dayTwoFabric(e)
	for _, s := range []struct {
		args string
		code int
	}{
		{"device list", 0},
		{"device list -o wide", 0},
		{"device list --no-headers --status inactive", 0},
		{"device list --role target --no-headers -o wide", 0},
		{"device show 10.0.1.2", 0},
		{"device show 10.0.0.1", 0},
		{"device show 10.0.1.2 -o json", 0},
		{"device show 10.9.9.9", 1},
		{"session list -o wide", 0},
		{"session show 192.0.2.1", 0},
		{"session show 192.0.2.2", 0},
		{"session show 192.0.2.2 -o yaml", 0},
		{"session show 192.0.2.9", 1},
		{"events", 0},
		{"events --kind session", 0},
		{"events --kind record,zoning --subject 10.0.1.2", 0},
		{"events --since 2m", 0},
		{"events --since 2026-11-30T11:59:00Z --kind session -o json", 0},
		{"events --kind bogus", 2},
		{"events --since yesterday", 2},
		{"zone create red 10.0.0.1 10.0.1.2 10.0.2.9 10.0.2.10 10.0.2.11 10.0.2.12 10.0.2.13 10.0.2.14 10.0.2.15 --yes", 0},
		{"zone list", 0},
		{"zone list -o wide --no-headers", 0},
		{"__complete device show ", 0},
		{"__complete session show ", 0},
		{"__complete events --kind ", 0},
	} {
		args := strings.Fields(s.args)
		if strings.HasSuffix(s.args, " ") {
			args = append(args, "") // completing a new word
		}
		if code := e.run("", args...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	e.golden("daytwo")
}

// Every JSON answer is one envelope: apiVersion, a kind, and items for a
// list kind or item for one object.
func TestJSONEnvelope(t *testing.T) {
	e := newEnv(t)
	dayTwoFabric(e)
	for _, s := range []struct {
		args, kind string
		list       bool
	}{
		{"device list", "DeviceList", true},
		{"device show 10.0.1.2", "Device", false},
		{"device why 10.0.0.1 10.0.1.2", "Why", false},
		{"device why 10.0.0.1", "VisibilityList", true},
		{"device who-sees 10.0.1.2", "VisibilityList", true},
		{"session list", "SessionList", true},
		{"session show 192.0.2.1", "Session", false},
		{"bfd list", "BFDSessionList", true},
		{"zone list", "ZoneList", true},
		{"alias list", "AliasList", true},
		{"zone where 10.0.0.1", "MemberUseList", true},
		{"fabric show", "Fabric", false},
		{"zoning show", "Zoning", false},
		{"reflector list", "Reflectors", false},
		{"audit", "Journal", false},
		{"audit --conflicts", "ConflictList", true},
		{"lossless validate", "ProblemList", true},
		{"lossless show", "LosslessProfile", false},
		{"lossless history", "JournalEntryList", true},
		{"version", "Version", false},
	} {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"--server", "unix://" + e.sock, "-o", "json"}, strings.Fields(s.args)...),
			cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: e.environ, Now: func() time.Time { return testTime }})
		if code != 0 {
			t.Errorf("inofctl %s: exit %d: %s", s.args, code, errb.String())
			continue
		}
		var env map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &env); err != nil {
			t.Errorf("inofctl %s -o json: %v:\n%s", s.args, err, out.String())
			continue
		}
		var version, kind string
		_ = json.Unmarshal(env["apiVersion"], &version)
		_ = json.Unmarshal(env["kind"], &kind)
		_, items := env["items"]
		_, item := env["item"]
		if version != cli.OutputVersion || kind != s.kind || items != s.list || item == s.list {
			t.Errorf("inofctl %s -o json: apiVersion %q kind %q items %v item %v; want %s, %s, a list: %v",
				s.args, version, kind, items, item, cli.OutputVersion, s.kind, s.list)
		}
	}
}

// `device list --watch` prints the list, then prints it again when an
// event says it changed (the poll interval is an hour: only the event
// stream can have caused it), and ends without error when interrupted.
func TestDeviceListWatch(t *testing.T) {
	e := newEnv(t)
	dayTwoFabric(e)
	var out, errb syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, []string{"--server", "unix://" + e.sock, "device", "list", "--watch", "--watch-interval", "1h"},
			cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: e.environ, Now: func() time.Time { return testTime }})
	}()
	waitFor(t, &out, &errb, "10.0.1.2", 1)
	joined := api.Device{Device: inof.Device{Addr: netip.MustParseAddr("10.0.3.3"), Role: inof.RoleTarget,
		Protocol: inof.ProtocolTCP}, Switch: inof.MustParseRouterID("192.0.2.1"), Status: inof.Status{State: inof.StateActive},
		AccessPort: "Ethernet16"}
	e.b.SetReports(joined)
	e.b.SetDevices(joined)
	e.feed.Publish(api.Event{Kind: "record", Subject: "10.0.3.3", Message: "device joined"})
	waitFor(t, &out, &errb, "Ethernet16", 1)
	// An event of a kind the list does not show asks for nothing.
	e.feed.Publish(api.Event{Kind: "lossless", Subject: "default", Message: "profile"})
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "ADDRESS"); n != 2 {
		t.Errorf("%d renderings, want 2 (the first and the changed one):\n%s", n, out.String())
	}
}

// With events that say nothing about the list, --watch still notices a
// change by asking again every --watch-interval; an unchanged list is not
// printed again.
func TestSessionListWatchPolls(t *testing.T) {
	e := newEnv(t)
	var out, errb syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, []string{"--server", "unix://" + e.sock, "session", "list", "-w", "--watch-interval", "20ms", "--no-headers"},
			cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: e.environ, Now: func() time.Time { return testTime }})
	}()
	waitFor(t, &out, &errb, "192.0.2.1", 1)
	e.b.SetSessions([]api.Session{{Peer: "192.0.2.1", Kind: "client", State: "established", Since: testTime, Received: 4}}, nil)
	waitFor(t, &out, &errb, "192.0.2.1", 2)
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errb.String())
	}
	if got := out.String(); strings.Count(got, "192.0.2.1") != 2 || strings.Contains(got, "PEER") {
		t.Errorf("want two renderings without headers:\n%s", got)
	}
}

// waitFor waits until out holds s n times (a test that fails times out
// here, with the output).
func waitFor(t *testing.T, out, errb *syncbuf.Buffer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%q never printed %d time(s):\n%s\nstderr: %s", s, n, out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionsOnly is a server of ListSessions alone: every other call,
// WatchEvents included, is unimplemented (an older or smaller server).
type sessionsOnly struct {
	inofv1.UnimplementedFabricServer
	mu       sync.Mutex
	received uint64
}

func (s *sessionsOnly) ListSessions(context.Context, *inofv1.ListSessionsRequest) (*inofv1.ListSessionsResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &inofv1.ListSessionsResponse{Sessions: []*inofv1.Session{{Peer: "192.0.2.1", Kind: "client", State: "established",
		Received: s.received}}}, nil
}

// Against a server without the event stream, --watch says so once and
// notices a change by asking again every --watch-interval.
func TestWatchWithoutEventStream(t *testing.T) {
	dir, err := os.MkdirTemp("", "inofctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fake := &sessionsOnly{received: 1}
	inofv1.RegisterFabricServer(srv, fake)
	go srv.Serve(l)
	defer srv.Stop()
	var out, errb syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- cli.Main(ctx, []string{"--server", "unix://" + sock, "session", "list", "--watch", "--watch-interval", "20ms"},
			cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Now: func() time.Time { return testTime }})
	}()
	waitFor(t, &out, &errb, "established", 1)
	waitFor(t, &errb, &out, "no event stream", 1)
	fake.mu.Lock()
	fake.received = 2
	fake.mu.Unlock()
	waitFor(t, &out, &errb, "established", 2)
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errb.String())
	}
	if n := strings.Count(errb.String(), "no event stream"); n != 1 {
		t.Errorf("said %d times that there is no event stream, want once:\n%s", n, errb.String())
	}
}
