package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Setup makes what every daemon needs first: its logger, writing to w, and
// its own Prometheus registry holding the Go and process collectors.
func Setup(w io.Writer, lo LogOptions) (*slog.Logger, *prometheus.Registry, error) {
	log, err := NewLogger(w, lo)
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return log, reg, nil
}

// RunWithHTTP runs run(ctx) and, when listen is set, the /metrics and
// /healthz server beside it (bound before run starts, so a busy address
// fails at once). Either one ending ends the other; the errors of both are
// returned, joined.
func RunWithHTTP(ctx context.Context, listen string, reg *prometheus.Registry, health func() error, log *slog.Logger,
	run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var httpErr error
	if listen != "" {
		srv, err := ListenHTTP(listen, reg, health, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "listen", srv.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if httpErr = srv.Run(ctx); httpErr != nil {
				cancel()
			}
		}()
	}
	err := run(ctx)
	cancel()
	wg.Wait()
	return errors.Join(err, httpErr)
}
