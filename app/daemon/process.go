package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/openinof/inof/internal/buildinfo"
)

// Process is what every daemon makes first.
type Process struct {
	// Logging is the logger whose level and format a reload changes; Log
	// is its logger.
	Logging *Logging
	Log     *slog.Logger
	// Registry is the daemon's own Prometheus registry: the Go and process
	// collectors and inof_build_info.
	Registry *prometheus.Registry
}

// Setup makes the daemon's logger, writing to w (it also becomes the
// process's default logger, for the few libraries that log through
// slog.Default), and its registry. Log lines below warn are gathered into
// few writes, each written at most 10 ms after it was logged; warnings and
// errors go out at once, with what was gathered before them (Close at
// exit). program names the binary in inof_build_info.
func Setup(w io.Writer, program string, lo LogOptions) (*Process, error) {
	sink := newLogSink(w, logFlushDelay, logFlushSize)
	lg, err := NewLogging(sink, lo)
	if err != nil {
		return nil, err
	}
	lg.sink = sink
	slog.SetDefault(lg.Logger())
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfoGauge(program, buildinfo.Read()))
	return &Process{Logging: lg, Log: lg.Logger(), Registry: reg}, nil
}

// Close writes the log lines still gathered; what is logged after goes
// out at once. Call it before the process exits.
func (p *Process) Close() { p.Logging.sink.Close() }

// buildInfoGauge is inof_build_info: 1, labelled with what the binary was
// built from.
func buildInfoGauge(program string, in buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "inof_build_info",
		Help: "1, labelled with the binary's program name, module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"program": program, "version": in.Version, "revision": in.ShortRevision(),
			"goversion": in.GoVersion}})
	g.Set(1)
	return g
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
	// Ready is closed once the daemon serves (nil: at once, when the
	// runners start). Then systemd hears READY=1 through Notify.
	Ready <-chan struct{}
	// Notify, if set, tells systemd READY=1, STOPPING=1 and, when systemd
	// asked for a watchdog (WatchdogSec=), pings it twice per interval
	// while Health reports healthy: a daemon that stays unhealthy is
	// restarted by systemd.
	Notify *Notifier
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
	if o.Notify.Enabled() {
		side = append(side, o.systemd)
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

// systemd tells systemd when the daemon is ready and stopping, and feeds
// its watchdog.
func (o RunOptions) systemd(ctx context.Context) error {
	ready := o.Ready
	if ready == nil {
		c := make(chan struct{})
		close(c)
		ready = c
	}
	var ping <-chan time.Time
	if wd := o.Notify.Watchdog(); wd > 0 {
		t := time.NewTicker(wd / 2)
		defer t.Stop()
		ping = t.C
	}
	send := func(lines ...string) {
		if err := o.Notify.Send(lines...); err != nil {
			o.Logger.Warn("notifying systemd", "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			send("STOPPING=1")
			return nil
		case <-ready:
			ready = nil
			send("READY=1", "STATUS=serving")
			o.Logger.Info("ready")
		case <-ping:
			if o.Health != nil {
				if err := o.Health(); err != nil {
					o.Logger.Warn("unhealthy: not feeding the systemd watchdog", "err", err)
					continue
				}
			}
			send("WATCHDOG=1")
		}
	}
}
