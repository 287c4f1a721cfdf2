package console_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/console"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/testpki"
)

const (
	viewerToken = "viewer-token-1"
	adminToken  = "admin-token-1"
)

// site is a console served as inofd serves it: on the API's HTTPS
// listener, behind its TLS and identities, over a test backend.
type site struct {
	url    string
	ca     *testpki.CA
	pool   *x509.CertPool
	api    inofv1.FabricClient // the gRPC API (unix socket, admin)
	fabric inofv1.FabricServer // what the console calls
	b      *apitest.Backend
}

func newSite(t testing.TB) *site {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "console-ca")
	cert, key := ca.Server("inofd", net.IPv4(127, 0, 0, 1))
	tokens := filepath.Join(dir, "tokens.yaml")
	body := fmt.Sprintf("tokens:\n  - {name: vera, role: viewer, sha256: %s}\n  - {name: ada, role: admin, sha256: %s}\n",
		apiclient.HashToken(viewerToken), apiclient.HashToken(adminToken))
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	b := apitest.NewBackend(t)
	b.SetDevices(devices()...)
	b.SetSessions([]api.Session{
		{Peer: "192.0.2.1", Kind: "client", State: "established", Since: time.Now().Add(-time.Hour), Received: 2},
		{Peer: "192.0.2.2", Kind: "client", State: "active"},
		{Peer: "10.0.0.2", Kind: "reflector", State: "established"},
	}, []api.BFDSession{{Peer: "192.0.2.1", Local: "10.0.0.1", State: "up", TxInterval: 100 * time.Millisecond,
		RxInterval: 100 * time.Millisecond, DetectMult: 3}})
	b.SetHeld(map[inof.RouterID]time.Time{inof.MustParseRouterID("192.0.2.2"): time.Now().Add(90 * time.Second)})
	s := &site{ca: ca, b: b, pool: x509.NewCertPool()}
	pemData, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	s.pool.AppendCertsFromPEM(pemData)
	srv, sock := apitest.Serve(t, b, api.ServeOptions{
		ConsoleListen: "127.0.0.1:0", TLSCertFile: cert, TLSKeyFile: key, TokensFile: tokens, ClientCA: ca.File,
		Clients: []api.CertIdentity{{Subject: "carol", Role: api.RoleViewer}},
		Console: func(f inofv1.FabricServer) http.Handler {
			s.fabric = f
			return console.New(f, console.Options{Logger: slog.New(slog.DiscardHandler)})
		}})
	s.url = "https://" + srv.ConsoleAddr().String()
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.api = inofv1.NewFabricClient(conn)
	return s
}

func devices() []api.Device {
	dev := func(addr string, role inof.Role, sw string, st inof.State) api.Device {
		return api.Device{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP, Port: 4420},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: st, Changed: time.Now().Add(-time.Minute)}}
	}
	return []api.Device{
		dev("10.1.0.1", inof.RoleHost, "192.0.2.1", inof.StateActive),
		dev("10.1.0.2", inof.RoleHost, "192.0.2.2", inof.StateActive),
		dev("10.1.1.1", inof.RoleTarget, "192.0.2.1", inof.StateActive),
		dev("10.1.1.2", inof.RoleTarget, "192.0.2.2", inof.StateInactive),
	}
}

// client returns an HTTPS client trusting the test CA, with a client
// certificate of cn if set.
func (s *site) client(cn string) *http.Client {
	cfg := &tls.Config{RootCAs: s.pool}
	if cn != "" {
		cert, key := s.ca.Client(cn)
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			panic(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path with a bearer token ("" for none) and returns the
// status and body.
func (s *site) do(t *testing.T, c *http.Client, method, path, token string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader("zone=evil"))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, html.UnescapeString(string(b)), resp.Header
}

func (s *site) commit(t testing.TB, edits ...*inofv1.Edit) {
	t.Helper()
	if _, err := s.api.ApplyZoning(context.Background(), &inofv1.ApplyZoningRequest{Edits: edits}); err != nil {
		t.Fatal(err)
	}
}

func createZone(name string, members ...string) *inofv1.Edit {
	return &inofv1.Edit{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: name, Members: members}}}
}

