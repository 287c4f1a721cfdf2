// Command inofd is the iNOF fabric daemon. One binary, one role per
// process: --role reflector runs a route reflector and zone authority
// (docs/reflector.md), --role switch a switch agent (docs/switch-agent.md);
// a switch agent without reflectors runs alone, in direct mode, keeping the
// zone store itself (docs/operations.md, "Topologies"). Each role lives in a
// file of its own that adds its flags and its run function to roles.
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

	"github.com/openinof/inof/app/daemon"
)

func main() {
	os.Exit(daemon.Execute(newCommand(os.Environ(), os.Stderr), os.Stderr))
}

// role is one way inofd runs.
type role struct {
	// flags adds the role's own flags (not those of sharedFlags) and
	// returns the configuration key each flag the role takes overrides,
	// shared ones included.
	flags func(*pflag.FlagSet) map[string]string
	// run loads the configuration (file, environment, flags), validates it
	// and runs the role until a signal (SIGTERM, SIGINT) or a fatal error;
	// SIGHUP reloads it.
	run func(env runEnv) error
}

// runEnv is what a role's run gets.
type runEnv struct {
	ctx    context.Context // ends on SIGTERM or SIGINT
	reload <-chan struct{} // one receive per SIGHUP
	load   loadFunc
	stderr io.Writer
	notify *daemon.Notifier // systemd's notification socket (Type=notify)
}

// loadFunc fills a role's options (holding its defaults) from the file,
// the environment and the set flags, and validates them. The warnings
// (deprecated keys) are for the role's log once it has one. An invalid
// configuration is a daemon.ConfigError.
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

// sharedFlags adds the flags both roles take, with a meaning of their own
// in each (their roles' flags maps name them).
func sharedFlags(f *pflag.FlagSet) {
	f.Uint32("asn", 0, "the fabric's AS number")
	f.String("router-id", "", "BGP router-id, IPv4 (unique per switch)")
	f.String("local-address", "", "source address of the BGP and BFD sessions")
	f.String("api-socket", "", "unix socket of the admin API (reflector default /run/inofd/api.sock; "+
		"a switch serves none unless set)")
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
			"Flags marked (reflector) or (switch) apply to that role only.\n" +
			"A switch without reflectors runs alone (direct mode): no BGP, it keeps the zone store\n" +
			"and takes zoning edits on its API socket.\n" +
			"SIGHUP reloads the configuration (docs/operations.md, \"Reload\").\n" +
			"Exit codes: 0 stopped by a signal, 1 failed while running, 64 usage error,\n" +
			"78 invalid configuration.",
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "YAML configuration file")
	f.StringVar(&roleName, "role", "", "what this process runs: "+strings.Join(roleNames(), ", "))
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.String("log-format", "text", "log format: text or json")
	f.String("metrics-listen", "", "address of /metrics and /healthz (empty in the file disables)")
	f.String("state-dir", "", "directory of the daemon's persistent state")
	sharedFlags(f)
	own := map[string]map[string]string{}
	for _, n := range roleNames() {
		own[n] = roles[n].flags(f)
	}
	labelRoleFlags(f, own)
	cmd.AddCommand(restoreCommand(environ, os.Stdout, stderr))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		rl, ok := roles[roleName]
		if !ok {
			if roleName == "" {
				return daemon.UsageError(fmt.Errorf("--role is required: one of %s", strings.Join(roleNames(), ", ")))
			}
			return daemon.UsageError(fmt.Errorf("--role %q: want one of %s", roleName, strings.Join(roleNames(), ", ")))
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
		if err := errors.Join(foreign...); err != nil {
			return daemon.UsageError(err)
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		// Caught before the configuration is read: from here on no
		// signal kills the daemon without its shutdown.
		sig := daemon.CatchSignals(ctx)
		defer sig.Stop()
		notify, err := daemon.NewNotifier(environ)
		if err != nil {
			return err
		}
		load := func(opts daemon.Validator) (daemon.Warnings, error) {
			var warnings daemon.Warnings
			err := daemon.Load(daemon.LoadOptions{File: file, Flags: cmd.Flags(), FlagKeys: keys, Environ: environ,
				Warn: warnings.Add}, opts)
			if err != nil {
				// The warnings (a misspelt INOF_* variable) may be why.
				for _, w := range warnings {
					err = errors.Join(err, errors.New(w))
				}
				return nil, daemon.ConfigError{Err: err}
			}
			return warnings, nil
		}
		return rl.run(runEnv{ctx: sig.Context, reload: sig.Reload, load: load, stderr: stderr, notify: notify})
	}
	return daemon.Command(cmd)
}

// labelRoleFlags starts the help text of each flag that only some roles
// take with those roles' names: "(switch) ...".
func labelRoleFlags(f *pflag.FlagSet, own map[string]map[string]string) {
	f.VisitAll(func(fl *pflag.Flag) {
		var takers []string
		for _, n := range roleNames() {
			if _, ok := own[n][fl.Name]; ok {
				takers = append(takers, n)
			}
		}
		if len(takers) > 0 && len(takers) < len(roles) {
			fl.Usage = "(" + strings.Join(takers, ", ") + ") " + fl.Usage
		}
	})
}
