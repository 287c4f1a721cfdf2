package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	inofv1 "github.com/openinof/inof/app/api/v1"
)

// zoningCmds are the commands of inofctl zoning: the staged edits, the
// diff and show of revisions, and the declarative ones (history.go).
type zoningCmds struct{ editor }

func (a zoningCmds) zoningCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zoning",
		Short: "Whole-configuration zoning: staged edits, export and apply, history, rollback",
		Long: "Edits made with --stage collect in the staging file (like an FC zoning transaction).\n" +
			"`diff` shows them and the visibility changes they cause, `commit` applies them at once\n" +
			"if nobody changed the configuration since the first was staged (else `rebase` moves them\n" +
			"onto the new one), `abort` drops them.\n\n" +
			"`export` writes the whole configuration as YAML and `apply -f` makes the fabric match such\n" +
			"a file; `history` lists the committed revisions (the reflectors keep the last\n" +
			"history_size), `show --revision`, `diff R1 R2` and `rollback R` work on them.",
	}
	var yes bool
	commit := &cobra.Command{Use: "commit", Short: "Commit the staged edits (like FC cfgsave + cfgenable)", Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			st, es, err := a.readStaged()
			if err != nil {
				return err
			}
			if len(es) == 0 {
				return fmt.Errorf("nothing staged")
			}
			if err := a.commit(ctx, c, es, st.Revision, yes); err != nil {
				return err
			}
			return a.unstage()
		})}
	commit.Flags().BoolVarP(&yes, "yes", "y", false, "commit without asking")
	var showRev string
	show := &cobra.Command{Use: "show", Short: "Show the whole committed configuration (or a retained revision's)", Args: cobra.NoArgs,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, _ []string) error {
			return a.zoningShow(ctx, c, showRev)
		})}
	show.Flags().StringVar(&showRev, "revision", "", "show this retained revision (zoning history)")
	_ = show.RegisterFlagCompletionFunc("revision", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return a.completeRevisions(cmd, nil, "")
	})
	var diffFile string
	diff := &cobra.Command{Use: "diff [REVISION [REVISION] | -f FILE]", Short: "Show the staged edits and the visibility changes they cause, or what changed between revisions",
		Long: "Without arguments: the staged edits and the visibility changes they cause. With one\n" +
			"revision: what changed from it to the configuration in effect; with two: from the first\n" +
			"to the second. With -f FILE: what `zoning apply -f FILE` would change (member and\n" +
			"access diff), and what changed in the fabric since FILE was exported.",
		Args: cobra.MaximumNArgs(2), ValidArgsFunction: a.completeRevisions,
		RunE: a.run(func(ctx context.Context, c inofv1.FabricClient, args []string) error {
			if diffFile != "" {
				if len(args) > 0 {
					return errors.New("-f FILE compares a file with the configuration in effect: give no REVISION")
				}
				return a.applyFile(ctx, c, fileApply{path: diffFile, compare: true})
			}
			switch len(args) {
			case 0:
				return a.zoningDiff(ctx, c, args)
			case 1:
				return a.zoningRevisionDiff(ctx, c, args[0], "")
			}
			return a.zoningRevisionDiff(ctx, c, args[0], args[1])
		})}
	diff.Flags().StringVarP(&diffFile, "file", "f", "", "compare this zoning file (\"-\": standard input) with the configuration in effect")
	cmd.AddCommand(
		diff,
		commit,
		&cobra.Command{Use: "abort", Short: "Drop the staged edits (like FC cfgtransabort)", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				if err := a.unstage(); err != nil {
					return runError{err}
				}
				return nil
			}},
		show,
	)
	cmd.AddCommand(a.zoningDeclarativeCommands()...)
	return group(cmd)
}

func (a zoningCmds) zoningDiff(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	st, es, err := a.readStaged()
	if err != nil {
		return err
	}
	if len(es) == 0 {
		fmt.Fprintln(a.io.Out, "nothing staged")
		return nil
	}
	dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: st.Revision, DryRun: true})
	if status.Code(err) == codes.Aborted {
		fmt.Fprintf(a.io.Out, "%d staged edit(s) against revision %s:\n", len(es), st.Revision)
		printEdits(a.io.Out, es)
		cur, cerr := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
		now := "a newer one"
		if cerr == nil {
			now = cur.GetRevision()
		}
		return fmt.Errorf("someone committed since these edits were staged (revision %s, now %s): "+
			"`inofctl zoning rebase` moves them onto the configuration in effect (then diff again), `zoning abort` drops them",
			st.Revision, now)
	}
	if err != nil {
		return err
	}
	v, err := plain(dry)
	if err != nil {
		return err
	}
	return a.printRev("ZoningChange", dry.GetRevision(), v, func(w io.Writer) {
		fmt.Fprintf(w, "%d staged edit(s) against revision %s:\n", len(es), st.Revision)
		printEdits(w, es)
		printChanges(w, dry.GetChanges())
	})
}

func (a zoningCmds) zoningShow(ctx context.Context, c inofv1.FabricClient, rev string) error {
	z, err := a.zoningAt(ctx, c, rev)
	if err != nil {
		return err
	}
	v, err := plain(z)
	if err != nil {
		return err
	}
	return a.printRev("Zoning", z.GetRevision(), v, func(w io.Writer) {
		fmt.Fprintf(w, "revision %s, default-zone %s, hard-zoning %s\n", z.GetRevision(),
			onOff(z.GetSettings().GetDefaultZoneEnabled()), onOff(z.GetSettings().GetHardZoning()))
		for _, x := range z.GetZones() {
			fmt.Fprintf(w, "zone %s: %v\n", x.GetName(), x.GetMembers())
		}
		for _, x := range z.GetAliases() {
			fmt.Fprintf(w, "alias %s: %v\n", x.GetName(), x.GetMembers())
		}
	})
}
