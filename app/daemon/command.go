package daemon

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/openinof/inof/internal/buildinfo"
)

// Exit codes of the daemons (inofd, inof-host). They follow sysexits.h, so
// that a Go panic (exit 2) and a runtime failure (1) stay apart from the
// two mistakes a restart cannot fix; the systemd units name those in
// RestartPreventExitStatus=.
const (
	ExitOK      = 0  // stopped by SIGTERM or SIGINT
	ExitFailure = 1  // a runtime failure (a restart may help)
	ExitUsage   = 64 // EX_USAGE: an unknown flag, a stray argument, a missing --role
	ExitConfig  = 78 // EX_CONFIG: the configuration (file, environment, flags) is invalid
)

// ConfigError marks an invalid configuration: the daemon exits with
// ExitConfig. Its message has been printed already when Printed is set.
type ConfigError struct {
	Err     error
	Printed bool
}

func (e ConfigError) Error() string { return "invalid configuration:\n" + e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

// usageError marks a command line the command tree refused.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// runError marks an error of a daemon that ran.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// Command prepares a daemon's root command: --version prints the build
// (internal/buildinfo), a hidden --man-pages DIR its manual pages, positional
// arguments are refused, and errors are
// sorted for Execute: those of RunE are runtime failures (or ConfigError),
// every other one (flags, arguments) a usage error.
func Command(cmd *cobra.Command) *cobra.Command {
	cmd.Version = buildinfo.Read().String()
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q: %s takes flags only", args[0], c.Name())
		}
		return nil
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	if run := cmd.RunE; run != nil {
		run = addManPagesFlag(cmd, run)
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if err := run(c, args); err != nil {
				var ce ConfigError
				var ue usageError
				switch {
				case errors.As(err, &ce):
					return ce
				case errors.As(err, &ue):
					return ue
				}
				return runError{err}
			}
			return nil
		}
	}
	return cmd
}

// Execute runs a root command made with Command and returns the exit code,
// having told stderr why it is not 0: for a usage error the error, the
// usage line and where the help is; for an invalid configuration every
// problem (unless printed already); for a failure the error.
func Execute(cmd *cobra.Command, stderr io.Writer) int {
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	name := cmd.Name()
	var ce ConfigError
	var re runError
	switch {
	case errors.As(err, &ce):
		if !ce.Printed {
			fmt.Fprintf(stderr, "%s: %v\n", name, ce)
		}
		return ExitConfig
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "%s: %v\n", name, re.err)
		return ExitFailure
	default:
		fmt.Fprintf(stderr, "%s: %v\nUsage: %s\nRun '%s --help' for the flags.\n", name, err, cmd.UseLine(), name)
		return ExitUsage
	}
}

// UsageError returns err as a usage error (exit ExitUsage, printed with
// the usage line), for a command line that parsed but makes no sense
// (inofd without --role).
func UsageError(err error) error { return usageError{err} }

// RuntimeError returns err as a failure of a command that ran (exit
// ExitFailure, printed once, without the usage), for the RunE of a
// subcommand (inofd restore): Command sorts only the root's.
func RuntimeError(err error) error { return runError{err} }
