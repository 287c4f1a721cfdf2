package main

import (
	"context"

	"github.com/openinof/inof/app/daemon"
)

// wiring is what one role adds to the daemon wiring the roles share
// (runRole): its options and the daemon object built from them.
type wiring[O any] struct {
	// defaults are the role's default options.
	defaults func() O
	// common picks the options every fabric daemon has out of the role's.
	common func(*O) *daemon.Common
	// liveKeys are the option keys a reload applies without a restart.
	liveKeys []string
	// build makes the role's daemon object from the loaded options.
	build func(opts O, p *daemon.Process) (built[O], error)
}

// built is a role's daemon object as runRole runs it.
type built[O any] struct {
	run     func(context.Context) error
	healthy func() error
	ready   <-chan struct{}
	// beside are runners beside it (the admin API server).
	beside []daemon.Runner
	// reload applies a reload's live keys (the log's are applied before).
	reload func(context.Context, O) error
}

// runRole loads and validates the role's options, sets up the log, the
// metrics registry and the Go runtime, builds the daemon object and runs
// it with the HTTP server, the reload on SIGHUP and systemd's
// notifications, until a signal or a failure ends it.
func runRole[O any, PO interface {
	*O
	daemon.Validator
}](env runEnv, w wiring[O]) error {
	opts := w.defaults()
	warnings, err := env.load(PO(&opts))
	if err != nil {
		return err
	}
	c := w.common(&opts)
	p, err := daemon.Setup(env.stderr, "inofd", c.Log)
	if err != nil {
		return err
	}
	defer p.Close()
	log := p.Log
	warnings.Log(log)
	defer daemon.StartRuntime(c.Runtime, log)()
	d, err := w.build(opts, p)
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: c.MetricsListen, Registry: p.Registry, Health: d.healthy, Logger: log,
		Ready: d.ready, Notify: env.notify, Beside: d.beside}
	reload := daemon.LiveReload(opts, w.defaults, func(o *O) error { _, err := env.load(PO(o)); return err },
		w.liveKeys, func(ctx context.Context, next O) error {
			if err := p.Logging.Apply(w.common(&next).Log); err != nil {
				return err
			}
			return d.reload(ctx, next)
		})
	ro.Beside = append(ro.Beside, daemon.Reloader{Signal: env.reload, Log: log, Notify: env.notify, Reload: reload}.Run)
	return daemon.Run(env.ctx, ro, d.run)
}
