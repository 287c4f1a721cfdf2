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
	return runRole(env, wiring[reflector.Options]{
		defaults: reflector.DefaultOptions,
		common:   func(o *reflector.Options) *daemon.Common { return &o.Common },
		liveKeys: reflector.LiveKeys,
		build:    buildReflector,
	})
}

// buildReflector makes the reflector and its admin API server, bound
// before BGP starts, like the metrics listener (it answers "not running"
// until the reflector is ready).
func buildReflector(opts reflector.Options, p *daemon.Process) (built[reflector.Options], error) {
	log := p.Log
	events := api.NewFeed(api.FeedOptions{})
	r, err := reflector.New(reflector.Config{Options: opts, Registry: p.Registry, Events: events, Logger: log})
	if err != nil {
		return built[reflector.Options]{}, err
	}
	b := built[reflector.Options]{run: r.Run, healthy: r.Healthy, ready: r.Ready(),
		reload: func(_ context.Context, next reflector.Options) error { return r.Reload(next) }}
	if opts.API.Enabled() {
		so := opts.API.ServeOptions(false, events, log)
		so.Role = "reflector"
		so.Registry = p.Registry
		so.Console = func(f inofv1.FabricServer) http.Handler { return console.New(f, console.Options{Logger: log}) }
		srv, err := api.NewServer(so, r.API())
		if err != nil {
			return built[reflector.Options]{}, err
		}
		b.beside = append(b.beside, srv.Run)
	}
	return b, nil
}
