package main

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/openinof/inof/inof/api"
	"github.com/openinof/inof/inof/daemon"
	"github.com/openinof/inof/inof/reflector"
)

// reflectorRole is inofd --role reflector.
var reflectorRole = role{flags: reflectorFlags, run: runReflector}

func reflectorFlags(f *pflag.FlagSet) map[string]string {
	f.Uint32("asn", 0, "(reflector) the fabric's AS number")
	f.String("router-id", "", "(reflector) BGP router-id, IPv4")
	f.String("cluster-id", "", "(reflector) cluster-id shared by the fabric's reflectors")
	f.String("local-address", "", "(reflector) this reflector's session address (BFD source)")
	f.Int("listen-port", 179, "(reflector) BGP port")
	f.String("api-socket", "", "(reflector) unix socket of the admin API (default "+api.DefaultSocket+"; empty in the file disables)")
	return map[string]string{
		"api-socket":    "api.socket",
		"asn":           "asn",
		"router-id":     "router_id",
		"cluster-id":    "cluster_id",
		"local-address": "local_address",
		"listen-port":   "listen.port",
	}
}

// runReflector wires the reflector, the HTTP server and the signals, and
// returns when a signal or the speaker's failure ends the reflector.
func runReflector(parent context.Context, load loadFunc, stderr io.Writer) error {
	opts := reflector.DefaultOptions()
	if err := load(&opts); err != nil {
		return err
	}
	log, err := daemon.NewLogger(stderr, opts.Log)
	if err != nil {
		return err
	}
	ctx, stop := daemon.SignalContext(parent)
	defer stop()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	events := api.NewFeed(api.FeedOptions{})
	r, err := reflector.New(reflector.Config{Options: opts, Registry: reg, Events: events, Logger: log})
	if err != nil {
		return err
	}
	var apiSrv *api.Server
	if opts.API.Enabled() {
		// Bound before BGP starts, like the metrics listener.
		apiSrv, err = api.NewServer(opts.API.ServeOptions(false, events, log), r.API())
		if err != nil {
			return err
		}
	}
	var srv *daemon.HTTPServer
	if opts.MetricsListen != "" {
		// Bound before BGP starts: a busy address fails the start.
		if srv, err = daemon.ListenHTTP(opts.MetricsListen, reg, r.Healthy, log); err != nil {
			closeAPI(apiSrv)
			return err
		}
	}
	if err := r.Start(ctx); err != nil {
		closeAPI(apiSrv)
		return err
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var httpErr error
	if srv != nil {
		log.Info("metrics", "listen", srv.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if httpErr = srv.Run(hctx); httpErr != nil {
				cancel()
			}
		}()
	}
	var apiErr error
	if apiSrv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if apiErr = apiSrv.Run(hctx); apiErr != nil {
				cancel()
			}
		}()
	}
	select {
	case <-hctx.Done():
	case <-r.Done():
	}
	// The API stops first: calls in flight end before the store closes.
	cancel()
	wg.Wait()
	err = r.Stop()
	return errors.Join(err, httpErr, apiErr)
}

// closeAPI releases the listeners of an API server that never ran.
func closeAPI(s *api.Server) {
	if s != nil {
		s.Close()
	}
}