// TestFabricShowsReflectorClocks: the fabric page shows the reflectors
// side by side with their revisions and generation clocks, joined with
// their BGP sessions, and warns of a reflector whose clock is so far ahead
// that its changes are refused.
func TestFabricShowsReflectorClocks(t *testing.T) {
	s := newSite(t)
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	s.b.SetReflectors(api.ReflectorsStatus{Now: now, Reflectors: []api.ReflectorStatus{
		{RouterID: inof.MustParseRouterID("10.0.0.1"), Self: true, Revision: "00c0ffee00c0ffee", Generation: inof.GenerationAt(now), Parts: 4},
		{RouterID: inof.MustParseRouterID("10.0.0.2"), Address: "10.0.0.2", Session: "established", Generation: inof.GenerationAt(future),
			Writer: inof.MustParseRouterID("10.0.0.2"), Parts: 5, RefusedFuture: 7, Deferred: 3, Behind: 2},
	}})
	code, body, _ := s.do(t, s.client(""), "GET", "/ui/fabric", viewerToken)
	if code != http.StatusOK {
		t.Fatalf("GET /ui/fabric: %d\n%s", code, body)
	}
	table := body[strings.Index(body, `<table id="reflectors">`):]
	table = table[:strings.Index(table, "</table>")]
	rows := strings.Split(table, "<tr")[2:] // after the header's
	if len(rows) != 2 {
		t.Fatalf("%d reflector rows, want 2 (the session joined with the peer's row):\n%s", len(rows), table)
	}
	for i, want := range [][]string{
		{"10.0.0.1", ">this<", "00c0ffee00c0ffee", "2026-12-06 08:00:00Z", ">ok<"},
		{`class="refused"`, "10.0.0.2", "established", "2100-01-01 00:00:00Z", "refused as from the future (3 parts held back)",
			"lacks 2 of this reflector's parts"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[i], w) {
				t.Errorf("reflector row %d: no %q in\n%s", i, w, rows[i])
			}
		}
	}
	if strings.Contains(rows[0], "refused") {
		t.Errorf("this reflector marked refused:\n%s", rows[0])
	}
	if !strings.Contains(body, `id="clock-ahead"`) || !strings.Contains(body, "The generation clock of 10.0.0.2 (") ||
		!strings.Contains(body, "more than 5m0s ahead") {
		t.Errorf("no clock warning:\n%s", body)
	}
}

