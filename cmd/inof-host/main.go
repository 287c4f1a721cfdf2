// Command inof-host is the iNOF agent for servers and storage arrays: it
// registers its interfaces with the switch (nvme-snsd compatible), ACKs the
// switch's notifications and connects or disconnects NVMe-oF controllers
// with nvme-cli. See docs/host-agent.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/inof/daemon"
	"github.com/openinof/inof/inof/hostagent"
)

func main() {
	if err := newCommand(os.Environ(), os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
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
			"Configuration: YAML file (--config), INOF_* environment variables, flags.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
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
		opts := hostagent.DefaultOptions()
		err := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), FlagKeys: flagKeys, Environ: environ}, &opts)
		if err != nil {
			fmt.Fprintf(stderr, "inof-host: invalid configuration:\n%v\n", err)
			return err
		}
		if *dryRun {
			return dryRunLossless(cmd.Context(), opts, cmd.OutOrStdout(), stderr)
		}
		if err := run(cmd.Context(), opts, stderr); err != nil {
			fmt.Fprintf(stderr, "inof-host: %v\n", err)
			return err
		}
		return nil
	}
	return cmd
}

// dryRunLossless prints the plan for this host's interfaces.
func dryRunLossless(ctx context.Context, opts hostagent.Options, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	pl, err := hostagent.LosslessPlan(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "inof-host: %v\n", err)
		return err
	}
	_, err = io.WriteString(stdout, pl.Script())
	return err
}

// run wires the agent, the HTTP server and the signals, and returns when a
// signal or a fatal error ends the agent.
func run(parent context.Context, opts hostagent.Options, stderr io.Writer) error {
	if parent == nil {
		parent = context.Background()
	}
	log, reg, err := daemon.Setup(stderr, opts.Log)
	if err != nil {
		return err
	}
	ctx, stop := daemon.SignalContext(parent)
	defer stop()
	agent, err := hostagent.New(hostagent.Config{Options: opts, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	ro := daemon.RunOptions{MetricsListen: opts.MetricsListen, Registry: reg, Health: agent.Healthy, Logger: log}
	if err = daemon.Run(ctx, ro, agent.Run); err == nil {
		log.Info("inof-host stopped")
	}
	return err
}
