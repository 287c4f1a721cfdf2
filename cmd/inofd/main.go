// Command inofd is the iNOF fabric daemon. One binary, one role per
// process: --role reflector runs a route reflector and zone authority
// (docs/reflector.md), --role switch a switch agent (docs/switch-agent.md). Each role lives in a file of its own that adds its
// flags and its run function to roles.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openinof/inof/inof/daemon"
)

func main() {
	if err := newCommand(os.Environ(), os.Stderr).Execute(); err != nil {
		os.Exit(1)
	}
}

// role is one way inofd runs.
type role struct {
	// flags adds the role's own flags and returns the configuration key
	// each one overrides.
	flags func(*pflag.FlagSet) map[string]string
	// run loads the configuration (file, environment, flags), validates it
	// and runs the role until a signal (SIGTERM, SIGINT) or a fatal error.
	run func(ctx context.Context, load loadFunc, stderr io.Writer) error
}

// loadFunc fills a role's options (holding its defaults) from the file,
// the environment and the set flags, and validates them. The warnings
// (deprecated keys) are for the role's log once it has one.
type loadFunc func(opts daemon.Validator) (daemon.Warnings, error)

// roles are the roles inofd knows, by --role value.
var roles = map[string]role{
	"reflector": reflectorRole,
	"switch":    switchRole,
}

// commonFlagKeys are the flags every role has.
var commonFlagKeys = map[string]string{
	"log-level":      "log.level",
	"log-format":     "log.format",
	"metrics-listen": "metrics_listen",
	"state-dir":      "state_dir",
}

func roleNames() []string {
	var out []string
	for n := range roles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func newCommand(environ []string, stderr io.Writer) *cobra.Command {
	var file, roleName string
	cmd := &cobra.Command{
		Use:   "inofd --role " + strings.Join(roleNames(), "|"),
		Short: "iNOF fabric daemon: route reflector and zone authority, or switch agent",
		Long: "inofd runs one role of the iNOF control plane per process.\n" +
			"Configuration: YAML file (--config), INOF_* environment variables, flags.\n" +
			"Flags marked (reflector) apply to that role only.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "YAML configuration file")
	f.StringVar(&roleName, "role", "", "what this process runs: "+strings.Join(roleNames(), ", "))
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("log-format", "text", "log format: text or json")
	f.String("metrics-listen", "", "address of /metrics and /healthz (empty in the file disables)")
	f.String("state-dir", "", "directory of the daemon's persistent state")
	own := map[string]map[string]string{}
	for _, n := range roleNames() {
		own[n] = roles[n].flags(f)
	}
	cmd.AddCommand(restoreCommand(environ, os.Stdout, stderr))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		rl, ok := roles[roleName]
		if !ok {
			err := fmt.Errorf("--role %q: want one of %s", roleName, strings.Join(roleNames(), ", "))
			fmt.Fprintf(stderr, "inofd: %v\n", err)
			return err
		}
		keys := map[string]string{}
		for k, v := range commonFlagKeys {
			keys[k] = v
		}
		for k, v := range own[roleName] {
			keys[k] = v
		}
		var foreign []error
		cmd.Flags().Visit(func(fl *pflag.Flag) {
			if _, mine := keys[fl.Name]; !mine && fl.Name != "config" && fl.Name != "role" {
				foreign = append(foreign, fmt.Errorf("--%s does not apply to role %s", fl.Name, roleName))
			}
		})
		load := func(opts daemon.Validator) (daemon.Warnings, error) {
			var warnings daemon.Warnings
			lerr := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), FlagKeys: keys, Environ: environ,
				Warn: warnings.Add}, opts)
			if err := errors.Join(append(foreign, lerr)...); err != nil {
				fmt.Fprintf(stderr, "inofd: invalid configuration:\n%v\n", err)
				return nil, configError{err}
			}
			return warnings, nil
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		if err := rl.run(ctx, load, stderr); err != nil {
			var ce configError
			if !errors.As(err, &ce) {
				fmt.Fprintf(stderr, "inofd: %v\n", err)
			}
			return err
		}
		return nil
	}
	return cmd
}

// configError marks an error already reported as an invalid configuration.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }
