package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/openinof/inof/inof/api"
	"github.com/openinof/inof/inof/daemon"
	"github.com/openinof/inof/inof/switchagent"
)

// switchRole is inofd --role switch.
var switchRole = role{flags: switchFlags, run: runSwitch}

func switchFlags(f *pflag.FlagSet) map[string]string {
	f.StringSlice("access-ports", nil, "(switch) interfaces hosts and targets register on")
	f.Duration("hold-down", 0, "(switch) how long a leaving device stays published as inactive")
	return map[string]string{
		"asn":           "asn",
		"router-id":     "router_id",
		"local-address": "local_address",
		"access-ports":  "access_ports",
		"hold-down":     "hold_down",
		"api-socket":    "api.socket",
	}
}

// runSwitch wires the switch agent, its read-only admin API and the HTTP
// server, and returns when a signal or a failure ends the agent.
func runSwitch(parent context.Context, load loadFunc, stderr io.Writer) error {
	opts := switchagent.DefaultOptions()
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
	agent, err := switchagent.New(switchagent.Config{Options: opts, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: reg, Health: agent.Healthy, Logger: log}
	if opts.API.Enabled() {
		// Read-only: zones and the lossless profile are edited on a
		// reflector. Bound before the agent starts, like the metrics.
		srv, err := api.NewServer(opts.API.ServeOptions(true, nil, log), agent.API())
		if err != nil {
			return err
		}
		ro.Beside = append(ro.Beside, srv.Run)
	}
	return daemon.Run(ctx, ro, agent.Run)
}
