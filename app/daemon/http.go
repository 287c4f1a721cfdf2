package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openinof/inof/internal/connlimit"
)

// HTTPServer serves /metrics from one Prometheus registry (never the global
// one) and /healthz from a health function.
type HTTPServer struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// Limits of the /metrics and /healthz listener: scrapers and probes are
// few, and nobody who can reach the port may hold more (package connlimit;
// docs/security.md, "Listeners").
const (
	httpMaxConns       = 64
	httpMaxPerSource   = 16
	httpHeaderTimeout  = 5 * time.Second
	httpReadTimeout    = 10 * time.Second
	httpWriteTimeout   = 30 * time.Second
	httpIdleTimeout    = 60 * time.Second
	httpMaxHeaderBytes = 16 << 10
)

// ListenHTTP binds addr (host:port) at once, so that a busy or wrong address
// is an error at start-up, not later. health returns nil when the daemon is
// healthy (nil: always healthy); /healthz answers 200 "ok" or 503 with
// the error. The listener holds at most 64 connections (16 per source
// address), each bounded by header, read, write and idle timeouts.
func ListenHTTP(addr string, reg *prometheus.Registry, health func() error, log *slog.Logger) (*HTTPServer, error) {
	if log == nil {
		log = slog.Default()
	}
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http: listen %s: %w", addr, err)
	}
	ln, err := connlimit.New(tl, connlimit.Options{Name: "metrics", MaxConns: httpMaxConns, MaxPerSource: httpMaxPerSource,
		Logger: log, Registry: reg})
	if err != nil {
		tl.Close()
		return nil, fmt.Errorf("http: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if health == nil {
			fmt.Fprintln(w, "ok")
			return
		}
		if err := health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &HTTPServer{ln: ln, log: log, srv: &http.Server{Handler: mux, ReadHeaderTimeout: httpHeaderTimeout,
		ReadTimeout: httpReadTimeout, WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout,
		MaxHeaderBytes: httpMaxHeaderBytes, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}, nil
}

// Addr is the bound address (useful with port 0).
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Run serves until ctx ends, then shuts down, giving requests in flight up
// to five seconds.
func (s *HTTPServer) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown", "err", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
