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

// Runner is one part of a daemon: it runs until its context ends or it
// fails, and returns only when everything it started has stopped.
type Runner func(ctx context.Context) error

// RunOptions say what runs beside a daemon's main runner.
type RunOptions struct {
	// MetricsListen is the address of /metrics (from Registry) and
	// /healthz (from Health, nil: always healthy); empty serves neither.
	// It is bound before anything runs, so a busy address fails at once.
	MetricsListen string
	Registry      *prometheus.Registry
	Health        func() error
	Logger        *slog.Logger
	// Beside run next to the main runner (the admin API server): they
	// start with it and are stopped before it, so their calls in flight end
	// while what they read is still there.
	Beside []Runner
}

// Run runs main until ctx ends or a runner fails, with the HTTP server
// and the Beside runners next to it. Any one failing ends the others. On
// the way out the HTTP server and the Beside runners stop first, then
// main. The errors of all are returned, joined.
func Run(ctx context.Context, o RunOptions, main Runner) error {
	side := o.Beside
	if o.MetricsListen != "" {
		srv, err := ListenHTTP(o.MetricsListen, o.Registry, o.Health, o.Logger)
		if err != nil {
			return err
		}
		o.Logger.Info("metrics", "listen", srv.Addr().String())
		side = append([]Runner{srv.Run}, side...)
	}
	// The main runner's context ends only after the side runners are
	// done: when ctx ends, when one of them fails, or when main returns.
	mainCtx, stopMain := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMain()
	sideCtx, stopSide := context.WithCancel(ctx)
	defer stopSide()
	var wg sync.WaitGroup
	sideErrs := make([]error, len(side))
	for i, r := range side {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sideErrs[i] = r(sideCtx); sideErrs[i] != nil {
				stopSide()
			}
		}()
	}
	mainDone := make(chan struct{})
	go func() {
		select {
		case <-sideCtx.Done():
		case <-mainDone:
			stopSide()
		}
		wg.Wait()
		stopMain()
	}()
	err := main(mainCtx)
	close(mainDone)
	stopSide()
	wg.Wait()
	return errors.Join(append([]error{err}, sideErrs...)...)
}
