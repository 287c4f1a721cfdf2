//go:build privileged

package console

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/internal/testpki"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

// consoleAddr is where rr1 serves the console, inside its namespace.
const consoleAddr = "127.0.0.1:9443"

const viewerToken = "console-viewer-token"

// widths are the two the screenshots are taken at: a laptop's and a phone's.
var widths = []struct {
	name          string
	width, height int64
	mobile        bool
}{{"laptop", 1280, 860, false}, {"phone", 390, 844, true}}

// TestPrivConsoleInChromium: a fabric of one reflector (console on), two
// leaves and three inof-host devices; Chromium, with a viewer's token, opens
// every page at two widths, then watches the events page and the zones
// page while inofctl creates a zone, then tries to write.
func TestPrivConsoleInChromium(t *testing.T) {
	netns.RequireRoot(t)
	chromium := netns.RequireTool(t, "chromium")
	start := time.Now()
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "console-ca")
	cert, key := ca.Server("rr1", net.IPv4(127, 0, 0, 1))
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("tokens:\n  - {name: vera, role: viewer, sha256: %s}\n",
		apiclient.HashToken(viewerToken))), 0o600); err != nil {
		t.Fatal(err)
	}
	// Chromium takes the CPU for seconds at times: BFD at its 300 ms
	// default would flap on two busy cores and take the records with it.
	slowBFD := map[string]any{"enabled": true, "desired_min_tx": "1s", "required_min_rx": "1s", "detect_mult": 5}
	f := topo.Start(t, topo.Spec{
		SwitchConfig: func(_ string, cfg map[string]any) { cfg["bfd"] = slowBFD },
		Reflectors:   []string{"rr1"},
		Switches:     []string{"leaf1", "leaf2"},
		Devices: []topo.Device{
			{Name: "h1", NICs: []topo.NIC{{Switch: "leaf1", Role: "host", Protocol: "tcp"}}},
			{Name: "h2", NICs: []topo.NIC{{Switch: "leaf2", Role: "host", Protocol: "tcp"}}},
			{Name: "tgt", NICs: []topo.NIC{{Switch: "leaf2", Role: "target", Protocol: "tcp", Port: 4420,
				NQN: "nqn.2014-08.org.example:console-tgt"}}},
		},
		ReflectorConfig: func(_ string, cfg map[string]any) {
			a, _ := cfg["api"].(map[string]any)
			if a == nil {
				a = map[string]any{}
			}
			a["console_listen"], a["tls_cert"], a["tls_key"], a["tokens_file"] = consoleAddr, cert, key, tokens
			cfg["api"] = a
			cfg["bfd"] = slowBFD
		},
	})
	if err := f.WaitEstablished(topo.StartTimeout); err != nil {
		t.Fatal(err)
	}
	rr := f.Node("rr1")
	h1, h2, tgt := f.Node("h1").Links[0].Addr().String(), f.Node("h2").Links[0].Addr().String(), f.Node("tgt").Links[0].Addr().String()
	if _, err := rr.Inofctl("zone", "create", "red", h1, tgt, "--yes"); err != nil {
		t.Fatal(err)
	}
	if err := topo.Poll(topo.StartTimeout, func() (bool, error) {
		out, err := rr.Inofctl("device", "list")
		return err == nil && strings.Contains(out, h1) && strings.Contains(out, h2) && strings.Contains(out, tgt), fmt.Errorf("%v: %s", err, out)
	}); err != nil {
		t.Fatalf("devices never all registered: %v", err)
	}
	// The reflector's own row, side by side with its peers (none here),
	// shows the zoning revision inofctl reports.
	var refls struct {
		Item struct {
			Reflectors []struct {
				Revision string `json:"revision"`
			} `json:"reflectors"`
		} `json:"item"`
	}
	if out, err := rr.Inofctl("reflector", "list", "-o", "json"); err != nil || json.Unmarshal([]byte(out), &refls) != nil ||
		len(refls.Item.Reflectors) != 1 || refls.Item.Reflectors[0].Revision == "" {
		t.Fatalf("inofctl reflector list: %v\n%s", err, out)
	}
	base := "https://" + forward(t, rr.NS, consoleAddr)
	fabricUp := time.Now()

	art := artifacts(t)
	ctx, cancel := browser(t, chromium)
	defer cancel()
	problems := watchConsole(ctx)
	if err := chromedp.Do(ctx, bearer(viewerToken)); err != nil {
		t.Fatal(err)
	}

	// Every page at both widths, with the fabric's real names in it.
	pages := []struct {
		path string
		want []string
	}{
		{"/ui/fabric", []string{"leaf " + f.Node("leaf1").Addr.String(), f.Node("leaf2").Addr.String(), "established", "up",
			"generation clock", refls.Item.Reflectors[0].Revision}},
		{"/ui/zones", []string{"red", h1, tgt, "same zone red"}},
		{"/ui/devices", []string{h1, h2, tgt, "nqn.2014-08.org.example:console-tgt", "3 of 3 devices"}},
		{"/ui/devices/" + tgt, []string{"Hosts that see it", h1, "same zone red"}},
		{"/ui/events", []string{"zoning", "device joined"}},
		{"/ui/lossless", []string{"Valid", "Headroom and ECN per speed", "Incast simulation"}},
		{"/ui/history", []string{"root", "zone red"}},
	}
	for _, w := range widths {
		if err := chromedp.Do(ctx, viewport(w.width, w.height, w.mobile)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			text, took := load(t, ctx, base+p.path)
			for _, want := range p.want {
				if !strings.Contains(text, want) {
					t.Errorf("%s (%s): no %q on the page:\n%s", p.path, w.name, want, text)
				}
			}
			if w.name == "laptop" {
				t.Logf("%-22s loaded in %v (navigation: request to load event)", p.path, took)
			}
			shot(t, ctx, art, p.path, w.name)
		}
	}

	// Dark: the fabric and zones pages as a browser that prefers it shows them.
	dark := func(on bool) chromedp.Action[chromedp.Void] {
		v := "light"
		if on {
			v = "dark"
		}
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	if err := chromedp.Do(ctx, viewport(1280, 860, false), dark(true)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ui/fabric", "/ui/zones"} {
		load(t, ctx, base+p)
		shot(t, ctx, art, p, "laptop-dark")
	}
	if err := chromedp.Do(ctx, dark(false)); err != nil {
		t.Fatal(err)
	}
	// Without JavaScript: a filter is a plain form, the pages are whole.
	nctx, ncancel := chromedp.NewContext(ctx)
	defer ncancel()
	if err := chromedp.Do(nctx, bearer(viewerToken), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"/ui/devices?role=host": {h1, h2, "2 of 3 devices"},
		"/ui/zones":             {"same zone red", "hard zoning blocks"},
		"/ui/events":            {"Without JavaScript this page does not update by itself", "device joined"},
	} {
		text, _ := load(t, nctx, base+path)
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s without JavaScript: no %q in\n%s", path, w, text)
			}
		}
	}
	shot(t, nctx, art, "/ui/events-nojs", "laptop")
	ncancel()

	// Pages and live parts so far with no console error; the writes below
	// make the browser log their refusals.
	for _, p := range problems() {
		t.Errorf("browser console: %s", p)
	}

	// Live: the events page in one tab and the zones page in another, a
	// marker in each that a reload would clear; inofctl adds h2 to a zone
	// with the target.
	if err := chromedp.Do(ctx, viewport(1280, 860, false)); err != nil {
		t.Fatal(err)
	}
	zctx, zcancel := chromedp.NewContext(ctx)
	defer zcancel()
	zproblems := watchConsole(zctx)
	if err := chromedp.Do(zctx, bearer(viewerToken)); err != nil {
		t.Fatal(err)
	}
	load(t, ctx, base+"/ui/events")
	load(t, zctx, base+"/ui/zones")
	cellJS := fmt.Sprintf(`(() => { const r = [...document.querySelectorAll("#matrix tbody tr")].find(r => r.cells[0].textContent.trim() === %q);
		const i = [...document.querySelectorAll("#matrix thead th")].findIndex(th => th.textContent.trim() === %q);
		return r && i > 0 ? r.cells[i].textContent.trim() : "" })()`, h2, tgt)
	for _, c := range []context.Context{ctx, zctx} {
		if _, err := chromedp.Run(c, chromedp.Poll[bool](`document.querySelector(".live:not([hidden])") !== null`,
			chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("the live stream never opened: %v", err)
		}
		if _, err := chromedp.Run(c, chromedp.Evaluate[bool](`window.__noReload = true`)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := chromedp.Run(zctx, chromedp.Evaluate[string](cellJS))
	if err != nil || !strings.HasPrefix(before, "✗") {
		t.Fatalf("matrix %s → %s before the change: %q (%v), want not visible", h2, tgt, before, err)
	}
	zoningRows := `document.querySelectorAll('#events tbody tr[data-kind="zoning"]').length`
	n0, err := chromedp.Run(ctx, chromedp.Evaluate[int](zoningRows))
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	if _, err := rr.Inofctl("zone", "create", "blue", h2, tgt, "--yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`%s > %d && window.__noReload === true`, zoningRows, n0),
		chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("the zoning event never reached the open events page: %v", err)
	}
	seenEvents := time.Since(changed)
	if _, err := chromedp.Run(zctx, chromedp.Poll[bool](fmt.Sprintf(`%s.startsWith("✓") && %s.includes("same zone blue") && window.__noReload === true`, cellJS, cellJS),
		chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("the matrix never showed %s seeing %s: %v", h2, tgt, err)
	}
	seenMatrix := time.Since(changed)
	t.Logf("inofctl zone create → row on the open events page in %v, matrix cell ✓ in %v (inofctl's own run included)", seenEvents, seenMatrix)
	// Pause holds new events back (and counts them); resume shows them.
	n1, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("pause").click(), `+zoningRows))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Inofctl("zone", "add", "blue", h1, "--yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`/[1-9]\d* waiting/.test(document.getElementById("pause").textContent) && %s === %d`, zoningRows, n1),
		chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("paused: the zoning event was not held back and counted: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("pause").click(), true`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`%s > %d`, zoningRows, n1),
		chromedp.WithPollingTimeout(5*time.Second), chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
		t.Fatalf("resumed: the held event never showed: %v", err)
	}
	shot(t, ctx, art, "/ui/events-live", "laptop")
	shot(t, zctx, art, "/ui/zones-live", "laptop")
	why, err := rr.Inofctl("device", "why", h2, tgt)
	if err != nil || !strings.Contains(why, "same zone blue") {
		t.Errorf("inofctl device why %s %s: %v %s (the matrix says same zone blue)", h2, tgt, err, why)
	}

	// A viewer's browser cannot write: every write-like method on every
	// page is refused, and the zoning stays as inofctl left it.
	revBefore, err := rr.Inofctl("zoning", "show")
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Promise.all(
		["POST", "PUT", "PATCH", "DELETE"].flatMap(m => ["/ui/zones", "/ui/zones/matrix", "/ui/devices", "/ui/events/stream", "/ui/lossless", "/ui/history"]
			.map(p => fetch(p, {method: m, body: "zone=evil", headers: {"Content-Type": "application/x-www-form-urlencoded"}}).then(r => r.status))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range statuses {
		if s != 405 {
			t.Errorf("write-like request %d from the viewer's browser: status %d, want 405", i, s)
		}
	}
	if revAfter, err := rr.Inofctl("zoning", "show"); err != nil || revAfter != revBefore {
		t.Errorf("the zoning changed after the viewer's writes:\n%s\n→\n%s (%v)", revBefore, revAfter, err)
	}
	// The reflector's listener itself: nothing without a known token.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool(t, ca.File)}}}
	for tok, want := range map[string]int{"": 401, "wrong": 401, viewerToken: 200} {
		req, _ := http.NewRequest("GET", base+"/ui/fabric", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: status %d, want %d", tok, resp.StatusCode, want)
		}
	}

	cancel()
	zcancel()
	for _, p := range zproblems() {
		t.Errorf("browser console (zones tab): %s", p)
	}
	t.Logf("fabric up in %v, browser part %v; screenshots in %s", fabricUp.Sub(start), time.Since(fabricUp), art)
}

// bearer makes the tab send the token with every request, as a browser
// that answered the login prompt sends its credentials.
func bearer(token string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + token}})
		return err
	})
}

