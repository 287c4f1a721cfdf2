package main

import (
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
	return runRole(env, wiring[switchagent.Options]{
		defaults: switchagent.DefaultOptions,
		common:   func(o *switchagent.Options) *daemon.Common { return &o.Common },
		liveKeys: switchagent.LiveKeys,
		build:    buildSwitch,
	})
}

// buildSwitch makes the switch agent and its admin API server: in a
// fabric read-only (zones and the lossless profile are edited on a
// reflector); in direct mode the switch keeps the zone store and takes
// edits. The server is bound before the agent starts, like the metrics.
func buildSwitch(opts switchagent.Options, p *daemon.Process) (built[switchagent.Options], error) {
	log := p.Log
	events := api.NewFeed(api.FeedOptions{}) // the API's event feed: zoning (direct mode), pin refusals
	agent, err := switchagent.New(switchagent.Config{Options: opts, Registry: p.Registry, Logger: log,
		EventLogger: p.Logging.Events(), Events: events})
	if err != nil {
		return built[switchagent.Options]{}, err
	}
	b := built[switchagent.Options]{run: agent.Run, healthy: agent.Healthy, ready: agent.Ready(), reload: agent.Reload}
	if !opts.API.Enabled() && opts.Direct() {
		log.Warn("direct mode without api.socket or api.listen: zoning cannot be changed (the default zone is in force)")
	}
	if opts.API.Enabled() {
		so := opts.API.ServeOptions(!opts.Direct(), events, log)
		so.Role = "switch"
		so.Registry = p.Registry
		srv, err := api.NewServer(so, agent.API())
		if err != nil {
			return built[switchagent.Options]{}, err
		}
		b.beside = append(b.beside, srv.Run)
	}
	return b, nil
}