func TestPagesShowTheFabric(t *testing.T) {
	s := newSite(t)
	s.commit(t, createZone("red", "10.1.0.1", "10.1.1.1"))
	hard := true
	s.commit(t, &inofv1.Edit{Edit: &inofv1.Edit_SetSettings{SetSettings: &inofv1.SetSettings{HardZoning: &hard}}})
	c := s.client("")
	for path, want := range map[string][]string{
		"/ui/fabric": {"192.0.2.1", "established", "10.0.0.2", "<svg", "leaf 192.0.2.1", "2 stale", "left", "300ms",
			"vera <span class=\"badge\">viewer</span>"},
		"/ui/zones":                    {"red", "10.1.0.1, 10.1.1.1", "hard zoning", "same zone red", "✓ sees", "✗ not"},
		"/ui/zones/matrix":             {"same zone red"},
		"/ui/devices":                  {"10.1.0.1", "10.1.1.2", "stale", "4 of 4 devices"},
		"/ui/devices?zone=red":         {"10.1.0.1", "10.1.1.1", "2 of 4 devices"},
		"/ui/devices?role=target":      {"10.1.1.1", "10.1.1.2", "2 of 4"},
		"/ui/devices?state=stale":      {"10.1.0.2", "10.1.1.2", "2 of 4"},
		"/ui/devices?q=10.1.1.1":       {"1 of 4"},
		"/ui/devices?protocol=roce":    {"0 of 4", "no device matches"},
		"/ui/devices/10.1.0.1":         {"Targets it sees", "10.1.1.1", "same zone red"},
		"/ui/devices/10.1.1.1":         {"Hosts that see it", "10.1.0.1"},
		"/ui/events":                   {"zoning", "vera", "ada", "committed"},
		"/ui/events?kind=zoning&q=xyz": {"Showing 0 of"},
		"/ui/lossless":                 {"Valid", "Port classes", "Headroom and ECN per speed", "400000 Mb/s", "simulation.svg"},
		"/ui/history":                  {"tester", "commit", "zone red", "diff"},
	} {
		code, body, _ := s.do(t, c, "GET", path, viewerToken)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", path, code, body)
			continue
		}
		for _, w := range want {
			if path == "/ui/events" && (w == "vera" || w == "ada") {
				continue // nobody of these acted yet
			}
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in\n%s", path, w, body)
			}
		}
	}
	code, body, h := s.do(t, c, "GET", "/ui/lossless/simulation.svg", viewerToken)
	if code != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") {
		t.Errorf("simulation.svg: %d %s %.80q", code, h.Get("Content-Type"), body)
	}
	code, _, h = s.do(t, c, "GET", "/ui/", viewerToken)
	if code != http.StatusFound || h.Get("Location") != "/ui/fabric" {
		t.Errorf("/ui/: %d to %q", code, h.Get("Location"))
	}
	code, body, _ = s.do(t, c, "GET", "/ui/static/console.css", viewerToken)
	if code != http.StatusOK || !strings.Contains(body, "prefers-color-scheme: dark") {
		t.Errorf("console.css: %d", code)
	}
}

// TestMatrixIsWhy: every cell of the matrix is the API's Why answer for
// the pair, visible or not, with the same reason.
func TestMatrixIsWhy(t *testing.T) {
	s := newSite(t)
	s.commit(t, createZone("red", "10.1.0.1", "10.1.1.1"))
	_, body, _ := s.do(t, s.client(""), "GET", "/ui/zones/matrix", viewerToken)
	for _, h := range []string{"10.1.0.1", "10.1.0.2"} {
		for _, tg := range []string{"10.1.1.1", "10.1.1.2"} {
			w, err := s.api.Why(context.Background(), &inofv1.WhyRequest{Host: h, Target: tg})
			if err != nil {
				t.Fatal(err)
			}
			mark := "✗ not"
			if w.GetVisible() {
				mark = "✓ sees"
			}
			cell := fmt.Sprintf(`title="%s"><span class="mark">%s</span> <small>%s</small>`, w.GetReason(), mark, w.GetReason())
			if !strings.Contains(body, cell) {
				t.Errorf("%s → %s: Why says %v %q; the matrix has no %s", h, tg, w.GetVisible(), w.GetReason(), cell)
			}
		}
	}
}

// TestHistoryDiff: the diff of an entry is what the zoning revision before
// it needs to become its revision.
func TestHistoryDiff(t *testing.T) {
	s := newSite(t)
	s.commit(t, createZone("red", "10.1.0.1"))
	s.commit(t, &inofv1.Edit{Edit: &inofv1.Edit_AddZoneMembers{AddZoneMembers: &inofv1.ZoneMembers{Zone: "red", Members: []string{"10.1.1.1"}}}})
	j, err := s.api.ListJournal(context.Background(), &inofv1.ListJournalRequest{})
	if err != nil || len(j.GetEntries()) != 2 {
		t.Fatalf("journal: %v %v", j, err)
	}
	_, body, _ := s.do(t, s.client(""), "GET", "/ui/history?entry="+j.GetEntries()[1].GetId(), viewerToken)
	if !strings.Contains(body, "~ zone red: +10.1.1.1") || !strings.Contains(body, "From revision "+j.GetEntries()[0].GetRevision()) {
		t.Errorf("diff of the second commit:\n%s", body)
	}
	_, body, _ = s.do(t, s.client(""), "GET", "/ui/history?entry=nope", viewerToken)
	if !strings.Contains(body, "no journal entry") {
		t.Errorf("unknown entry:\n%s", body)
	}
}