func pool(t *testing.T, file string) *x509.CertPool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(b)
	return p
}

// forward listens on the host's loopback and carries each connection to
// addr inside ns (the browser runs outside the fabric's namespaces).
func forward(t *testing.T, ns *netns.NS, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var up net.Conn
			if err := ns.Do(func() (err error) { up, err = net.DialTimeout("tcp", addr, 5*time.Second); return err }); err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			go func() { defer wg.Done(); io.Copy(c, up); c.Close(); up.Close() }()
		}
	}()
	return l.Addr().String()
}

// artifacts is where the screenshots go: $INOF_ARTIFACTS/console, or a
// directory of the test's.
func artifacts(t *testing.T) string {
	dir := filepath.Join(os.Getenv("INOF_ARTIFACTS"), "console")
	if os.Getenv("INOF_ARTIFACTS") == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("inof-console-shots-%d", os.Getpid()))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts headless Chromium (no sandbox: the test runs as root; the
// console's certificate is the test CA's, which the browser does not know).
func browser(t *testing.T, path string) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("disable-gpu", true), chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		acancel()
		t.Fatalf("chromium: %v", err)
	}
	return ctx, func() { cancel(); acancel() }
}

// watchConsole collects the tab's console errors and exceptions; the
// returned func lists them.
func watchConsole(ctx context.Context) func() []string {
	var mu sync.Mutex
	var out []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), out...)
	}
}

func viewport(w, h int64, mobile bool) chromedp.Action[chromedp.Void] {
	if mobile {
		return chromedp.EmulateViewport(w, h, chromedp.EmulateScale(2), chromedp.EmulateMobile)
	}
	return chromedp.EmulateViewport(w, h)
}

// load navigates to url, waits for the page and returns its text and how
// long the navigation took.
func load(t *testing.T, ctx context.Context, url string) (string, time.Duration) {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(lctx, chromedp.Navigate(url), chromedp.WaitVisible("main")); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	text, err := chromedp.Run(lctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := chromedp.Run(lctx, chromedp.Evaluate[float64](`(() => { const n = performance.getEntriesByType("navigation")[0]; return n.loadEventEnd - n.requestStart })()`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "Error\n") && strings.Contains(text, "Back") {
		t.Errorf("%s shows an error page:\n%s", url, text)
	}
	return text, time.Duration(ms * float64(time.Millisecond))
}

// shot saves a full-page screenshot of the tab.
func shot(t *testing.T, ctx context.Context, dir, path, width string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	name := strings.Trim(strings.NewReplacer("/", "-", ".", "_").Replace(strings.TrimPrefix(path, "/ui/")), "-") + "-" + width + ".png"
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
