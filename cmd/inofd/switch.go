package main

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

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
	}
}

// runSwitch wires the switch agent, the HTTP server and the signals, and
// returns when a signal or a failure ends the agent.
func runSwitch(parent context.Context, load loadFunc, stderr io.Writer) error {
	opts := switchagent.DefaultOptions()
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
	agent, err := switchagent.New(switchagent.Config{Options: opts, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var running sync.WaitGroup
	var httpErr error
	if opts.MetricsListen != "" {
		srv, err := daemon.ListenHTTP(opts.MetricsListen, reg, agent.Healthy, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "listen", srv.Addr().String())
		running.Add(1)
		go func() {
			defer running.Done()
			if httpErr = srv.Run(runCtx); httpErr != nil {
				cancel()
			}
		}()
	}
	err = agent.Run(runCtx)
	cancel()
	running.Wait()
	return errors.Join(err, httpErr)
}