// TestConsoleNeedsAnIdentity: no credentials, a wrong token, a certificate
// whose subject is not listed are refused; a token (bearer or as the login
// prompt's password) and a listed certificate are let in with their
// identity.
func TestConsoleNeedsAnIdentity(t *testing.T) {
	s := newSite(t)
	c := s.client("")
	code, _, h := s.do(t, c, "GET", "/ui/fabric", "")
	if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("no credentials: %d, WWW-Authenticate %q", code, h.Get("WWW-Authenticate"))
	}
	if code, _, _ := s.do(t, c, "GET", "/ui/fabric", "guessed"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, _ := s.do(t, c, "GET", "/ui/events/stream", ""); code != http.StatusUnauthorized {
		t.Errorf("event stream without credentials: %d", code)
	}
	req, _ := http.NewRequest("GET", s.url+"/ui/zones", nil)
	req.SetBasicAuth("anyone", adminToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `ada <span class="badge">admin</span>`) {
		t.Errorf("basic auth with a token: %d", resp.StatusCode)
	}
	if code, body, _ := s.do(t, s.client("carol"), "GET", "/ui/fabric", ""); code != http.StatusOK ||
		!strings.Contains(body, `carol <span class="badge">viewer</span>`) {
		t.Errorf("listed certificate: %d", code)
	}
	if code, _, _ := s.do(t, s.client("mallory"), "GET", "/ui/fabric", ""); code != http.StatusForbidden {
		t.Errorf("certificate of an unlisted subject: %d", code)
	}
	// Plain HTTP on the console's port gets nothing.
	resp, err = http.Get("http://" + strings.TrimPrefix(s.url, "https://") + "/ui/fabric")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the console answered plain HTTP")
		}
	}
}

// TestConsoleRefusesWrites: whatever the method, path and identity, a
// write-like request is refused and the zoning stays as it was.
func TestConsoleRefusesWrites(t *testing.T) {
	s := newSite(t)
	s.commit(t, createZone("red", "10.1.0.1"))
	before, err := s.api.GetZoning(context.Background(), &inofv1.GetZoningRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.client("")
	for _, tok := range []string{viewerToken, adminToken} {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			for _, p := range []string{"/ui/zones", "/ui/zones/matrix", "/ui/devices/10.1.0.1", "/ui/events/stream", "/ui/lossless", "/ui/history", "/ui/nothing"} {
				code, _, h := s.do(t, c, m, p, tok)
				if code != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
					t.Errorf("%s %s: %d (Allow %q), want 405", m, p, code, h.Get("Allow"))
				}
			}
		}
	}
	after, err := s.api.GetZoning(context.Background(), &inofv1.GetZoningRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetRevision() != before.GetRevision() {
		t.Errorf("the zoning changed: %s → %s", before.GetRevision(), after.GetRevision())
	}
	j, err := s.api.ListJournal(context.Background(), &inofv1.ListJournalRequest{})
	if err != nil || len(j.GetEntries()) != 1 {
		t.Errorf("journal: %d entries, %v", len(j.GetEntries()), err)
	}
}

