package cli_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/cmd/inofctl/internal/clidoc"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/buildinfo"
)

var update = flag.Bool("update", false, "rewrite the golden files and docs/cli.md")

// env is an in-process reflector API and a home directory for inofctl.
type env struct {
	t       *testing.T
	b       *apitest.Backend
	feed    *api.Feed
	sock    string
	environ []string
	dir     string       // files of the test, "DIR" in the transcript
	out     bytes.Buffer // the transcript
}

// varying matches what differs between runs: the test process's pid in an
// identity's "via", a backup's size.
var varying = regexp.MustCompile(`pid=[0-9]+|\([0-9]+ bytes\)`)

var testTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *env {
	b := apitest.NewBackendAt(t, func() time.Time { return testTime }) // journal ids and times stay put
	dev := func(addr string, role inof.Role, sw string, st inof.State, r inof.Reason) api.Device {
		return api.Device{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolRoCE, Port: 4420},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: st, Reason: r, Changed: testTime}}
	}
	b.SetDevices(
		dev("10.0.0.1", inof.RoleHost, "192.0.2.1", inof.StateActive, 0),
		dev("10.0.0.2", inof.RoleHost, "192.0.2.2", inof.StateActive, 0),
		dev("10.0.1.1", inof.RoleTarget, "192.0.2.1", inof.StateActive, 0),
		dev("10.0.1.2", inof.RoleTarget, "192.0.2.2", inof.StateInactive, inof.ReasonLinkDown),
		dev("10.0.2.1", inof.RoleBoth, "192.0.2.2", inof.StateActive, 0),
	)
	b.SetSessions(
		[]api.Session{{Peer: "192.0.2.1", Kind: "client", State: "established", Since: testTime, Received: 3, Advertised: 7}},
		[]api.BFDSession{{Peer: "192.0.2.1", Local: "192.0.2.254", State: "up", Diagnostic: "none", Since: testTime,
			TxInterval: 100 * time.Millisecond, RxInterval: 100 * time.Millisecond, DetectMult: 3}})
	feed := api.NewFeed(api.FeedOptions{Epoch: 7, Now: func() time.Time { return testTime }})
	_, sock := apitest.Serve(t, b, api.ServeOptions{Events: feed})
	home := t.TempDir()
	return &env{t: t, b: b, feed: feed, sock: sock, environ: []string{"HOME=" + home}, dir: t.TempDir()}
}

// run runs inofctl against the server with stdin and records the command,
// its output and its exit code in the transcript.
func (e *env) run(stdin string, args ...string) int {
	e.t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"--server", "unix://" + e.sock}, args...),
		cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Environ: e.environ, Now: func() time.Time { return testTime }})
	hide := func(s string) string {
		s = strings.NewReplacer(e.sock, "SOCKET", e.dir, "DIR").Replace(s)
		return varying.ReplaceAllStringFunc(s, func(m string) string {
			k, _, _ := strings.Cut(m, "=")
			if strings.HasSuffix(m, "bytes)") {
				return "(N bytes)"
			}
			return k + "=N"
		})
	}
	fmt.Fprintf(&e.out, "$ inofctl %s\n", hide(strings.Join(args, " ")))
	if stdin != "" {
		fmt.Fprintf(&e.out, "[stdin] %q\n", stdin)
	}
	e.out.WriteString(hide(out.String()))
	if errb.Len() > 0 {
		fmt.Fprintf(&e.out, "[stderr]\n%s", hide(errb.String()))
		if !strings.HasSuffix(errb.String(), "\n") {
			e.out.WriteString("\n")
		}
	}
	fmt.Fprintf(&e.out, "[exit %d]\n\n", code)
	return code
}

// golden compares the transcript with testdata/NAME.golden.
func (e *env) golden(name string) {
	e.t.Helper()
	compareFile(e.t, filepath.Join("testdata", name+".golden"), e.out.Bytes())
}

func compareFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestZoningWalkthrough(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		stdin string
		args  string
		code  int
	}{
		{"y\n", "zone create red 10.0.0.1 10.0.1.1", 0},
		{"", "zone create blue 10.0.0.2 10.0.1.2 --yes", 0},
		{"", "alias create rack1 10.0.2.1 --yes", 0},
		{"", "zone add red alias:rack1 --yes", 0},
		{"", "zone list -o json", 0},
		{"", "zone show red -o yaml", 0},
		{"", "alias list", 0},
		{"", "zone rename blue green --yes", 0},
		{"", "zone remove green 10.0.1.2 --yes", 0},
		{"", "device list", 0},
		{"", "device list --zone red --role target -o json", 0},
		{"", "device why 10.0.0.1 10.0.1.1", 0},
		{"", "device why 10.0.0.2 10.0.1.1", 0},
		{"", "fabric set hard-zoning off --yes", 0},
		{"", "device why 10.0.0.2 10.0.1.1", 0},
		{"", "device why 10.0.0.2", 0},
		{"", "device why 10.0.0.1 --visible-only -o json", 0},
		{"", "fabric show", 0},
		{"", "zone create staged --stage", 0},
		{"", "zone add staged 10.0.0.2 10.0.1.2 --stage", 0},
		{"", "zoning diff", 0},
		{"", "zoning commit --yes", 0},
		{"", "zoning diff", 0},
		{"", "zone create dropped --stage", 0},
		{"", "zoning abort", 0},
		{"", "zoning commit --yes", 1},
		{"n\n", "zone delete red", 1},
		{"", "zone delete staged", 1}, // no answer on stdin
		{"", "zoning show", 0},
		{"", "session list", 0},
		{"", "bfd list -o yaml", 0},
		{"", "events -o json", 0},
		{"", "lossless validate", 0},
	}
	for _, s := range steps {
		if code := e.run(s.stdin, strings.Fields(s.args)...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	e.golden("walkthrough")
}

func TestErrors(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		stdin string
		args  string
		code  int
	}{
		{"", "zone add nope 10.0.0.1 --yes", 1},
		{"", "zone create red 10.0.0.300 --yes", 1},
		{"", "zone create red 10.0.0.1 --yes", 0},
		{"", "zone add red 10.0.0.1 --yes", 1},
		{"", "zone add red 10.0.0.5 10.0.0.5 --yes", 1},
		{"", "zone create red --yes", 1},
		{"", "zone create " + strings.Repeat("z", 64) + " --yes", 1},
		{"", "zone show blue", 1},
		{"", "device list --role switch", 2},
		{"", "device list --address 10.0.0.300", 1},
		{"", "device why 10.0.0.1 10.9.9.9", 1},
		// Concurrent commit: an edit staged against one revision, another
		// commit lands, the staged commit is refused and nothing changes.
		{"", "zone create late 10.0.0.2 --stage", 0},
		{"", "zone create early --yes", 0},
		{"", "zoning commit --yes", 1},
		{"", "zone list", 0},
		// Usage errors.
		{"", "zone create", 2},
		{"", "zone rename red", 2},
		{"", "zone list --bogus", 2},
		{"", "bogus", 2},
		{"", "zone list -o xml", 2},
		{"", "fabric set hard-zoning maybe --yes", 2},
		{"", "zone bogus", 2},
		{"", "zone creat red", 2},
		{"", "audit --since -5h", 2},
	}
	for _, s := range steps {
		if code := e.run(s.stdin, strings.Fields(s.args)...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	e.golden("errors")
}

// TestZoningFileErrors: a zoning file's mistakes are named with their file
// and line before anything is shown or committed: an unknown key (and the
// key it likely meant), a list item indented too far (which YAML would
// fold into the item before, read as a range), a member listed twice.
func TestZoningFileErrors(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{
		"key.yaml":     "settings: {default_zone: true, hard_zoning: true}\nzonez:\n  red: [10.0.0.1]\n",
		"setting.yaml": "settings:\n  default_zone: true\n  hard_zonning: true\n",
		"indent.yaml":  "settings: {default_zone: true, hard_zoning: true}\nzones:\n  red:\n    - 10.1.0.20\n      - 10.1.0.30\n",
		"twice.yaml":   "settings: {default_zone: true, hard_zoning: true}\nzones:\n  red:\n    - 10.0.0.1\n    - 10.0.0.2\n    - 10.0.0.1\n",
		"nested.yaml":  "settings: {default_zone: true, hard_zoning: true}\nzones:\n  red:\n    - 10.0.0.1\n    -\n      - 10.0.0.2\n",
		"range.yaml":   "settings: {default_zone: true, hard_zoning: true}\nzones:\n  red:\n    - 10.1.0.20-10.1.0.30\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		file string
		code int
	}{{"key.yaml", 1}, {"setting.yaml", 1}, {"indent.yaml", 1}, {"twice.yaml", 1}, {"nested.yaml", 1}, {"range.yaml", 0}} {
		if code := e.run("", "zoning", "diff", "-f", filepath.Join(e.dir, s.file)); code != s.code {
			t.Errorf("diff -f %s: exit %d, want %d", s.file, code, s.code)
		}
	}
	e.golden("zoningfile")
}

// Flags beat the environment, which beats the configuration file.
func TestConfigPrecedence(t *testing.T) {
	e := newEnv(t)
	cfg := filepath.Join(t.TempDir(), "inofctl.yaml")
	if err := os.WriteFile(cfg, []byte("output: yaml\nserver: unix://"+e.sock+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(environ []string, args ...string) string {
		var out, errb bytes.Buffer
		if code := cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: environ}); code != 0 {
			t.Fatalf("inofctl %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if got := run(nil, "--config", cfg, "fabric", "show"); !strings.HasPrefix(got, "apiVersion: inofctl/v1\nkind: Fabric\n") {
		t.Errorf("file: %q", got)
	}
	if got := run([]string{"INOF_OUTPUT=json"}, "--config", cfg, "fabric", "show"); !strings.HasPrefix(got, "{\n") {
		t.Errorf("env over file: %q", got)
	}
	if got := run([]string{"INOF_OUTPUT=json"}, "--config", cfg, "-o", "table", "fabric", "show"); !strings.HasPrefix(got, "default-zone  on\n") {
		t.Errorf("flag over env: %q", got)
	}
	if got := run([]string{"INOF_SERVER=unix://" + e.sock}, "fabric", "show"); !strings.HasPrefix(got, "default-zone  on\n") {
		t.Errorf("server from env: %q", got)
	}
}

// docs/cli.md is generated from the command tree.
func TestCLIDocUpToDate(t *testing.T) {
	var buf bytes.Buffer
	root := cli.NewCommand(cli.IO{In: strings.NewReader(""), Out: &buf, Err: &buf, Environ: clidoc.DocEnviron()})
	var doc bytes.Buffer
	if err := clidoc.Markdown(root, &doc); err != nil {
		t.Fatal(err)
	}
	compareFile(t, filepath.Join("..", "..", "..", "..", "docs", "cli.md"), doc.Bytes())
}

// TestLosslessTable: `lossless table` is `lossless render table` for the
// fabric's profile: every speed from 10 to 400G, every cable from 1 to 300 m.
func TestLosslessTable(t *testing.T) {
	e := newEnv(t)
	if code := e.run("", "lossless", "table"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, e.out.String())
	}
	out := e.out.String()
	for _, want := range []string{"10G", "400G", "300"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	e.out.Reset()
	e.run("", "lossless", "render", "table")
	table := strings.SplitN(out, "\n", 2)[1]
	if render := strings.SplitN(e.out.String(), "\n", 2)[1]; render != table {
		t.Errorf("lossless table differs from lossless render table")
	}
}

// TestVersion: `inofctl version` shows this client's build and the
// serving daemon's build and role (the Version RPC); --client asks no
// server; an unreachable server still shows the client, and fails.
func TestVersion(t *testing.T) {
	b := apitest.NewBackend(t)
	_, sock := apitest.Serve(t, b, api.ServeOptions{Role: "reflector"})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb,
			Environ: []string{"HOME=" + t.TempDir()}})
		return code, out.String(), errb.String()
	}
	in := buildinfo.Read()
	code, out, errOut := run("--server", "unix://"+sock, "version")
	wantServer := "server: inofd " + in.String() + ", role reflector, started "
	if code != 0 || !strings.HasPrefix(out, "client: inofctl "+in.String()+"\n"+wantServer) {
		t.Fatalf("version: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run("--server", "unix://"+sock, "version", "-o", "json")
	if code != 0 || !strings.Contains(out, `"role": "reflector"`) || !strings.Contains(out, `"go_version": "`+in.GoVersion+`"`) {
		t.Fatalf("version -o json: exit %d\n%s", code, out)
	}
	code, out, _ = run("--server", "unix:///nonexistent/api.sock", "version", "--client")
	if code != 0 || out != "client: inofctl "+in.String()+"\n" {
		t.Fatalf("version --client: exit %d\n%s", code, out)
	}
	code, out, errOut = run("--server", "unix:///nonexistent/api.sock", "--timeout", "1s", "version")
	if code != cli.ExitError || !strings.HasPrefix(out, "client: inofctl ") || !strings.Contains(errOut, "cannot reach the API") {
		t.Fatalf("version without a server: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = run("--version")
	if code != 0 || out != "inofctl "+in.String()+"\n" {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

// TestReflectorList: inofctl reflector list in its three formats, for a
// fabric of three reflectors seen from the first: a peer whose clock is in
// 2100 (its changes held back) and a configured peer not heard from yet
// (it lacks this reflector's parts); the warning names the one ahead.
func TestReflectorList(t *testing.T) {
	e := newEnv(t)
	rid := inof.MustParseRouterID
	e.b.SetReflectors(api.ReflectorsStatus{Now: testTime, Reflectors: []api.ReflectorStatus{
		{RouterID: rid("10.0.0.1"), Self: true, Revision: "00c0ffee00c0ffee", Generation: inof.GenerationAt(testTime.Add(-time.Minute)), Parts: 4},
		{RouterID: rid("10.0.0.2"), Address: "10.0.0.2", Session: "established", Generation: inof.GenerationAt(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)),
			Writer: rid("10.0.0.2"), Parts: 5, RefusedFuture: 7, Deferred: 3},
		{Address: "10.0.0.3", Session: "active", Behind: 4},
	}})
	for _, f := range []string{"table", "json", "yaml"} {
		if code := e.run("", "reflector", "list", "-o", f); code != 0 {
			t.Errorf("-o %s: exit %d", f, code)
		}
	}
	e.golden("reflectors")
}
