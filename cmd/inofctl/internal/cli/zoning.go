package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	inofv1 "github.com/openinof/inof/inof/api/v1"
)

func (a *app) zoningCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zoning",
		Short: "Review, commit or abort the staged zoning edits",
		Long: "Edits made with --stage collect in the staging file (like an FC zoning transaction).\n" +
			"`diff` shows them and the visibility changes they cause, `commit` applies them at once\n" +
			"if nobody changed the configuration since the first was staged, `abort` drops them.",
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
	cmd.AddCommand(
		&cobra.Command{Use: "diff", Short: "Show the staged edits and the visibility changes they cause", Args: cobra.NoArgs, RunE: a.run(a.zoningDiff)},
		commit,
		&cobra.Command{Use: "abort", Short: "Drop the staged edits (like FC cfgtransabort)", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				if err := a.unstage(); err != nil {
					return runError{err}
				}
				return nil
			}},
		&cobra.Command{Use: "show", Short: "Show the whole committed configuration", Args: cobra.NoArgs, RunE: a.run(a.zoningShow)},
	)
	return group(cmd)
}

func (a *app) zoningDiff(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	st, es, err := a.readStaged()
	if err != nil {
		return err
	}
	if len(es) == 0 {
		fmt.Fprintln(a.io.Out, "nothing staged")
		return nil
	}
	dry, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Edits: es, ExpectedRevision: st.Revision, DryRun: true})
	if err != nil {
		return err
	}
	v, err := plain(dry)
	if err != nil {
		return err
	}
	return a.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "%d staged edit(s) against revision %s:\n", len(es), st.Revision)
		printEdits(w, es)
		printChanges(w, dry.GetChanges())
	})
}

func (a *app) zoningShow(ctx context.Context, c inofv1.FabricClient, _ []string) error {
	z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{})
	if err != nil {
		return err
	}
	v, err := plain(z)
	if err != nil {
		return err
	}
	return a.print(v, func(w io.Writer) {
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
