package console

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
)

// Prefix is the path the console is served under.
const Prefix = "/ui/"

//go:embed assets
var assets embed.FS

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// Now is the clock of "time left" and "ago" (time.Now if nil).
	Now func() time.Time
}

// Console is the console's handler.
type Console struct {
	f     inofv1.FabricServer
	log   *slog.Logger
	rl    *ratelimit.Log // refused requests
	now   func() time.Time
	pages map[string]*template.Template
	mux   *http.ServeMux

	simMu sync.Mutex
	sims  map[string]simResult // by profile YAML
}

// New returns the console serving what f answers.
func New(f inofv1.FabricServer, o Options) *Console {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Console{f: f, log: o.Logger, rl: ratelimit.NewLog(0, nil), now: o.Now, pages: map[string]*template.Template{}, sims: map[string]simResult{}}
	base := template.Must(template.New("layout.html").Funcs(c.funcs()).ParseFS(assets, "assets/layout.html", "assets/partials.html"))
	for _, p := range []string{"fabric", "zones", "matrix", "devices", "device", "events", "lossless", "history", "error"} {
		c.pages[p] = template.Must(template.Must(base.Clone()).ParseFS(assets, "assets/"+p+".html"))
	}
	static, _ := fs.Sub(assets, "assets/static")
	mux := http.NewServeMux()
	mux.Handle(Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(static)))
	mux.HandleFunc(Prefix+"{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"fabric", http.StatusFound)
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"fabric", http.StatusFound)
	})
	mux.HandleFunc(Prefix+"fabric", c.page("fabric", c.fabric))
	mux.HandleFunc(Prefix+"zones", c.page("zones", c.zones))
	mux.HandleFunc(Prefix+"zones/matrix", c.page("matrix", c.matrixPage))
	mux.HandleFunc(Prefix+"devices", c.page("devices", c.devices))
	mux.HandleFunc(Prefix+"devices/{addr}", c.page("device", c.device))
	mux.HandleFunc(Prefix+"events", c.page("events", c.events))
	mux.HandleFunc(Prefix+"events/stream", c.stream)
	mux.HandleFunc(Prefix+"lossless", c.page("lossless", c.lossless))
	mux.HandleFunc(Prefix+"lossless/simulation.svg", c.simulationSVG)
	mux.HandleFunc(Prefix+"history", c.page("history", c.history))
	c.mux = mux
	return c
}

// ServeHTTP refuses every method but GET and HEAD (the console changes
// nothing) and serves the pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		id := api.IdentityFrom(r.Context())
		c.rl.Warn(c.log, "console: write-like request refused: the console is read-only", "method", inof.Truncate(r.Method, 16),
			"path", inof.Truncate(r.URL.Path, 128), "identity", id.String(), "role", string(id.Role))
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console is read-only: change the fabric with inofctl", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	c.mux.ServeHTTP(w, r)
}

// view is what every page template gets.
type view struct {
	Page     string
	Title    string
	Identity api.Identity
	Version  *inofv1.VersionResponse
	Rendered time.Duration
	Data     any
}

// page renders template name with what load returns; an API error is
// shown on an error page with the matching HTTP status.
func (c *Console) page(name string, load func(*http.Request) (string, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := r.Context()
		v := view{Page: name, Identity: api.IdentityFrom(ctx)}
		v.Version, _ = c.f.Version(ctx, &inofv1.VersionRequest{})
		title, data, err := load(r)
		tmpl := c.pages[name]
		code := http.StatusOK
		if err != nil {
			st := status.Convert(err)
			code = httpStatus(st.Code())
			title, data, tmpl = "Error", errorView{Code: code, Message: st.Message(), Page: name}, c.pages["error"]
		}
		v.Title, v.Data = title, data
		v.Rendered = time.Since(start)
		var buf bytes.Buffer
		if err := tmpl.ExecuteTemplate(&buf, "layout.html", v); err != nil {
			c.log.Error("console: render", "page", name, "err", err)
			http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Server-Timing", fmt.Sprintf("render;dur=%.2f", float64(time.Since(start).Microseconds())/1000))
		w.WriteHeader(code)
		w.Write(buf.Bytes())
	}
}

type errorView struct {
	Code    int
	Message string
	Page    string
}

func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return roundDuration(c.now().Sub(t)).String() + " ago"
		},
		"left": func(t time.Time) string {
			d := t.Sub(c.now())
			if d <= 0 {
				return "expired"
			}
			return roundDuration(d).String()
		},
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"ms":    func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) },
		"join":  strings.Join,
		"split": strings.Fields,
		"lower": strings.ToLower,
		// text escapes what a device may have put in a string (control
		// characters, invalid UTF-8) before html/template escapes HTML.
		"text": inof.Printable,
		"role": roleName,
	}
}

// roundDuration keeps a duration readable.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d > time.Hour:
		return d.Round(time.Minute)
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// roleName is a device role in the vocabulary's words (inofv1's roles are
// the vocabulary's numbers).
func roleName(r inofv1.Role) string { return inof.Role(r).String() }

// bounded returns a context for one page's API calls.
func bounded(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}
