package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/switchagent"
)

// switchRole is inofd --role switch.
var switchRole = role{flags: switchFlags, run: runSwitch}

func switchFlags(f *pflag.FlagSet) map[string]string {
	f.StringSlice("access-ports", nil, "interfaces hosts and targets register on (comma-separated or repeated)")
	f.Duration("hold-down", 0, "how long a leaving device stays published as inactive")
	return map[string]string{
		"asn":           "asn",
		"router-id":     "router_id",
		"local-address": "local_address",
		"access-ports":  "access_ports",
		"hold-down":     "hold_down",
		"api-socket":    "api.socket",
	}
}

// runSwitch wires the switch agent, its read-only admin API, the HTTP
// server, the reload and systemd's notifications, and returns when a
// signal or a failure ends the agent.
func runSwitch(env runEnv) error {
	opts := switchagent.DefaultOptions()
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
	agent, err := switchagent.New(switchagent.Config{Options: opts, Registry: p.Registry, Logger: log,
		EventLogger: p.Logging.Events()})
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: p.Registry, Health: agent.Healthy, Logger: log,
		Ready: agent.Ready(), Notify: env.notify}
	if !opts.API.Enabled() && opts.Direct() {
		log.Warn("direct mode without api.socket or api.listen: zoning cannot be changed (the default zone is in force)")
	}
	if opts.API.Enabled() {
		// In a fabric read-only: zones and the lossless profile are edited
		// on a reflector. In direct mode the switch keeps the zone store
		// and takes edits. Bound before the agent starts, like the metrics.
		var events *api.Feed
		if opts.Direct() {
			events = api.NewFeed(api.FeedOptions{})
		}
		so := opts.API.ServeOptions(!opts.Direct(), events, log)
		so.Role = "switch"
		so.Registry = p.Registry
		srv, err := api.NewServer(so, agent.API())
		if err != nil {
			return err
		}
		ro.Beside = append(ro.Beside, srv.Run)
	}
	reload := daemon.LiveReload(opts, switchagent.DefaultOptions, func(o *switchagent.Options) error { _, err := env.load(o); return err },
		switchagent.LiveKeys, func(ctx context.Context, next switchagent.Options) error {
			if err := p.Logging.Apply(next.Log); err != nil {
				return err
			}
			return agent.Reload(ctx, next)
		})
	ro.Beside = append(ro.Beside, daemon.Reloader{Signal: env.reload, Log: log, Notify: env.notify, Reload: reload}.Run)
	return daemon.Run(env.ctx, ro, agent.Run)
}
