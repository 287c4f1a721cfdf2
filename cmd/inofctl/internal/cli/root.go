// Package cli is the command tree of inofctl.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api/apiclient"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/app/daemon/config"
	"github.com/openinof/inof/internal/buildinfo"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command ran and failed
	ExitUsage = 2 // bad command line or configuration
)

// IO is what a run of inofctl reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// Environ is the environment as "KEY=value" entries.
	Environ []string
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Main runs inofctl with args until it is done or ctx ends (events
// --follow runs until then) and returns the exit code.
func Main(ctx context.Context, args []string, stdio IO) int {
	a := newApp(stdio)
	defer a.close()
	root := a.command()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if why := apiclient.Unreachable(err, a.opts.Server); why != "" {
		fmt.Fprintf(stdio.Err, "inofctl: cannot reach the API: %s\n", why)
		return ExitError
	}
	fmt.Fprintf(stdio.Err, "inofctl: %s\n", message(err))
	var xe exitError
	if errors.As(err, &xe) {
		return xe.code
	}
	var re runError
	if errors.As(err, &re) {
		return ExitError
	}
	fmt.Fprintf(stdio.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
	return ExitUsage
}

// runError marks an error of a command that ran (exit 1); every other
// error from the command tree is a usage error (exit 2).
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// message formats an error, naming the gRPC code of a server error.
func message(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st.Code() != codes.OK {
			return fmt.Sprintf("%s (%s)", st.Message(), st.Code())
		}
	}
	return err.Error()
}

// app holds what every command shares: the options, once loaded, the
// streams and the API connection, with the helpers every command uses (run,
// print, listVerb, the completions). The commands of each noun are a type
// of their own that embeds it (zoneCmds, deviceCmds, …; through editor,
// those that change the zoning).
type app struct {
	io         IO
	opts       Options
	configFile string
	conn       *grpc.ClientConn
	now        func() time.Time // for the time left of a graceful-restart hold
}

// NewCommand returns the root command (for documentation and completion;
// Main runs it).
func NewCommand(stdio IO) *cobra.Command { return newApp(stdio).command() }

func newApp(stdio IO) *app {
	now := stdio.Now
	if now == nil {
		now = time.Now
	}
	return &app{io: stdio, opts: defaultOptions(stdio.Environ), now: now}
}

func (a *app) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "inofctl",
		Short: "Administer an iNOF fabric: zoning, devices, sessions, events, lossless profile",
		Long: "inofctl talks to the gRPC API of inofd (the local unix socket by default, or host:port\n" +
			"with TLS and a bearer token). Configuration: YAML file (--config, default\n" +
			"$XDG_CONFIG_HOME/inofctl/config.yaml if it exists), INOF_* environment variables\n" +
			"(INOF_SERVER, INOF_TOKEN_FILE, INOF_OUTPUT, …), flags.\n\n" +
			"Zoning changes show the visibility changes they cause (which hosts gain or lose which\n" +
			"targets) and ask before committing; --yes skips the question. With --stage, edits\n" +
			"collect in a staging file until `inofctl zoning commit`.\n\n" +
			"Exit codes: 0 success, 1 the command failed, 2 usage or configuration error, 3 conflicts\n" +
			"found (audit --conflicts).",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.load(cmd) },
		Version:           buildinfo.Read().String(),
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetIn(a.io.In)
	root.SetOut(a.io.Out)
	root.SetErr(a.io.Err)
	def := a.opts
	f := root.PersistentFlags()
	f.StringVar(&a.configFile, "config", "", "YAML configuration file")
	f.String("server", def.Server, "API address: unix:///path or host:port (TLS + token)")
	f.String("token-file", "", "file holding the bearer token (TCP only)")
	f.String("ca-file", "", "PEM file verifying the server certificate (TCP only)")
	f.String("server-name", "", "name expected in the server certificate")
	f.String("cert-file", "", "TLS client certificate: who you are to the server (TCP only)")
	f.String("key-file", "", "the client certificate's key")
	f.StringP("output", "o", def.Output, "output format: table, wide (more columns), json or yaml")
	f.Bool("no-headers", false, "leave the heading row out of tables")
	f.Duration("timeout", def.Timeout, "timeout of each call")
	f.String("staging-file", def.StagingFile, "where --stage keeps zoning edits")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	ed := editor{a}
	root.AddCommand(zoneCmds{ed}.zoneCommand(), aliasCmds{ed}.aliasCommand(), pinCmds{ed}.pinCommand(),
		zoningCmds{ed}.zoningCommand(), fabricCmds{ed}.fabricCommand(), deviceCmds{a}.deviceCommand(),
		sessionCmds{a}.sessionCommand(), sessionCmds{a}.bfdCommand(), eventCmds{a}.eventsCommand(),
		losslessCmds{a}.losslessCommand(), tokenCmds{a}.tokenCommand(), reflectorCmds{a}.reflectorCommand(),
		versionCmds{a}.versionCommand(), journalCmds{a}.auditCommand(), journalCmds{a}.backupCommand())
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "wide", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return root
}

// load fills a.opts from the file, the environment and the flags.
func (a *app) load(cmd *cobra.Command) error {
	file := a.configFile
	if file == "" {
		if d := defaultConfigFile(a.io.Environ); d != "" {
			if _, err := os.Stat(d); err == nil {
				file = d
			}
		}
	}
	err := config.Load(config.LoadOptions{File: file, Flags: cmd.Flags(), FlagKeys: flagKeys, Environ: a.io.Environ,
		Warn: func(m string) { fmt.Fprintf(a.io.Err, "inofctl: warning: %s\n", m) }}, &a.opts)
	if err != nil {
		return fmt.Errorf("invalid configuration:\n%w", err)
	}
	return nil
}

// client connects (lazily) to the API.
func (a *app) client() (inofv1.FabricClient, error) {
	if a.conn == nil {
		conn, err := apiclient.Dial(apiclient.DialOptions{Server: a.opts.Server, TokenFile: a.opts.TokenFile,
			CAFile: a.opts.CAFile, ServerName: a.opts.ServerName, CertFile: a.opts.CertFile, KeyFile: a.opts.KeyFile})
		if err != nil {
			return nil, err
		}
		a.conn = conn
	}
	return inofv1.NewFabricClient(a.conn), nil
}

func (a *app) close() {
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}

// run wraps a command body: it gets a client and a context bounded by the
// timeout, and its errors count as failures (exit 1), not usage errors.
func (a *app) run(body func(ctx context.Context, c inofv1.FabricClient, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := a.client()
		if err != nil {
			return runError{err}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), a.opts.Timeout)
		defer cancel()
		if err := body(ctx, c, args); err != nil {
			return runError{err}
		}
		return nil
	}
}

// group makes cmd a command of subcommands: alone it prints its help, and
// an unknown subcommand is a usage error.
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return errors.New(msg)
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return cmd
}
