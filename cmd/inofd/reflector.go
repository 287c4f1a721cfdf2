package main

import (
	"context"
	"io"

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

// runReflector wires the reflector, its admin API and the HTTP server, and
// returns when a signal or a failure ends the reflector.
func runReflector(parent context.Context, load loadFunc, stderr io.Writer) error {
	opts := reflector.DefaultOptions()
	warnings, err := load(&opts)
	if err != nil {
		return err
	}
	log, reg, err := daemon.Setup(stderr, opts.Log)
	if err != nil {
		return err
	}
	warnings.Log(log)
	ctx, stop := daemon.SignalContext(parent)
	defer stop()
	events := api.NewFeed(api.FeedOptions{})
	r, err := reflector.New(reflector.Config{Options: opts, Registry: reg, Events: events, Logger: log})
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: reg, Health: r.Healthy, Logger: log}
	if opts.API.Enabled() {
		// Bound before BGP starts, like the metrics listener; it answers
		// "not running" until the reflector is ready.
		srv, err := api.NewServer(opts.API.ServeOptions(false, events, log), r.API())
		if err != nil {
			return err
		}
		ro.Beside = append(ro.Beside, srv.Run)
	}
	return daemon.Run(ctx, ro, r.Run)
}
