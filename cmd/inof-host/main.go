// Command inof-host is the iNOF agent for servers and storage arrays: it
// registers its interfaces with the switch (nvme-snsd compatible), ACKs the
// switch's notifications and connects or disconnects NVMe-oF controllers
// with nvme-cli. See docs/host-agent.md.
package main

import (
	"context"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/app/hostagent"
)

func main() {
	os.Exit(daemon.Execute(newCommand(os.Environ(), os.Stderr), os.Stderr))
}

// flagKeys maps each flag to the configuration key it overrides.
var flagKeys = map[string]string{
	"log-level":          "log.level",
	"log-format":         "log.format",
	"metrics-listen":     "metrics_listen",
	"state-file":         "state_file",
	"host-nqn":           "host_nqn",
	"disconnect-on":      "disconnect_on",
	"disconnect-on-exit": "disconnect_on_exit",
	"restrain-time":      "restrain_time",
	"nvme-path":          "nvme.path",
	"apply-lossless":     "lossless.apply",
	"lossless-server":    "lossless.server",
	"lossless-file":      "lossless.file",
	"lossless-class":     "lossless.port_class",
}

func newCommand(environ []string, stderr io.Writer) *cobra.Command {
	var file string
	def := hostagent.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "inof-host",
		Short: "iNOF host and storage agent: registration, notifications, nvme connect/disconnect",
		Long: "inof-host registers the configured interfaces with the iNOF switch agent, ACKs its\n" +
			"notifications and connects or disconnects NVMe-oF controllers with nvme-cli.\n" +
			"Configuration: YAML file (--config), INOF_* environment variables, flags.\n" +
			"SIGHUP reloads the configuration (docs/host-agent.md, \"Reload\").\n" +
			"Exit codes: 0 stopped by a signal, 1 failed while running, 64 usage error,\n" +
			"78 invalid configuration.",
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "YAML configuration file")
	f.String("log-level", def.Log.Level, "log level: debug, info, warn, error")
	f.String("log-format", def.Log.Format, "log format: text or json")
	f.String("metrics-listen", def.MetricsListen, "address of /metrics and /healthz (empty disables)")
	f.String("state-file", def.StateFile, "file remembering the controllers this agent created")
	f.String("host-nqn", "", "host NQN (default: read from host_nqn_file)")
	f.String("disconnect-on", string(def.DisconnectOn), "which inactive notifications disconnect: forced, all, never")
	f.Bool("disconnect-on-exit", def.DisconnectOnExit, "disconnect this agent's controllers on SIGTERM")
	f.Duration("restrain-time", def.RestrainTime, "delay of disconnects; an active within it cancels the disconnect")
	f.String("nvme-path", def.NVMe.Path, "the nvme-cli binary")
	f.Bool("apply-lossless", def.Lossless.Apply, "configure the NICs with the fabric's lossless profile (dcb and mlx5 ECN sysfs)")
	f.String("lossless-server", "", "admin API serving the lossless profile (a switch agent or reflector)")
	f.String("lossless-file", "", "read the lossless profile from this YAML file instead of a server")
	f.String("lossless-class", def.Lossless.PortClass, "the profile's port class of this host's NICs")
	dryRun := f.Bool("dry-run", false, "print the lossless commands this host would run, then exit")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		// Caught before the configuration is read: from here on no
		// signal kills the agent without its shutdown.
		sig := daemon.CatchSignals(ctx)
		defer sig.Stop()
		load := func(opts *hostagent.Options) error {
			err := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), FlagKeys: flagKeys, Environ: environ}, opts)
			if err != nil {
				return daemon.ConfigError{Err: err}
			}
			return nil
		}
		opts := hostagent.DefaultOptions()
		if err := load(&opts); err != nil {
			return err
		}
		if *dryRun {
			return dryRunLossless(sig.Context, opts, cmd.OutOrStdout())
		}
		notify, err := daemon.NewNotifier(environ)
		if err != nil {
			return err
		}
		return run(sig, notify, opts, load, stderr)
	}
	return daemon.Command(cmd)
}

// dryRunLossless prints the plan for this host's interfaces.
func dryRunLossless(ctx context.Context, opts hostagent.Options, stdout io.Writer) error {
	pl, err := hostagent.LosslessPlan(ctx, opts)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, pl.Script())
	return err
}

// run wires the agent, the HTTP server, the reload and systemd's
// notifications, and returns when a signal or a fatal error ends the
// agent.
func run(sig *daemon.Signals, notify *daemon.Notifier, opts hostagent.Options, load func(*hostagent.Options) error,
	stderr io.Writer) error {
	p, err := daemon.Setup(stderr, "inof-host", opts.Log)
	if err != nil {
		return err
	}
	defer p.Close()
	log := p.Log
	agent, err := hostagent.New(hostagent.Config{Options: opts, Registry: p.Registry, Logger: log})
	if err != nil {
		return err
	}
	reload := daemon.LiveReload(opts, hostagent.DefaultOptions, load, hostagent.LiveKeys,
		func(_ context.Context, next hostagent.Options) error {
			if err := p.Logging.Apply(next.Log); err != nil {
				return err
			}
			return agent.Reload(next)
		})
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: p.Registry, Health: agent.Healthy, Logger: log,
		Ready: agent.Ready(), Notify: notify,
		Beside: []daemon.Runner{daemon.Reloader{Signal: sig.Reload, Log: log, Notify: notify, Reload: reload}.Run}}
	if err = daemon.Run(sig.Context, ro, agent.Run); err == nil {
		log.Info("inof-host stopped")
	}
	return err
}
