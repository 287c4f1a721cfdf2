package main

import (
	"context"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/console"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/reflector"
)

// reflectorRole is inofd --role reflector.
var reflectorRole = role{flags: reflectorFlags, run: runReflector}

func reflectorFlags(f *pflag.FlagSet) map[string]string {
	f.String("cluster-id", "", "cluster-id shared by the fabric's reflectors")
	f.Int("listen-port", 179, "BGP port")
	return map[string]string{
		"api-socket":    "api.socket",
		"asn":           "asn",
		"router-id":     "router_id",
		"cluster-id":    "cluster_id",
		"local-address": "local_address",
		"listen-port":   "listen.port",
	}
}

// runReflector wires the reflector, its admin API, the HTTP server, the
// reload and systemd's notifications, and returns when a signal or a
// failure ends the reflector.
func runReflector(env runEnv) error {
	opts := reflector.DefaultOptions()
	warnings, err := env.load(&opts)
	if err != nil {
		return err
	}
	p, err := daemon.Setup(env.stderr, "inofd", opts.Log)
	if err != nil {
		return err
	}
	defer p.Close()
	log := p.Log
	warnings.Log(log)
	defer daemon.StartRuntime(opts.Runtime, log)()
	events := api.NewFeed(api.FeedOptions{})
	r, err := reflector.New(reflector.Config{Options: opts, Registry: p.Registry, Events: events, Logger: log})
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: p.Registry, Health: r.Healthy, Logger: log,
		Ready: r.Ready(), Notify: env.notify}
	if opts.API.Enabled() {
		// Bound before BGP starts, like the metrics listener; it answers
		// "not running" until the reflector is ready.
		so := opts.API.ServeOptions(false, events, log)
		so.Role = "reflector"
		so.Registry = p.Registry
		so.Console = func(f inofv1.FabricServer) http.Handler { return console.New(f, console.Options{Logger: log}) }
		srv, err := api.NewServer(so, r.API())
		if err != nil {
			return err
		}
		ro.Beside = append(ro.Beside, srv.Run)
	}
	reload := daemon.LiveReload(opts, reflector.DefaultOptions, func(o *reflector.Options) error { _, err := env.load(o); return err },
		reflector.LiveKeys, func(_ context.Context, next reflector.Options) error {
			if err := p.Logging.Apply(next.Log); err != nil {
				return err
			}
			return r.Reload(next)
		})
	ro.Beside = append(ro.Beside, daemon.Reloader{Signal: env.reload, Log: log, Notify: env.notify, Reload: reload}.Run)
	return daemon.Run(env.ctx, ro, r.Run)
}