// TestViewerCannotWriteThroughTheConsolesBackend: the implementation the
// console calls refuses a viewer's change as the gRPC API does, so no page
// could ever write for a viewer.
func TestViewerCannotWriteThroughTheConsolesBackend(t *testing.T) {
	s := newSite(t)
	ctx := api.WithIdentity(context.Background(), api.Identity{Name: "vera", Role: api.RoleViewer, Via: "token"})
	_, err := s.fabric.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: []*inofv1.Edit{createZone("evil", "10.1.0.1")}})
	if err == nil || !strings.Contains(err.Error(), "only an admin may change the fabric") {
		t.Errorf("a viewer's commit through the console's backend: %v", err)
	}
	if _, err := s.fabric.SetLosslessProfile(ctx, &inofv1.SetLosslessProfileRequest{Yaml: "name: x\n"}); err == nil {
		t.Error("a viewer set the lossless profile through the console's backend")
	}
}

// TestEventStream: a commit reaches an open stream (from=now: nothing
// older), as the live pages see it.
func TestEventStream(t *testing.T) {
	s := newSite(t)
	s.commit(t, createZone("old", "10.1.0.1"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/ui/events/stream?from=now", nil)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := s.client("").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	if l, _ := rd.ReadString('\n'); !strings.HasPrefix(l, "retry:") {
		t.Fatalf("first line %q", l)
	}
	s.commit(t, createZone("blue", "10.1.0.2"))
	var id string
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if v, ok := strings.CutPrefix(l, "id: "); ok {
			id = strings.TrimSpace(v)
		}
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var e struct{ Kind, Subject, Message, Identity string }
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind != "zoning" {
			continue
		}
		if !strings.Contains(e.Message, "committed 1 record") || e.Identity != "tester" || id == "" {
			t.Errorf("event %+v id %q", e, id)
		}
		z, _ := s.api.GetZoning(context.Background(), &inofv1.GetZoningRequest{})
		if e.Subject != z.GetRevision() {
			t.Errorf("first zoning event after now is %s, want the new revision %s (the older commit must not replay)", e.Subject, z.GetRevision())
		}
		return
	}
}

// TestHandlerErrors drives the handler alone (httptest): an unknown
// device is a 404 page, a bad filter a 400, both in the layout.
func TestHandlerErrors(t *testing.T) {
	s := newSite(t)
	h := console.New(s.fabric, console.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := api.WithIdentity(context.Background(), api.Identity{Name: "vera", Role: api.RoleViewer})
	for path, want := range map[string]int{
		"/ui/devices/10.9.9.9":        http.StatusNotFound,
		"/ui/devices?role=switch":     http.StatusBadRequest,
		"/ui/devices?state=sleepy":    http.StatusBadRequest,
		"/ui/devices?zone=nosuchzone": http.StatusNotFound,
		"/ui/nothing":                 http.StatusNotFound,
		"/ui/fabric":                  http.StatusOK,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", path, nil))
		if rec.Code != want {
			t.Errorf("%s: %d, want %d\n%s", path, rec.Code, want, rec.Body)
		}
		if want != http.StatusOK && want != http.StatusNotFound && !strings.Contains(rec.Body.String(), "<nav>") {
			t.Errorf("%s: the error is not shown in the layout", path)
		}
	}
}

// TestHostileNamesAreEscaped: what hosts register (an NQN) reaches the
// pages; markup in it must stay text, in the tables and in the SVG.
func TestHostileNamesAreEscaped(t *testing.T) {
	s := newSite(t)
	evil := `nqn.2014-08.org.example:"><script>alert(1)</script><svg onload=alert(2)>`
	d := devices()
	d[0].NQN = evil
	s.b.SetDevices(d...)
	s.commit(t, createZone(`red`, "10.1.0.1", "10.1.1.1"))
	c := s.client("")
	for _, path := range []string{"/ui/fabric", "/ui/zones", "/ui/devices", "/ui/devices/10.1.0.1", "/ui/devices?q=script"} {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+viewerToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(raw)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<svg onload") {
			t.Errorf("%s: the NQN's markup is in the page as markup", path)
		}
		if path == "/ui/devices" && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the NQN is not shown as text", path)
		}
	}
}

// leaving is the API with one host gone between the device list and the
// question about it.
type leaving struct {
	inofv1.FabricServer
	gone string
}

func (l leaving) Visibility(ctx context.Context, req *inofv1.VisibilityRequest) (*inofv1.VisibilityResponse, error) {
	if req.GetHost() == l.gone {
		return nil, status.Errorf(codes.NotFound, "host %s is not registered", l.gone)
	}
	return l.FabricServer.Visibility(ctx, req)
}

// TestMatrixHostLeaving: a host that leaves while the matrix is asked is
// shown as gone; the page still renders.
func TestMatrixHostLeaving(t *testing.T) {
	s := newSite(t)
	h := console.New(leaving{FabricServer: s.fabric, gone: "10.1.0.2"}, console.Options{Logger: slog.New(slog.DiscardHandler)})
	rec := httptest.NewRecorder()
	ctx := api.WithIdentity(context.Background(), api.Identity{Name: "vera", Role: api.RoleViewer})
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/ui/zones", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "host no longer registered") {
		t.Errorf("%d\n%s", rec.Code, rec.Body)
	}
}

// TestControlCharactersAreEscaped: an NQN with a terminal escape and bytes
// that are not UTF-8 (from a switch of an older release) is shown escaped
// on every page; no page holds a control character or invalid UTF-8.
func TestControlCharactersAreEscaped(t *testing.T) {
	s := newSite(t)
	d := devices()
	d[0].NQN = "nqn.2014-08.org.example:\x1b[2J\x1b]0;owned\x07\xff"
	s.b.SetDevices(d...)
	s.commit(t, createZone("red", "10.1.0.1", "10.1.1.1"))
	c := s.client("")
	for _, path := range []string{"/ui/fabric", "/ui/zones", "/ui/devices", "/ui/devices/10.1.0.1", "/ui/events"} {
		code, body, _ := s.do(t, c, "GET", path, viewerToken)
		if code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
		if strings.ContainsAny(body, "\x1b\x07") || !utf8.ValidString(body) {
			t.Errorf("%s: a control character or invalid UTF-8 reached the page", path)
		}
		if strings.HasPrefix(path, "/ui/devices") && !strings.Contains(body, `\x1b[2J\x1b]0;owned\a\xff`) {
			t.Errorf("%s: the NQN is not shown escaped: %.300q", path, body[strings.Index(body, "example:"):])
		}
	}
}

// TestDevicePagesShowPins: a device a pin refuses is in no zone on the
// devices and device pages, and the device page lists the ports claiming
// its NQN.
func TestDevicePagesShowPins(t *testing.T) {
	s := newSite(t)
	const nqn = "nqn.2014-08.org.example:array1"
	rep := func(addr, sw, port string) api.Device {
		return inof.Report{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, NQN: nqn},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: inof.StateActive}, AccessPort: port}
	}
	devs := append(devices(), rep("10.1.1.5", "192.0.2.1", "eth3"), rep("10.1.1.66", "192.0.2.2", "eth9"))
	s.b.SetDevices(devs...)
	s.b.SetReports(devs...)
	s.commit(t, &inofv1.Edit{Edit: &inofv1.Edit_SetPin{SetPin: &inofv1.Pin{Nqn: nqn, At: []string{"192.0.2.1:eth3"}}}})
	c := s.client("")
	for path, want := range map[string][]string{
		"/ui/devices":           {"none (pin refused)"},
		"/ui/devices/10.1.1.66": {"refused by a pin", "NQN claimed on", "192.0.2.1:eth3 10.1.1.5", "192.0.2.2:eth9 10.1.1.66"},
		"/ui/devices/10.1.1.5":  {"NQN claimed on", "default"},
	} {
		code, body, _ := s.do(t, c, "GET", path, viewerToken)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in\n%s", path, w, body)
			}
		}
	}
}
